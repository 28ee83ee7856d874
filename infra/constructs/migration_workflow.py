"""MigrationWorkflow: the embedding-model migration's backfill (issue 12) — its task function, a STANDARD
state machine built from `workflows/migration_asl.py`, the archive bucket the old index is exported to
(Glacier Instant Retrieval by lifecycle), the tenant role's grants for a migration's second index and the archive, and alarms
on failed executions and dead letters.

The second index (`mem-<tenant>.e<n>`) is created by the migration at run time with the tenant role, never by
`cdk deploy`: the tenant role may create, use and delete `index/mem-${aws:PrincipalTag/tenant}.*` (tenant ids
never contain a dot, so the pattern reaches no other tenant's index) and delete its own `mem-<tenant>` once
archived. The API function starts executions; the task function runs the pages."""

from __future__ import annotations

from typing import cast

from aws_cdk import Acknowledgment, Duration, Stack, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_scheduler as scheduler
from constructs import Construct

from ..config import DeploymentConfig
from ..workflows.migration_asl import WORKFLOW
from .buckets import data_bucket
from .function_set import FunctionSet
from .network import S3, Network
from .service_function import METRICS_NAMESPACE, ServiceFunction
from .tenant_vectors import INDEX_ACTIONS, INDEX_PREFIX, TENANT_PRINCIPAL_TAG, VECTOR_ACTIONS, TenantVectors
from .workflow import Workflow

MIGRATION_HANDLER = "agent_memory.handlers.migration.handler"
MIGRATION_METRICS_SERVICE = "migration"
ARCHIVE_TAG_KEY, ARCHIVE_TAG_VALUE = "agent-memory-archive", "vectors"
"""adapters/aws/migration.py tags every exported part so; the manifest stays in S3 Standard."""
ARCHIVE_OBJECT_ACTIONS = ("s3:PutObject", "s3:PutObjectTagging", "s3:GetObject")


