"""MemoryStack: the service as one diagram. Every construct owns its resources and the grants on them (each
grant in IAM and, for a function in the VPC, in the endpoint policy it goes through); the stack only says
which function may do what."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from aws_cdk import Stack, Tags
from constructs import Construct

from ..config import DeploymentConfig
from ..constructs import (
    AccessLogs,
    BedrockModels,
    ContentGuardrail,
    DeclaredBuckets,
    DeclaredQueues,
    FunctionSet,
    JobWorker,
    MemoryApi,
    MemoryFiles,
    MemoryTables,
    MigrationWorkflow,
    Network,
    Observability,
    ServiceFunction,
    TenantVectors,
    Workflow,
    data_key,
    decay_job_schedule,
    declared_workflows,
    dreaming_function,
    job_schedule_group,
)
from .outputs import add_outputs


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
        Tags.of(self).add("service", "agent-memory")

        # Storage, all under one customer-managed key, and the network the profile asks for.
        self.key = key = data_key(self, retain=config.retain_data)
        logs = AccessLogs.for_deployment(self, "AccessLogs", config).bucket
        self.network = net = Network.for_deployment(self, "Network", config, flow_logs_bucket=logs)
        self.tables = MemoryTables.for_deployment(self, "Tables", config, key=key, network=net)
        self.buckets = DeclaredBuckets.for_deployment(self, "Buckets", config, key, logs, net)
        self.queues = DeclaredQueues(self, "Queues", key=key, network=net)
        self.memory_files = MemoryFiles.for_deployment(
            self, "MemoryFiles", config, network=net, key=key, logs=logs
        )
        self.models = BedrockModels(self, net, embedding_model_id=config.embedding.model_id)

        # Functions: one code asset and layer; in the VPC or on Lambda's own network, per profile.
        functions = FunctionSet(self, config, project_root, net, self.memory_files, self.tables)
        self.file_function = functions.file_function  # profile lean: the only function that mounts the files
        self.api_function = api = functions.api()
        self.authorizer_function = authorizer = functions.authorizer()
        self.console_function = console = functions.console()
        self.decay_job_function = decay_job = functions.decay_job()
        self.chat_function = chat = functions.chat()
        self.jobs = jobs = JobWorker.for_deployment(  # imports and large batches: 202, run there
            self, "Jobs", config, functions=functions, key=key, logs=logs, models=self.models
        )

        # Workflows (agent_memory.settings.workflows; infra/workflows/<name>_asl.py): dreaming, curator and purge run
        # their tasks on the dreaming function, built inside the dreaming workflow; the backfill on its own.
        self.schedule_group = group = job_schedule_group(self)
        self.workflows = declared_workflows(
            self,
            config,
            own_functions={
                "dreaming": lambda spec: Workflow(
                    self, spec, config, function=dreaming_function(config, functions), schedule_group=group
                ),
                "migration": lambda spec: MigrationWorkflow(
                    self, config, functions=functions, key=key, logs=logs, schedule_group=group
                ),
            },
            schedule_group=group,
        )
        self.dreaming_function = dreaming = self.workflows["dreaming"].function
        self.migration = cast(MigrationWorkflow, self.workflows["migration"])
        jobs.purged_by(dreaming)

        # Tenant data: these functions assume the tenant role (records, vectors, archives of one tenant).
        tenant_functions = (api, jobs.function, decay_job, dreaming, self.migration.function, chat)
        self.tenant_functions = tuple(f for f in tenant_functions if f is not None)
        self.vectors = TenantVectors.for_deployment(
            self, "Vectors", config, key=key, tables=self.tables, trusted=self.tenant_functions, network=net
        )
        self.vectors.point_at(authorizer)
        self.migration.grant_tenant(self.vectors, net)
        jobs.grant_tenant(self.vectors, net)
        for function in self.tenant_functions:
            self.migration.route_writes(function)
            self.models.grant_embedding(function)

        # Each function's own calls, beyond the tenant role.
        every_function = (*self.tenant_functions, authorizer, console, self.file_function)
        self.tables.grant_declared(every_function)  # the declared tables, buckets, queues: settings.resources
        self.buckets.grant_declared(every_function, self.vectors)
        self.queues.grant_declared(every_function)
        for workflow in self.workflows.values():
            if workflow.started_on_demand:
                workflow.grant_start(api, net)
        jobs.grant_submit(api, net)
        self.models.grant_optional(api, config.write_judge.model_id, sid="WriteJudge")
        self.models.grant_rerank(api, config.rerank.model_id)  # recall's reranker: the API serves recall
        self.models.grant_optional(dreaming, config.schedules.dreaming.model_id, sid="DreamingExtraction")
        self.models.grant_optional(dreaming, config.schedules.curator.model_id, sid="CuratorReview")
        if chat is not None:
            self.models.grant_converse(chat, config.chat_model_ids)
        self.guardrail = ContentGuardrail.for_deployment(
            self, "ContentGuardrail", config, writers=(api, jobs.function, chat, dreaming), network=net
        )

        # The API in front, the decay job's schedule, and the alarms over all of it.
        self.api = MemoryApi.for_deployment(
            self, "Api", config, api=api, authorizer=authorizer, console=console, chat=chat
        )
        self.scheduler_role, self.decay_schedule = decay_job_schedule(
            self, function=decay_job, schedule_group=group, config=config
        )
        watched: dict[str, ServiceFunction | None] = {
            "Api": api,
            "Authorizer": authorizer,
            "Console": console,
            "DecayJob": decay_job,
            "Jobs": jobs.function,
        }
        watched |= {"Dreaming": dreaming, "Chat": chat, "Files": self.file_function}
        self.observability = Observability.for_deployment(
            self, "Observability", config, key=key, api=self.api, functions=watched, workflows=self.workflows
        )
        net.check_policies()
        add_outputs(self)
