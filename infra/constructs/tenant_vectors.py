"""TenantVectors: the S3 Vectors bucket, one index per tenant, and the session-tag scoped tenant role."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from aws_cdk import Acknowledgment, ArnFormat, Fn, RemovalPolicy, Stack, Validations
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3vectors as s3vectors
from constructs import Construct

from ..config import DeploymentConfig, EmbeddingConfig, TenantConfig
from .memory_tables import MemoryTables
from .network import DYNAMODB, Network
from .service_function import ServiceFunction

TENANT_TAG = "tenant"
TENANT_PRINCIPAL_TAG = "${aws:PrincipalTag/" + TENANT_TAG + "}"
"""IAM policy variable: the tenant of the session, set as a session tag by AssumeRole."""

INDEX_PREFIX = "mem-"
"""One index per tenant holds both halves of hybrid recall (vectors and S3 Vectors' own full-text search on
`text`), so there is no keyword companion index to grant (adapters/aws/s3vectors_index.py)."""
VECTOR_ACTIONS = (
    "s3vectors:PutVectors",
    "s3vectors:GetVectors",
    "s3vectors:DeleteVectors",
    "s3vectors:QueryVectors",
    "s3vectors:ListVectors",
)
INDEX_ACTIONS = (
    "s3vectors:GetIndex",
    "s3vectors:CreateIndex",
    "s3vectors:UpdateIndexMode",
    "s3vectors:UpdateMetadataConfiguration",
)
"""The runtime (S3VectorsIndex.ensure_tenant) checks the tenant's index, creates it if an onboarded tenant
has none yet, and turns on full-text search on `text`, which CloudFormation cannot configure. Scoped to the
session's own index names like the data actions, so no tenant can touch another tenant's index."""
ITEM_ACTIONS = (
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:Query",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:ConditionCheckItem",
)
"""Every action here always names partition keys, so the LeadingKeys condition always has values to
check. Scan and PartiQL are deliberately absent: with no key in the request, `ForAllValues` would pass."""

# Every AssumeRole must carry exactly one session tag, `tenant`; its value then scopes every statement.
_SESSION_TAG_CONDITIONS = {
    "Null": {f"aws:RequestTag/{TENANT_TAG}": "false"},
    "ForAllValues:StringEquals": {"aws:TagKeys": [TENANT_TAG]},
}


def index_name(tenant: str) -> str:
    return f"{INDEX_PREFIX}{tenant}"


class TenantVectors(Construct):
    """Vector bucket (SSE-KMS with the service key); an index `mem-<tenant>` per configured tenant (unless
    it was onboarded outside CloudFormation: `create_index: false`); and `TenantAccessRole`, which
    request-handling functions assume with the session tag `tenant=<id>`. Its policy reaches only
    `index/mem-${aws:PrincipalTag/tenant}` and DynamoDB items whose partition key starts with `<tenant>#`,
    so a new tenant needs an index and an API key, never a new role.

    The construct owns every grant on tenant data: the `trusted` functions may assume the role (trust, IAM,
    the STS endpoint) and are told where the vectors and the role are; the endpoint policies let the tenant
    role's calls through."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        key: kms.IKey,
        memory_table: dynamodb.ITable,
        embedding: EmbeddingConfig,
        tenants: Sequence[TenantConfig],
        trusted: Sequence[ServiceFunction],
        network: Network,
        retain: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        if not trusted:
            raise ValueError(
                "TenantVectors needs at least one function role allowed to assume the tenant role"
            )
        self._network = network
        removal = RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY
        self.vector_bucket = s3vectors.CfnVectorBucket(
            self,
            "VectorBucket",
            encryption_configuration=s3vectors.CfnVectorBucket.EncryptionConfigurationProperty(
                sse_type="aws:kms", kms_key_arn=key.key_arn
            ),
        )
        self.vector_bucket.apply_removal_policy(removal)
        self.vector_bucket_arn = self.vector_bucket.attr_vector_bucket_arn
        # The ARN is arn:<partition>:s3vectors:<region>:<account>:bucket/<name>.
        self.vector_bucket_name = Fn.select(1, Fn.split("/", self.vector_bucket_arn))
        self.own_indexes = f"{self.vector_bucket_arn}/index/{INDEX_PREFIX}{TENANT_PRINCIPAL_TAG}"
        """The session's own `mem-<tenant>` index (an IAM policy variable)."""
        self._allow_background_indexing(key)
        self.indexes = self._tenant_indexes(tenants, embedding, removal)

        self.trusted = tuple(trusted)
        """The functions that may assume the tenant role."""
        first, *others = trusted
        self.tenant_access_role = iam.Role(
            self,
            "TenantAccessRole",
            description="Tenant-scoped data access; assumed with the session tag tenant=<id>",
            assumed_by=iam.ArnPrincipal(first.role.role_arn)
            .with_session_tags()
            .with_conditions(_SESSION_TAG_CONDITIONS),
        )
        self._grant_assume_identity(first.role)
        for function in others:
            self.allow_assume(function.role)
        self._tenant_policy(key, memory_table)
        self._endpoint_policies(memory_table, trusted)
        for function in trusted:
            self.point_at(function)

    @classmethod
    def for_deployment(
        cls,
        scope: Construct,
        construct_id: str,
        config: DeploymentConfig,
        *,
        key: kms.IKey,
        tables: MemoryTables,
        trusted: Sequence[ServiceFunction],
        network: Network,
    ) -> TenantVectors:
        """An index per configured tenant with the configured embedding; items in the memory table."""
        return cls(
            scope,
            construct_id,
            key=key,
            memory_table=tables.memory,
            embedding=config.embedding,
            tenants=config.tenants,
            trusted=trusted,
            network=network,
            retain=config.retain_data,
        )

    def point_at(self, function: ServiceFunction) -> None:
        """Tell `function` where the vectors and the tenant role are (the authorizer reads them too, without
        the right to assume the role)."""
        function.add_environment("AGENT_MEMORY_VECTOR_BUCKET", self.vector_bucket_name)
        function.add_environment("AGENT_MEMORY_TENANT_ROLE_ARN", self.tenant_access_role.role_arn)

    def allow_assume(self, role: iam.IRole) -> None:
        """Let a function role obtain tenant-scoped credentials (AssumeRole + TagSession with tenant)."""
        trust_policy = self.tenant_access_role.assume_role_policy
        if trust_policy is None:  # a role built with assumed_by always has one
            raise RuntimeError("TenantAccessRole has no trust policy")
        trust_policy.add_statements(
            iam.PolicyStatement(
                actions=["sts:AssumeRole", "sts:TagSession"],
                principals=[iam.ArnPrincipal(role.role_arn)],
                conditions=_SESSION_TAG_CONDITIONS,
            )
        )
        self._grant_assume_identity(role)

    def _grant_assume_identity(self, role: iam.IRole) -> None:
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["sts:AssumeRole", "sts:TagSession"],
                resources=[self.tenant_access_role.role_arn],
                conditions={"Null": {f"aws:RequestTag/{TENANT_TAG}": "false"}},
            )
        )

    def _allow_background_indexing(self, key: kms.IKey) -> None:
        """S3 Vectors maintains indexes in the background as this service principal; without kms:Decrypt
        on the key, writes fail with "Insufficient access to perform asynchronous indexing"."""
        stack = Stack.of(self)
        key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowS3VectorsBackgroundIndexing",
                principals=[iam.ServicePrincipal("indexing.s3vectors.amazonaws.com")],
                actions=["kms:Decrypt"],
                resources=["*"],
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {
                        "aws:SourceArn": stack.format_arn(
                            service="s3vectors",
                            resource="bucket",
                            resource_name="*",
                            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
                        )
                    },
                },
            )
        )

    def _tenant_indexes(
        self, tenants: Sequence[TenantConfig], embedding: EmbeddingConfig, removal: RemovalPolicy
    ) -> dict[str, s3vectors.CfnIndex]:
        indexes: dict[str, s3vectors.CfnIndex] = {}
        for tenant in (t for t in tenants if t.create_index):
            index = s3vectors.CfnIndex(
                self,
                f"Index-{tenant.id}",
                vector_bucket_arn=self.vector_bucket_arn,
                index_name=index_name(tenant.id),
                data_type="float32",
                dimension=embedding.dimensions,
                distance_metric=embedding.distance_metric,
                metadata_configuration=s3vectors.CfnIndex.MetadataConfigurationProperty(
                    non_filterable_metadata_keys=list(embedding.non_filterable_metadata_keys)
                ),
            )
            index.apply_removal_policy(removal)
            indexes[tenant.id] = index
        return indexes

    def _tenant_policy(self, key: kms.IKey, memory_table: dynamodb.ITable) -> None:
        role = self.tenant_access_role
        role.add_to_policy(
            iam.PolicyStatement(
                sid="OwnTenantIndexes", actions=list(VECTOR_ACTIONS), resources=[self.own_indexes]
            )
        )
        # Index set-up stays with the runtime (S3VectorsIndex.ensure_tenant): CloudFormation cannot configure
        # full-text search, so the first request upgrades an index created by the stack; a tenant onboarded
        # without an index gets one on first use. Only the session's own `mem-<tenant>` index: no tenant can
        # create or change another tenant's index, and no other index name is reachable.
        role.add_to_policy(
            iam.PolicyStatement(
                sid="OwnTenantIndexSetup", actions=list(INDEX_ACTIONS), resources=[self.own_indexes]
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="OwnTenantItems",
                actions=list(ITEM_ACTIONS),
                resources=[memory_table.table_arn, f"{memory_table.table_arn}/index/*"],
                conditions={
                    "ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{TENANT_PRINCIPAL_TAG}#*"]}
                },
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="ServiceKey",
                actions=["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey"],
                resources=[key.key_arn],
            )
        )
        # No Bedrock here: embeddings and chat run with each function's own role (BedrockModels); tenant
        # sessions only reach tenant data.
        stack = Stack.of(self)
        table_logical_id = stack.get_logical_id(cast(dynamodb.CfnTable, memory_table.node.default_child))
        Validations.of(role).acknowledge(
            Acknowledgment(
                id=f"AwsSolutions-IAM5[Resource::<{table_logical_id}.Arn>/index/*]",
                reason="Queries on the GSIs of the memory table. LeadingKeys confines the queried GSI "
                "partition key to the session's tenant; an item's own GSI attributes are not checked by IAM, "
                "so DynamoRecordStore also drops GSI results whose base pk is another tenant's.",
            )
        )

    def _endpoint_policies(self, memory_table: dynamodb.ITable, trusted: Sequence[ServiceFunction]) -> None:
        """What the endpoints let through for tenant data: the tenant role's calls, and the trusted functions'
        AssumeRole."""
        role = self.tenant_access_role
        self._network.allow(
            DYNAMODB,
            sid="TenantItems",
            roles=[role],
            actions=ITEM_ACTIONS,
            resources=[memory_table.table_arn, f"{memory_table.table_arn}/index/*"],
        )
        self._network.allow(
            "s3vectors",
            sid="TenantIndexes",
            roles=[role],
            actions=[*VECTOR_ACTIONS, *INDEX_ACTIONS],
            resources=[f"{self.vector_bucket_arn}/index/{INDEX_PREFIX}*"],
        )
        self._network.allow_functions(
            "sts",
            trusted,
            sid="TenantCredentials",
            actions=["sts:AssumeRole", "sts:TagSession"],
            resources=[role.role_arn],
        )