class MigrationWorkflow(Workflow):
    """The backfill workflow (`workflows/migration_asl.py`) on its own task function, with the archive bucket
    and the alarms on failed executions and dead letters."""

    def __init__(
        self,
        scope: Construct,
        config: DeploymentConfig,
        *,
        functions: FunctionSet,
        key: kms.IKey,
        logs: s3.IBucket,
        schedule_group: scheduler.IScheduleGroup,
    ) -> None:
        built: list[s3.Bucket] = []

        def task_function(workflow: Construct) -> ServiceFunction:
            archive = _archive_bucket(workflow, key, logs, config.retain_data)
            built.append(archive)
            options = functions.options_for()
            environment = options.pop("environment")
            return ServiceFunction(
                workflow,
                "MigrationFunction",
                handler=MIGRATION_HANDLER,
                description="Embedding migration backfill pages (run by the backfill state machine)",
                sizing=config.functions.dreaming,  # works on tenant data like the others, sized alike
                environment={**environment, "AGENT_MEMORY_MIGRATION_ARCHIVE_BUCKET": archive.bucket_name},
                asynchronous=False,
                **options,
            )

        super().__init__(scope, WORKFLOW, config, function=task_function, schedule_group=schedule_group)
        self.archive_bucket = built[0]
        self.dead_letters_alarm = self._dead_letters_alarm()

    @property
    def alarms(self) -> list[cloudwatch.Alarm]:
        return [*super().alarms, self.dead_letters_alarm]

    def grant_tenant(self, vectors: TenantVectors, network: Network) -> None:
        """What the tenant role needs for a migration: its second index, retiring the first, the archive (in
        IAM and in the endpoint policies)."""
        tenant_role, own_index = vectors.tenant_access_role, vectors.own_indexes
        tenant_role.add_to_policy(
            iam.PolicyStatement(
                sid="OwnTenantMigrationIndexes",
                actions=[*VECTOR_ACTIONS, *INDEX_ACTIONS, "s3vectors:DeleteIndex"],
                resources=[f"{own_index}.*"],
            )
        )
        tenant_role.add_to_policy(
            iam.PolicyStatement(
                sid="OwnTenantIndexRetirement", actions=["s3vectors:DeleteIndex"], resources=[own_index]
            )
        )
        tenant_role.add_to_policy(
            iam.PolicyStatement(
                sid="OwnTenantArchive",
                actions=list(ARCHIVE_OBJECT_ACTIONS),
                resources=[self.archive_bucket.arn_for_objects(f"{TENANT_PRINCIPAL_TAG}/*")],
            )
        )
        # A purge (domain/erasure) lists the tenant's archive parts to rewrite them without purged vectors:
        # ListBucket on the bucket, only for keys under the session's own `<tenant>/` prefix.
        tenant_role.add_to_policy(
            iam.PolicyStatement(
                sid="OwnTenantArchiveListing",
                actions=["s3:ListBucket"],
                resources=[self.archive_bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{TENANT_PRINCIPAL_TAG}/*"]}},
            )
        )
        self._acknowledge_tenant_wildcards(vectors)
        self._tenant_endpoint_policies(vectors, network)

    def route_writes(self, function: ServiceFunction) -> None:
        """Every function that may assume the tenant role writes records and vectors; with the archive bucket
        set, its wiring routes vectors through the tenant's migration (both indexes during one, never an
        archived index) and the purge rewrites the tenant's archive parts. A writer without it would write
        only to `mem-<tenant>`, recreating an index the migration archived."""
        function.add_environment("AGENT_MEMORY_MIGRATION_ARCHIVE_BUCKET", self.archive_bucket.bucket_name)

    def _tenant_endpoint_policies(self, vectors: TenantVectors, network: Network) -> None:
        tenant_role = vectors.tenant_access_role
        network.allow(
            "s3vectors",
            sid="TenantIndexRetirement",
            roles=[tenant_role],
            actions=["s3vectors:DeleteIndex"],
            resources=[f"{vectors.vector_bucket_arn}/index/{INDEX_PREFIX}*"],
        )
        network.allow(
            S3,
            sid="TenantMigrationArchive",
            roles=[tenant_role],
            actions=ARCHIVE_OBJECT_ACTIONS,
            resources=[self.archive_bucket.arn_for_objects("*")],
        )
        network.allow(
            S3,
            sid="TenantMigrationArchiveListing",
            roles=[tenant_role],
            actions=["s3:ListBucket"],
            resources=[self.archive_bucket.bucket_arn],
        )

    def _acknowledge_tenant_wildcards(self, vectors: TenantVectors) -> None:
        stack = Stack.of(self)
        vectors_id = stack.get_logical_id(vectors.vector_bucket)
        archive_id = stack.get_logical_id(cast(s3.CfnBucket, self.archive_bucket.node.default_child))
        Validations.of(vectors.tenant_access_role).acknowledge(
            Acknowledgment(
                id=f"AwsSolutions-IAM5[Resource::<{vectors_id}.VectorBucketArn>/index/mem-<aws:PrincipalTag/tenant>.*]",
                reason="An embedding migration's second index of the session's own tenant, created at run time "
                "(mem-<tenant>.e<n>); tenant ids hold no dot, so no other tenant's index matches.",
            ),
            Acknowledgment(
                id=f"AwsSolutions-IAM5[Resource::<{archive_id}.Arn>/<aws:PrincipalTag/tenant>/*]",
                reason="The archive objects of the session's own tenant only (<tenant>/<migration>/...).",
            ),
        )

    def _dead_letters_alarm(self) -> cloudwatch.Alarm:
        return cloudwatch.Alarm(
            self,
            "BackfillDeadLetters",
            metric=cloudwatch.Metric(
                namespace=METRICS_NAMESPACE,
                metric_name="MigrationDeadLetters",
                dimensions_map={"service": MIGRATION_METRICS_SERVICE},
                period=Duration.minutes(5),
                statistic="Maximum",
            ),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description="Records of an embedding backfill keep failing (dead letters): "
            "`migrate retry` re-runs them; switch is refused until none is left.",
        )


def _archive_bucket(
    scope: Construct, key: kms.IKey, access_logs_bucket: s3.IBucket, retain: bool
) -> s3.Bucket:
    return data_bucket(
        scope,
        "ArchiveBucket",
        key=key,
        access_logs_bucket=access_logs_bucket,
        logs_prefix="migration-archive/",
        lifecycle_rules=[
            s3.LifecycleRule(
                id="archived-vectors-to-glacier",
                tag_filters={ARCHIVE_TAG_KEY: ARCHIVE_TAG_VALUE},
                # Glacier Instant Retrieval, not Flexible Retrieval: a purge (domain/erasure) must read and
                # rewrite the parts that hold a purged vector, and Flexible Retrieval answers GetObject with
                # InvalidObjectState until a restore of hours. Instant Retrieval reads in milliseconds at a
                # similar storage price (90-day minimum: a rewritten part pays the rest of its 90 days).
                transitions=[
                    s3.Transition(
                        storage_class=s3.StorageClass.GLACIER_INSTANT_RETRIEVAL,
                        transition_after=Duration.days(0),
                    )
                ],
            ),
            s3.LifecycleRule(id="abort-uploads", abort_incomplete_multipart_upload_after=Duration.days(7)),
        ],
        retain=retain,
    )
