"""MemoryStack: composes the constructs into the deployable service. Wiring only, no logic."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from aws_cdk import (
    Acknowledgment,
    ArnFormat,
    CfnOutput,
    Duration,
    RemovalPolicy,
    Stack,
    Tags,
    TimeZone,
    Validations,
)
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as scheduler_targets
from constructs import Construct

from ..bundling import dependencies_layer_code, function_code
from ..config import (
    FILE_FUNCTION_PROFILES,
    INFERENCE_PROFILE_PREFIXES,
    INTERFACE_ENDPOINT_AZS,
    DeploymentConfig,
)
from ..constructs import (
    MEMORY_MOUNT_PATH,
    AccessLogs,
    ContentGuardrail,
    CuratorWorkflow,
    DreamingWorkflow,
    MemoryApi,
    MemoryFiles,
    MemoryTables,
    Network,
    Observability,
    ServiceFunction,
    TenantVectors,
)
from ..constructs.migration_workflow import ARCHIVE_OBJECT_ACTIONS, MigrationWorkflow
from ..constructs.network import DYNAMODB
from ..constructs.purge_workflow import PurgeWorkflow
from ..constructs.tenant_vectors import INDEX_ACTIONS, INDEX_PREFIX, ITEM_ACTIONS, VECTOR_ACTIONS

API_HANDLER = "agent_memory.handlers.api.handler"
AUTHORIZER_HANDLER = "agent_memory.handlers.authorizer.handler"
DECAY_JOB_HANDLER = "agent_memory.handlers.jobs.archive_decayed_handler"
CHAT_HANDLER = "agent_memory.handlers.chat.handler"
FILES_HANDLER = "agent_memory.handlers.files.handler"
CONSOLE_HANDLER = "agent_memory.handlers.console.handler"


_IDEMPOTENCY_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
"""Powertools idempotency records (the API and chat functions, with their own roles)."""

_IDEMPOTENCY_PURGE_ACTIONS = ("dynamodb:Scan", "dynamodb:DeleteItem")
"""A purge's idempotency step (domain/erasure): find stored responses that name purged content, delete them."""

_KEY_USE_ACTIONS = ("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey")


class MemoryStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeploymentConfig,
        project_root: Path,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.config = config
        retain = config.retain_data
        Tags.of(self).add("service", "agent-memory")

        # One customer-managed key for every data store (memory files, tables, vectors, alarm topic), so
        # the tenant role needs exactly one key grant.
        self.key = kms.Key(
            self,
            "DataKey",
            description="Agent memory service data key",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY,
        )

        self.access_logs = AccessLogs(
            self, "AccessLogs", retention_days=config.retention.access_log_days, retain=retain
        )
        network_config = config.network
        # `lean`: the file function is the only function in the VPC and calls no AWS API, so the VPC gets no
        # endpoint at all (interface endpoints are what a deployment at rest pays for).
        self.uses_file_function = config.profile in FILE_FUNCTION_PROFILES
        if self.uses_file_function:
            network_config = network_config.model_copy(update={"interface_endpoints": ()})
        elif "states" not in network_config.interface_endpoints:
            # The API function starts the migration backfill (and on-demand dreaming): it needs a route to Step
            # Functions from the VPC.
            network_config = network_config.model_copy(
                update={"interface_endpoints": (*network_config.interface_endpoints, "states")}
            )
        self.network = Network(
            self,
            "Network",
            config=network_config,
            flow_logs_bucket=self.access_logs.bucket,
            endpoint_azs=INTERFACE_ENDPOINT_AZS[config.profile],
            dynamodb_endpoint=not self.uses_file_function,
            # the migration function archives old vectors to S3 objects: with every function in the VPC it
            # needs S3's (free) gateway endpoint
            s3_endpoint=not self.uses_file_function,
        )
        self.tables = MemoryTables(
            self,
            "Tables",
            key=self.key,
            retain=retain,
            recovery_days=config.retention.point_in_time_recovery_days,
        )
        self.memory_files = MemoryFiles(
            self,
            "MemoryFiles",
            vpc=self.network.vpc,
            subnets=self.network.subnets,
            key=self.key,
            access_logs_bucket=self.access_logs.bucket,
            config=config.memory_files,
            noncurrent_version_days=config.retention.noncurrent_file_version_days,
            retain=retain,
        )

        code = function_code(project_root / "functions")
        self.layer = lambda_.LayerVersion(
            self,
            "DependenciesLayer",
            description="Third-party dependencies of the agent memory functions (layers/requirements.txt)",
            code=dependencies_layer_code(project_root / "layers"),
            compatible_runtimes=[lambda_.Runtime.PYTHON_3_14],
            compatible_architectures=[lambda_.Architecture.ARM_64],
        )

        common_environment = {
            "AGENT_MEMORY_RUNTIME": "aws",
            "AGENT_MEMORY_TABLE": self.tables.memory.table_name,
            "AGENT_MEMORY_IDEMPOTENCY_TABLE": self.tables.idempotency.table_name,
            "AGENT_MEMORY_API_KEYS_TABLE": self.tables.api_keys.table_name,
            "AGENT_MEMORY_EMBEDDING_MODEL": config.embedding.model_id,
            "AGENT_MEMORY_EMBEDDING_DIMENSIONS": str(config.embedding.dimensions),
            # The STS interface endpoint serves the regional name only; the global one has no route here.
            "AWS_STS_REGIONAL_ENDPOINTS": "regional",
        }
        in_vpc: dict[str, Any] = {"vpc": self.network.vpc, "subnets": self.network.function_subnets}
        # Functions that mount S3 Files must be in the VPC (NFS to the mount targets). With `isolated` every
        # function runs in it and API, chat and dreaming mount the files themselves. With `lean` only the file
        # function does; the others reach AWS over Lambda's own network (no interface endpoint to pay for)
        # and the memory files by invoking the file function.
        outside_vpc: dict[str, Any] = {"vpc": None, "subnets": None}
        unmounted_network = in_vpc if config.profile == "isolated" else outside_vpc
        function_options: dict[str, Any] = {
            "code": code,
            "layer": self.layer,
            "log_retention_days": config.retention.log_days,
            "retain_logs": retain,
        }
        self.file_function: ServiceFunction | None = None
        if self.uses_file_function:
            self.file_function = ServiceFunction(
                self,
                "FileFunction",
                handler=FILES_HANDLER,
                description="Memory files on the S3 Files mount for the functions outside the VPC (no AWS calls)",
                sizing=config.functions.files,
                # Nothing else: it reads no table, no bucket, no key; only the mount.
                environment={"AGENT_MEMORY_FILES_ROOT": MEMORY_MOUNT_PATH},
                filesystem=self.memory_files.mount_for("files"),
                **in_vpc,
                **function_options,
            )
        file_function = self.file_function

        def memory_files_for(function_id: str) -> dict[str, Any]:
            """How a function that works on memory files reaches them: the file function (`lean`, outside the
            VPC) or its own mount (`isolated`, in the VPC)."""
            if file_function is not None:
                return {
                    "environment": {"AGENT_MEMORY_FILE_FUNCTION": file_function.function.function_name},
                    "network": outside_vpc,
                    "filesystem": None,
                }
            return {
                "environment": {"AGENT_MEMORY_FILES_ROOT": MEMORY_MOUNT_PATH},
                "network": in_vpc,
                "filesystem": self.memory_files.mount_for(function_id),
            }

        api_files = memory_files_for("api")
        self.api_function = ServiceFunction(
            self,
            "ApiFunction",
            handler=API_HANDLER,
            description="Agent memory REST API (remember, recall, memory files)",
            sizing=config.functions.api,
            environment={**common_environment, **api_files["environment"]},
            filesystem=api_files["filesystem"],
            **api_files["network"],
            **function_options,
        )
        self.authorizer_function = ServiceFunction(
            self,
            "AuthorizerFunction",
            handler=AUTHORIZER_HANDLER,
            description="Bearer API key authorizer of the memory API",
            sizing=config.functions.authorizer,
            environment=common_environment,
            **unmounted_network,
            **function_options,
        )
        # The review console's static page (the API's only unauthenticated methods): its own small function
        # with no environment and no grant, so an unauthenticated request never runs the 1 GB API function.
        self.console_function = ServiceFunction(
            self,
            "ConsoleFunction",
            handler=CONSOLE_HANDLER,
            description="Review console static page and assets (no data, no AWS calls)",
            sizing=config.functions.console,
            environment={},
            **unmounted_network,
            **function_options,
        )
        self.decay_job_function = ServiceFunction(
            self,
            "DecayJobFunction",
            handler=DECAY_JOB_HANDLER,
            description="Scheduled forgetting job: archives records whose strength decayed",
            sizing=config.functions.decay_job,
            # No memory-file mount: archiving decayed records touches the table and the vector index only.
            environment={
                **common_environment,
                # Fallback tenant list of the job when invoked by hand without "tenants" in the event.
                "AGENT_MEMORY_TENANTS": ",".join(config.tenant_ids),
            },
            asynchronous=True,
            dead_letter_retention_days=config.retention.dead_letter_days,
            **unmounted_network,
            **function_options,
        )

        self.chat_function: ServiceFunction | None = None
        if config.chat_model_ids:
            chat_files = memory_files_for("chat")
            self.chat_function = ServiceFunction(
                self,
                "ChatFunction",
                handler=CHAT_HANDLER,
                description="Sessions with a frozen memory snapshot and prompt-caching chat (Bedrock Converse)",
                sizing=config.functions.chat,
                environment={
                    **common_environment,
                    **chat_files["environment"],
                    "AGENT_MEMORY_CHAT_PROVIDER": "bedrock",
                    "AGENT_MEMORY_CHAT": json.dumps({"model_id": config.chat_model_ids[0]}),
                },
                filesystem=chat_files["filesystem"],
                **chat_files["network"],
                **function_options,
            )

        # Created before the rest of the jobs: its function is one of the tenant role's trusted roles.
        # Not retained: the group holds nothing but this stack's schedules, which CloudFormation deletes with
        # the stack anyway, and a retained group would keep its fixed name, so the next deploy after
        # `cdk destroy` would fail to create it (CDK's default for a ScheduleGroup is RETAIN).
        self.schedule_group = scheduler.ScheduleGroup(
            self,
            "JobSchedules",
            schedule_group_name=f"{self.stack_name}-jobs",
            removal_policy=RemovalPolicy.DESTROY,
        )
        dreaming_files = memory_files_for("dreaming")
        self.dreaming = DreamingWorkflow(
            self,
            "DreamingWorkflow",
            config=config.schedules.dreaming,
            tenants=config.tenants,
            schedule_group=self.schedule_group,
            sizing=config.functions.dreaming,
            environment={
                **common_environment,
                **dreaming_files["environment"],
                **(
                    {"AGENT_MEMORY_DREAMING_MODEL_ID": config.schedules.dreaming.model_id}
                    if config.schedules.dreaming.model_id
                    else {}
                ),
                # The dreaming function also runs the skills curator (handlers/curator.py).
                **(
                    {"AGENT_MEMORY_CURATOR_MODEL_ID": config.schedules.curator.model_id}
                    if config.schedules.curator.model_id
                    else {}
                ),
            },
            filesystem=dreaming_files["filesystem"],
            dead_letter_retention_days=config.retention.dead_letter_days,
            **dreaming_files["network"],
            **function_options,
        )
        self.dreaming_function = self.dreaming.function
        # The LLM extraction strategies of the Light phase call this model (Converse).
        self._grant_optional_model(
            self.dreaming_function, config.schedules.dreaming.model_id, sid="DreamingExtraction"
        )
        # The weekly skills curator: its own state machine and schedules, tasks on the dreaming function.
        self.curator = CuratorWorkflow(
            self,
            "CuratorWorkflow",
            config=config.schedules.curator,
            tenants=config.tenants,
            schedule_group=self.schedule_group,
            function=self.dreaming_function.function,
            task_timeout_seconds=config.functions.dreaming.timeout_seconds,
            log_retention_days=config.retention.log_days,
            dead_letter_retention_days=config.retention.dead_letter_days,
            retain_logs=function_options["retain_logs"],
        )
        # Large purges (domain/erasure): their own state machine, tasks on the dreaming function.
        self.purge = PurgeWorkflow(
            self,
            "PurgeWorkflow",
            function=self.dreaming_function.function,
            task_timeout_seconds=config.functions.dreaming.timeout_seconds,
            log_retention_days=config.retention.log_days,
            retain_logs=function_options["retain_logs"],
        )
        # The curator's optional LLM review (merge and improvement proposals) calls this model (Converse).
        self._grant_optional_model(
            self.dreaming_function, config.schedules.curator.model_id, sid="CuratorReview"
        )

        # The embedding migration's backfill (issue 12): its function works on tenant data like the others.
        self.migration = MigrationWorkflow(
            self,
            "MigrationWorkflow",
            key=self.key,
            access_logs_bucket=self.access_logs.bucket,
            sizing=config.functions.dreaming,
            environment=common_environment,
            retain=retain,
            **unmounted_network,
            **function_options,
        )
        tenant_functions = [self.api_function, self.decay_job_function, self.dreaming_function]
        tenant_functions.append(self.migration.function)
        if self.chat_function is not None:
            tenant_functions.append(self.chat_function)
        self.tenant_functions = tuple(tenant_functions)
        """The functions the tenant role trusts: each works on tenant records and vectors."""
        if self.file_function is not None:
            # Exactly the functions that work on memory files may invoke the file function, and only its
            # unqualified ARN (the callers invoke it by name, i.e. $LATEST): no version or alias wildcard.
            for caller in (self.api_function, self.chat_function, self.dreaming_function):
                if caller is not None:
                    self.file_function.function.grant_invoke_latest_version(caller.role)

        self.vectors = TenantVectors(
            self,
            "Vectors",
            key=self.key,
            memory_table=self.tables.memory,
            embedding=config.embedding,
            tenants=config.tenants,
            trusted_roles=[f.role for f in tenant_functions],
            retain=retain,
        )
        for service_function in (self.authorizer_function, *tenant_functions):
            service_function.add_environment("AGENT_MEMORY_VECTOR_BUCKET", self.vectors.vector_bucket_name)
            service_function.add_environment(
                "AGENT_MEMORY_TENANT_ROLE_ARN", self.vectors.tenant_access_role.role_arn
            )

        # Least privilege per function, beyond the tenant role: the API function keeps idempotency
        # records; the authorizer reads API keys by hash (GetItem only).
        self.tables.idempotency.grant(self.api_function.role, *_IDEMPOTENCY_ACTIONS)
        # A purge (domain/erasure) scans the idempotency records for stored responses that name purged
        # content (the table is keyed by a hash, not by tenant) and deletes them: inline in the API function,
        # or in the dreaming function's steps of the purge workflow, which the API function starts.
        self.tables.idempotency.grant(self.api_function.role, "dynamodb:Scan")
        self.tables.idempotency.grant(self.dreaming_function.role, *_IDEMPOTENCY_PURGE_ACTIONS)
        self.purge.state_machine.grant_start_execution(self.api_function.role)
        self.api_function.add_environment(
            "AGENT_MEMORY_PURGE_STATE_MACHINE_ARN", self.purge.state_machine.state_machine_arn
        )
        # What a purge cannot erase at once (backups, file versions, logs): every purge plan lists it.
        retention = json.dumps(
            {
                "point_in_time_recovery_days": config.retention.point_in_time_recovery_days,
                "noncurrent_file_version_days": config.retention.noncurrent_file_version_days,
                "log_days": config.retention.log_days,
                "access_log_days": config.retention.access_log_days,
            }
        )
        for purging in (self.api_function, self.dreaming_function):
            purging.add_environment("AGENT_MEMORY_ERASURE_RETENTION", retention)
        self._grant_key_use(self.api_function.role)
        self._grant_key_use(self.dreaming_function.role)
        # Embeddings are computed with each function's own role (they are not tenant data).
        embedding_model = self._foundation_model_arn(config.embedding.model_id, self.region)
        for service_function in tenant_functions:
            service_function.role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="EmbeddingModel", actions=["bedrock:InvokeModel"], resources=[embedding_model]
                )
            )
        self.network.allow(
            "bedrock-runtime",
            sid="EmbeddingModel",
            roles=self._vpc_roles(*tenant_functions),
            actions=["bedrock:InvokeModel"],
            resources=[embedding_model],
        )
        if self.chat_function is not None:
            self._grant_chat_models(self.chat_function, config.chat_model_ids)
            self.tables.idempotency.grant(self.chat_function.role, *_IDEMPOTENCY_ACTIONS)
            self._grant_key_use(self.chat_function.role)
        if config.write_judge.model_id:
            # The optional LLM write judge runs in the API function's remembers (Converse on this model only).
            self.api_function.add_environment(
                "AGENT_MEMORY_WRITE_JUDGE_MODEL_ID", config.write_judge.model_id
            )
            self.api_function.add_environment(
                "AGENT_MEMORY_POLICY", json.dumps({"write_judge_tenants": list(config.write_judge.tenants)})
            )
            self._grant_chat_models(
                self.api_function, (config.write_judge.model_id,), sid="WriteJudge", count_tokens=False
            )
        self.guardrail: ContentGuardrail | None = None
        if config.guardrail.enabled:
            # The functions that write memory files (API, chat tools, dreaming promotions); the decay job only
            # archives records.
            writers = [
                f for f in (self.api_function, self.chat_function, self.dreaming_function) if f is not None
            ]
            self._content_guardrail(writers)
        self.tables.api_keys.grant(self.authorizer_function.role, "dynamodb:GetItem")
        self.key.grant(self.authorizer_function.role, "kms:Decrypt", "kms:DescribeKey")

        if config.schedules.dreaming.on_demand:
            self.dreaming.state_machine.grant_start_execution(self.api_function.role)
            self.api_function.add_environment(
                "AGENT_MEMORY_DREAMING_STATE_MACHINE_ARN", self.dreaming.state_machine.state_machine_arn
            )
        if config.api.iam_principals:
            self.api_function.add_environment(
                "AGENT_MEMORY_IAM_PRINCIPALS",
                json.dumps(
                    {
                        p.principal_arn: {
                            "tenant": p.tenant,
                            "namespaces": list(p.namespaces),
                            "scopes": list(p.scopes),
                        }
                        for p in config.api.iam_principals
                    }
                ),
            )

        self.api = MemoryApi(
            self,
            "Api",
            api_function=self.api_function.function,
            chat_function=self.chat_function.function if self.chat_function else None,
            console_function=self.console_function.function,
            authorizer_function=self.authorizer_function.function,
            config=config.api,
            access_log_retention_days=config.retention.access_log_days,
            retain_logs=retain,
        )

        decay = config.schedules.decay
        decay_dead_letters = self.decay_job_function.dead_letter_queue
        if decay_dead_letters is None:  # asynchronous=True above always creates it
            raise RuntimeError("the decay job function has no dead-letter queue")
        # Our own role (rather than the shared one CDK would create) so its grant can be reviewed here.
        self.scheduler_role = iam.Role(
            self,
            "SchedulerRole",
            description="EventBridge Scheduler: invoke the scheduled job functions",
            assumed_by=iam.ServicePrincipal("scheduler.amazonaws.com").with_conditions(
                {"StringEquals": {"aws:SourceAccount": self.account}}
            ),
        )
        self.decay_schedule = scheduler.Schedule(
            self,
            "DecaySchedule",
            description="Runs the forgetting job",
            schedule_group=self.schedule_group,
            schedule=scheduler.ScheduleExpression.expression(decay.expression, TimeZone.of(decay.time_zone)),
            enabled=decay.enabled,
            target=scheduler_targets.LambdaInvoke(
                self.decay_job_function.function,
                # The job works on the tenants named in its input (handlers/jobs.py): the configured ones.
                input=scheduler.ScheduleTargetInput.from_object(
                    {"job": "archive_decayed", "tenants": list(config.tenant_ids)}
                ),
                dead_letter_queue=decay_dead_letters,
                retry_attempts=3,
                max_event_age=Duration.hours(2),
                role=self.scheduler_role,
            ),
        )
        # The group is referenced by name (a literal), so CloudFormation needs the ordering spelled out.
        self.decay_schedule.node.add_dependency(self.schedule_group)
        decay_fn_logical_id = self.get_logical_id(
            cast(lambda_.CfnFunction, self.decay_job_function.function.node.default_child)
        )
        Validations.of(self.scheduler_role).acknowledge(
            Acknowledgment(
                id=f"AwsSolutions-IAM5[Resource::<{decay_fn_logical_id}.Arn>:*]",
                reason="Invoke versions/aliases of the decay job function only (CDK's standard grant).",
            )
        )

        self.observability = Observability(
            self,
            "Observability",
            key=self.key,
            config=config.alarms,
            api=self.api,
            functions={
                "Api": self.api_function,
                "Authorizer": self.authorizer_function,
                "Console": self.console_function,
                "DecayJob": self.decay_job_function,
                "Dreaming": self.dreaming_function,
                **({"Chat": self.chat_function} if self.chat_function else {}),
                **({"Files": self.file_function} if self.file_function else {}),
            },
            dead_letter_queues=[
                decay_dead_letters,
                self.dreaming.dead_letter_queue,
                self.curator.dead_letter_queue,
            ],
            dreaming_state_machine=self.dreaming.state_machine,
            curator_state_machine=self.curator.state_machine,
        )

        self._migration_wiring()
        self._endpoint_policies(tenant_functions)
        self._outputs()

    def _migration_wiring(self) -> None:
        """The embedding migration: the tenant role's grants for a second index and the archive, the API
        function's start of the backfill, the alarms' action, and the endpoints a VPC deployment needs."""
        migration, tenant_role = self.migration, self.vectors.tenant_access_role
        migration.grant_tenant(tenant_role, self.vectors.vector_bucket)
        migration.state_machine.grant_start_execution(self.api_function.role)
        self.api_function.add_environment(
            "AGENT_MEMORY_MIGRATION_STATE_MACHINE_ARN", migration.state_machine.state_machine_arn
        )
        # Every function that may assume the tenant role writes records and vectors: the API (remember), chat
        # (the `remember` tool), the decay job (status changes re-put vectors), dreaming (promotions, merges,
        # purge steps) and the backfill itself. With the archive bucket set, their wiring routes vectors through
        # the tenant's migration (both indexes during one, never an archived index) and the purge rewrites the
        # tenant's archive parts (with the tenant role: OwnTenantArchive*). A writer without it would write
        # only to `mem-<tenant>`, recreating an index the migration archived.
        for function in self.tenant_functions:
            function.add_environment(
                "AGENT_MEMORY_MIGRATION_ARCHIVE_BUCKET", migration.archive_bucket.bucket_name
            )
        for alarm in migration.alarms:
            alarm.add_alarm_action(cloudwatch_actions.SnsAction(self.observability.topic))
        self.purge.alarm.add_alarm_action(cloudwatch_actions.SnsAction(self.observability.topic))
        self.network.allow(
            "s3vectors",
            sid="TenantIndexRetirement",
            roles=[tenant_role],
            actions=["s3vectors:DeleteIndex"],
            resources=[f"{self.vectors.vector_bucket_arn}/index/{INDEX_PREFIX}*"],
        )
        self.network.allow(
            "s3",
            sid="TenantMigrationArchive",
            roles=[tenant_role],
            actions=ARCHIVE_OBJECT_ACTIONS,
            resources=[migration.archive_bucket.arn_for_objects("*")],
        )
        self.network.allow(
            "s3",
            sid="TenantMigrationArchiveListing",
            roles=[tenant_role],
            actions=["s3:ListBucket"],
            resources=[migration.archive_bucket.bucket_arn],
        )
        self.network.allow(
            "states",
            sid="StartBackfill",
            roles=self._vpc_roles(self.api_function),
            actions=["states:StartExecution"],
            resources=[migration.state_machine.state_machine_arn],
        )

    def _endpoint_policies(self, tenant_functions: list[ServiceFunction]) -> None:
        """What each VPC endpoint lets through: exactly the calls the functions make, by the role that makes
        them (the IAM grants above; Bedrock's are declared next to them in `_grant_chat_models`)."""
        network, tables, tenant_role = self.network, self.tables, self.vectors.tenant_access_role
        network.allow(
            DYNAMODB,
            sid="TenantItems",
            roles=[tenant_role],
            actions=ITEM_ACTIONS,
            resources=[tables.memory.table_arn, f"{tables.memory.table_arn}/index/*"],
        )
        network.allow(
            DYNAMODB,
            sid="IdempotencyRecords",
            roles=self._vpc_roles(self.api_function, self.chat_function),
            actions=_IDEMPOTENCY_ACTIONS,
            resources=[tables.idempotency.table_arn],
        )
        network.allow(
            DYNAMODB,
            sid="IdempotencyPurge",
            roles=self._vpc_roles(self.api_function, self.dreaming_function),
            actions=list(_IDEMPOTENCY_PURGE_ACTIONS),
            resources=[tables.idempotency.table_arn],
        )
        network.allow(
            DYNAMODB,
            sid="ApiKeyLookup",
            roles=self._vpc_roles(self.authorizer_function),
            actions=["dynamodb:GetItem"],
            resources=[tables.api_keys.table_arn],
        )
        network.allow(
            "s3vectors",
            sid="TenantIndexes",
            roles=[tenant_role],
            actions=[*VECTOR_ACTIONS, *INDEX_ACTIONS],
            resources=[f"{self.vectors.vector_bucket_arn}/index/{INDEX_PREFIX}*"],
        )
        network.allow(
            "sts",
            sid="TenantCredentials",
            roles=self._vpc_roles(*tenant_functions),
            actions=["sts:AssumeRole", "sts:TagSession"],
            resources=[tenant_role.role_arn],
        )
        network.allow(
            "states",
            sid="StartPurge",
            roles=self._vpc_roles(self.api_function),
            actions=["states:StartExecution"],
            resources=[self.purge.state_machine.state_machine_arn],
        )
        if self.config.schedules.dreaming.on_demand:
            network.allow(
                "states",
                sid="StartDreaming",
                roles=self._vpc_roles(self.api_function),
                actions=["states:StartExecution"],
                resources=[self.dreaming.state_machine.state_machine_arn],
            )
        network.check_policies()

    def _content_guardrail(self, writers: list[ServiceFunction]) -> None:
        """The opt-in Bedrock guardrail on memory-file writes: bedrock:ApplyGuardrail on this guardrail only,
        for the functions that write memory files only, in IAM and in the bedrock-runtime endpoint policy."""
        guardrail = ContentGuardrail(
            self, "ContentGuardrail", name=f"{self.stack_name}-memory-writes", config=self.config.guardrail
        )
        for writer in writers:
            writer.add_environment("AGENT_MEMORY_GUARDRAIL_ID", guardrail.guardrail_id)
            writer.add_environment("AGENT_MEMORY_GUARDRAIL_VERSION", guardrail.version_number)
            writer.role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="ContentGuardrail",
                    actions=["bedrock:ApplyGuardrail"],
                    resources=[guardrail.guardrail_arn],
                )
            )
        self.network.allow(
            "bedrock-runtime",
            sid="ContentGuardrail",
            roles=self._vpc_roles(*writers),
            actions=["bedrock:ApplyGuardrail"],
            resources=[guardrail.guardrail_arn],
        )
        self.guardrail = guardrail

    def _foundation_model_arn(self, model_id: str, region: str) -> str:
        return self.format_arn(
            service="bedrock",
            region=region,
            account="",
            resource="foundation-model",
            resource_name=model_id,
            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
        )

    def _vpc_roles(self, *functions: ServiceFunction | None) -> list[iam.IRole]:
        """The roles of those `functions` that run in the VPC: only their calls go through its endpoints (the
        others reach AWS over Lambda's own network, where no endpoint policy applies)."""
        return [f.role for f in functions if f is not None and f.function.is_bound_to_vpc]

    def _grant_optional_model(self, function: ServiceFunction, model_id: str | None, *, sid: str) -> None:
        """Converse on one optional model (no token counting); nothing when the model is not configured."""
        if model_id:
            self._grant_chat_models(function, (model_id,), sid=sid, count_tokens=False)

    def _grant_chat_models(
        self,
        function: ServiceFunction,
        model_ids: tuple[str, ...],
        *,
        sid: str = "Chat",
        count_tokens: bool = True,
    ) -> None:
        """Converse (bedrock:InvokeModel) on the configured models only. A cross-region inference profile
        (`us.`, `eu.`, `apac.`, `global.` prefix) is granted with the foundation model it routes to in every
        region the profile may pick; CountTokens (the token monitor) takes the foundation model."""
        role = function.role
        profiles, foundation = [], []
        for model_id in model_ids:
            prefix, _, rest = model_id.partition(".")
            if prefix in INFERENCE_PROFILE_PREFIXES:
                profiles.append(
                    self.format_arn(
                        service="bedrock",
                        resource="inference-profile",
                        resource_name=model_id,
                        arn_format=ArnFormat.SLASH_RESOURCE_NAME,
                    )
                )
                foundation.append(self._foundation_model_arn(rest, "*"))
            else:
                foundation.append(self._foundation_model_arn(model_id, self.region))
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid=f"{sid}Models", actions=["bedrock:InvokeModel"], resources=[*profiles, *foundation]
            )
        )
        self.network.allow(
            "bedrock-runtime",
            sid=f"{sid}Models",
            roles=self._vpc_roles(function),
            actions=["bedrock:InvokeModel"],
            resources=[*profiles, *foundation],
        )
        if count_tokens:
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid=f"{sid}TokenCounting", actions=["bedrock:CountTokens"], resources=foundation
                )
            )
            self.network.allow(
                "bedrock-runtime",
                sid=f"{sid}TokenCounting",
                roles=self._vpc_roles(function),
                actions=["bedrock:CountTokens"],
                resources=foundation,
            )
        for model_id in model_ids:
            prefix, _, foundation_id = model_id.partition(".")
            if prefix in INFERENCE_PROFILE_PREFIXES:
                resource = f"arn:<AWS::Partition>:bedrock:*::foundation-model/{foundation_id}"
                Validations.of(role).acknowledge(
                    Acknowledgment(
                        id=f"AwsSolutions-IAM5[Resource::{resource}]",
                        reason="A cross-region inference profile routes to this one foundation model in any "
                        "region of its geography; only the region is a wildcard, never the model.",
                    )
                )

    def _grant_key_use(self, role: iam.IRole) -> None:
        self.key.grant(role, *_KEY_USE_ACTIONS)

    def _outputs(self) -> None:
        outputs = {
            "ApiUrl": (self.api.url, "Base URL of the memory API (append v1/...)"),
            "UsagePlanId": (self.api.usage_plan.usage_plan_id, "Usage plan that per-tenant usage keys join"),
            "VectorBucketName": (self.vectors.vector_bucket_name, "S3 Vectors bucket (one index per tenant)"),
            "MemoryTableName": (self.tables.memory.table_name, "DynamoDB table of memory records"),
            "ApiKeysTableName": (self.tables.api_keys.table_name, "DynamoDB table of API key hashes"),
            "TenantRoleArn": (self.vectors.tenant_access_role.role_arn, "Session-tag scoped tenant role"),
            "MemoryBucketName": (self.memory_files.bucket.bucket_name, "Bucket behind the memory files"),
            "FileSystemId": (self.memory_files.file_system.attr_file_system_id, "S3 Files file system"),
            "DashboardName": (self.observability.dashboard.dashboard_name, "CloudWatch dashboard"),
            "AlarmTopicArn": (self.observability.topic.topic_arn, "Subscribe on-call to this SNS topic"),
            "DreamingStateMachineArn": (
                self.dreaming.state_machine.state_machine_arn,
                "Dreaming sweep state machine (started nightly per tenant)",
            ),
            "CuratorStateMachineArn": (
                self.curator.state_machine.state_machine_arn,
                "Skills curator state machine (started weekly per tenant)",
            ),
            "MigrationArchiveBucketName": (
                self.migration.archive_bucket.bucket_name,
                "Embedding-migration archives (<tenant>/<migration>/); offboarding deletes the tenant's prefix",
            ),
        }
        for name, (value, description) in outputs.items():
            CfnOutput(self, name, value=value, description=description)
