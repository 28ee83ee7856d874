"""Tenant onboarding against a deployed stack, without editing code or redeploying: create the tenant's
S3 Vectors index (`mem-<tenant>`) and issue API keys (hash + grants in the API keys table).

Run with administrator credentials (the functions' roles cannot create indexes). The command-line entry is
`infra/onboard.py`; docs/deploy.md shows its use."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from ...domain.errors import Conflict, DomainError, NotFound, ValidationFailed
from ...domain.records import is_valid_tenant
from ._dynamo import dynamo_item, expr_values, read_text
from .api_keys import DynamoApiKeyStore, hash_api_key
from .dynamodb_store import DynamoRecordStore, TreeBackfill

INDEX_PREFIX = "mem-"
USAGE_KEY_PREFIX = "agent-memory-"

# Names of the CloudFormation outputs of the memory stack (infra/stacks/memory_stack.py).
OUTPUT_VECTOR_BUCKET = "VectorBucketName"
OUTPUT_API_KEYS_TABLE = "ApiKeysTableName"
OUTPUT_USAGE_PLAN = "UsagePlanId"
OUTPUT_ARCHIVE_BUCKET = "MigrationArchiveBucketName"
OUTPUT_MEMORY_TABLE = "MemoryTableName"


P = ParamSpec("P")
R = TypeVar("R")


class AwsCallFailed(DomainError):
    """AWS refused or could not take a call made with the operator's credentials."""

    code = "aws_call_failed"


def _aws_errors(method: Callable[P, R]) -> Callable[P, R]:
    """Turn credential, region and permission failures into one actionable message (no traceback)."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            raise AwsCallFailed(
                f"{exc.operation_name} failed: {error.get('Code')}: {error.get('Message')}. "
                "Check the credentials (--profile), the region (--region) and their permissions.",
                operation=exc.operation_name,
            ) from exc
        except BotoCoreError as exc:
            raise AwsCallFailed(
                f"{str(exc).rstrip('.')}. Check the credentials (--profile) and the region (--region)."
            ) from exc

    return wrapper


def index_name(tenant: str) -> str:
    return f"{INDEX_PREFIX}{tenant}"


@dataclass(frozen=True)
class IndexSpec:
    """The shape of a tenant index; must match what the stack's functions write (cdk.json `embedding`)."""

    dimension: int
    distance_metric: str = "cosine"
    non_filterable_metadata_keys: tuple[str, ...] = ("text",)
    data_type: str = "float32"


@dataclass(frozen=True)
class StackResources:
    vector_bucket: str
    api_keys_table: str
    usage_plan_id: str | None = None
    archive_bucket: str | None = None
    """The embedding migration's archive bucket (offboarding deletes the tenant's `<tenant>/` prefix)."""
    memory_table: str | None = None
    """The memory table (a new tenant's tree index is marked complete there; `tree_index` backfills it)."""

    @classmethod
    def from_outputs(cls, stack_name: str, outputs: Mapping[str, str]) -> StackResources:
        missing = [name for name in (OUTPUT_VECTOR_BUCKET, OUTPUT_API_KEYS_TABLE) if not outputs.get(name)]
        if missing:
            raise NotFound(
                f"stack {stack_name!r} has no outputs {missing}; is it the agent memory stack, fully deployed?",
                stack=stack_name,
            )
        return cls(
            vector_bucket=outputs[OUTPUT_VECTOR_BUCKET],
            api_keys_table=outputs[OUTPUT_API_KEYS_TABLE],
            usage_plan_id=outputs.get(OUTPUT_USAGE_PLAN) or None,
            archive_bucket=outputs.get(OUTPUT_ARCHIVE_BUCKET) or None,
            memory_table=outputs.get(OUTPUT_MEMORY_TABLE) or None,
        )


@dataclass(frozen=True)
class IssuedKey:
    key: str
    """The bearer secret. Shown once: only its hash is stored."""
    key_id: str
    tenant: str
    namespaces: tuple[str, ...]
    scopes: tuple[str, ...]


@dataclass(frozen=True)
class OnboardingResult:
    tenant: str
    index_created: bool
    key: IssuedKey


@dataclass(frozen=True)
class OffboardingResult:
    tenant: str
    disabled_keys: int
    deleted_indexes: tuple[str, ...]
    deleted_archives: int = 0


def read_stack_outputs(cloudformation: Any, stack_name: str) -> dict[str, str]:
    try:
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as exc:
        raise NotFound(f"cannot read stack {stack_name!r}: {exc.response['Error']['Message']}") from exc
    if not stacks:
        raise NotFound(f"stack {stack_name!r} not found")
    return {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}


class TenantOnboarding:
    def __init__(
        self,
        *,
        resources: StackResources,
        s3vectors: Any,
        dynamodb: Any,
        apigateway: Any | None = None,
        s3: Any | None = None,
    ) -> None:
        self.resources = resources
        self._s3 = s3
        self._s3vectors = s3vectors
        self._dynamodb = dynamodb
        self._apigateway = apigateway
        self._keys = DynamoApiKeyStore(resources.api_keys_table, dynamodb)

    @classmethod
    @_aws_errors
    def for_stack(
        cls, stack_name: str, *, region: str | None = None, profile: str | None = None
    ) -> TenantOnboarding:
        """Clients from the default credential chain (or a named profile), resources from the stack outputs."""
        session = boto3.Session(region_name=region, profile_name=profile)
        outputs = read_stack_outputs(session.client("cloudformation"), stack_name)
        return cls(
            resources=StackResources.from_outputs(stack_name, outputs),
            s3vectors=session.client("s3vectors"),
            dynamodb=session.client("dynamodb"),
            apigateway=session.client("apigateway"),
            s3=session.client("s3"),
        )

    @_aws_errors
    def onboard(
        self, tenant: str, spec: IndexSpec, *, namespaces: Sequence[str], scopes: Sequence[str]
    ) -> OnboardingResult:
        """Everything a new tenant needs: its index, its tree-index marker (nothing to backfill), then its
        first API key."""
        created = self.ensure_index(tenant, spec)
        if self.resources.memory_table:
            self.tree_index(tenant)
        key = self.issue_api_key(tenant, namespaces, scopes)
        return OnboardingResult(tenant=tenant, index_created=created, key=key)

    @_aws_errors
    def tree_index(self, tenant: str, *, max_records: int | None = None) -> TreeBackfill:
        """Adds the namespace-tree index key to the tenant's records written before it existed, resuming where
        the last run stopped (`record_tree.RecordTree.backfill`); complete once it reports so."""
        _require_tenant(tenant)
        if not self.resources.memory_table:
            raise NotFound(f"stack {self.resources} has no output {OUTPUT_MEMORY_TABLE}")
        store = DynamoRecordStore(self.resources.memory_table, lambda _tenant: self._dynamodb)
        return store.backfill_tree_index(tenant, max_records=max_records)

    @_aws_errors
    def ensure_index(self, tenant: str, spec: IndexSpec) -> bool:
        """Create `mem-<tenant>` if missing (True), or check an existing one has the same shape (False).
        The index gets the same shape CloudFormation gives configured tenants; the runtime turns on full-text
        search on `text` the first time it uses the index (S3VectorsIndex.ensure_tenant)."""
        _require_tenant(tenant)
        existing = self._get_index(tenant)
        if existing is not None:
            self._check_shape(tenant, existing, spec)
            return False
        try:
            self._s3vectors.create_index(
                vectorBucketName=self.resources.vector_bucket,
                indexName=index_name(tenant),
                dataType=spec.data_type,
                dimension=spec.dimension,
                distanceMetric=spec.distance_metric,
                metadataConfiguration={"nonFilterableMetadataKeys": list(spec.non_filterable_metadata_keys)},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConflictException":
                raise
            # Created concurrently by someone else: fine if it has the right shape.
            raced = self._get_index(tenant)
            if raced is None:
                raise
            self._check_shape(tenant, raced, spec)
            return False
        return True

    @_aws_errors
    def issue_api_key(self, tenant: str, namespaces: Sequence[str], scopes: Sequence[str]) -> IssuedKey:
        """Store a new key's hash with its tenant, namespace patterns and scopes (the authorizer's store does
        the validation and the write); attach the tenant's usage key; return the secret once."""
        _require_tenant(tenant)
        usage_key = self.ensure_usage_key(tenant)
        key, key_id = self._keys.create(tenant, list(namespaces), list(scopes))
        if usage_key:
            self._dynamodb.update_item(
                TableName=self.resources.api_keys_table,
                Key=dynamo_item(key_hash=hash_api_key(key)),
                UpdateExpression="SET usage_key = :usage",
                ExpressionAttributeValues=expr_values(usage=usage_key),
            )
        return IssuedKey(
            key=key,
            key_id=key_id,
            tenant=tenant,
            namespaces=tuple(namespaces),
            scopes=tuple(sorted(set(scopes))),
        )

    @_aws_errors
    def disable_api_key(self, key_id: str) -> int:
        """Disable every key with this id (the authorizer refuses it once its cached decision expires)."""
        if not key_id or len(key_id) > 64:
            raise ValidationFailed("give the key id printed when the key was issued")
        hashes: list[str] = []
        paginator = self._dynamodb.get_paginator("scan")
        pages = paginator.paginate(
            TableName=self.resources.api_keys_table,
            FilterExpression="key_id = :id",
            ExpressionAttributeValues=expr_values(id=key_id),
            ProjectionExpression="key_hash",
        )
        for page in pages:
            hashes.extend(read_text(row, "key_hash") for row in page.get("Items", []))
        if not hashes:
            raise NotFound(f"no API key with id {key_id!r}", key_id=key_id)
        for key_hash in hashes:
            self._keys.disable(key_hash)
        return len(hashes)

    @_aws_errors
    def offboard(self, tenant: str) -> OffboardingResult:
        """The end of a tenant (after its data was purged, domain/erasure): disable every API key of the
        tenant and delete its vector indexes (`mem-<tenant>` and a migration's `mem-<tenant>.e<n>`). Running
        it again finds nothing left to do."""
        _require_tenant(tenant)
        hashes: list[str] = []
        pages = self._dynamodb.get_paginator("scan").paginate(
            TableName=self.resources.api_keys_table,
            FilterExpression="tenant = :t AND (attribute_not_exists(disabled) OR disabled = :false)",
            ExpressionAttributeValues=expr_values(t=tenant, false=False),
            ProjectionExpression="key_hash",
        )
        for page in pages:
            hashes.extend(read_text(row, "key_hash") for row in page.get("Items", []))
        for key_hash in hashes:
            self._keys.disable(key_hash)
        deleted: list[str] = []
        prefix = index_name(tenant)
        listing = self._s3vectors.get_paginator("list_indexes").paginate(
            vectorBucketName=self.resources.vector_bucket, prefix=prefix
        )
        for page in listing:
            for index in page.get("indexes", []):
                name = index["indexName"]
                if name == prefix or name.startswith(prefix + ".e"):  # never another tenant's `mem-<t>x`
                    self._s3vectors.delete_index(
                        vectorBucketName=self.resources.vector_bucket, indexName=name
                    )
                    deleted.append(name)
        archived = self._delete_archives(tenant)
        return OffboardingResult(
            tenant=tenant,
            disabled_keys=len(hashes),
            deleted_indexes=tuple(deleted),
            deleted_archives=archived,
        )

    def _delete_archives(self, tenant: str) -> int:
        """Every object under `<tenant>/` in the migration archive bucket (its old indexes' vectors)."""
        bucket = self.resources.archive_bucket
        if self._s3 is None or not bucket:
            return 0
        deleted = 0
        for page in self._s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=f"{tenant}/"):
            keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
            if keys:  # a page holds at most 1,000 keys, DeleteObjects' maximum
                self._s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
                deleted += len(keys)
        return deleted

    @_aws_errors
    def ensure_usage_key(self, tenant: str) -> str | None:
        """The tenant's API Gateway usage identifier in the stack's usage plan (one per tenant), created on
        first use. The authorizer returns it as `usageIdentifierKey`, so quotas count per tenant. It grants
        no access by itself: the API takes usage keys only from the authorizer, never from callers."""
        if self._apigateway is None or not self.resources.usage_plan_id:
            return None
        name = f"{USAGE_KEY_PREFIX}{tenant}"
        found = [
            k
            for k in self._apigateway.get_api_keys(nameQuery=name, includeValues=True).get("items", [])
            if k.get("name") == name
        ]
        if found:
            return str(found[0]["value"])
        created = self._apigateway.create_api_key(
            name=name, description=f"Usage identifier of tenant {tenant}", enabled=True
        )
        self._apigateway.create_usage_plan_key(
            usagePlanId=self.resources.usage_plan_id, keyId=created["id"], keyType="API_KEY"
        )
        return str(created["value"])

    def _get_index(self, tenant: str) -> Mapping[str, Any] | None:
        try:
            response = self._s3vectors.get_index(
                vectorBucketName=self.resources.vector_bucket, indexName=index_name(tenant)
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] in ("NotFoundException", "NoSuchIndex"):
                return None
            raise
        return response["index"]

    @staticmethod
    def _check_shape(tenant: str, index: Mapping[str, Any], spec: IndexSpec) -> None:
        actual = (index.get("dimension"), index.get("distanceMetric"), index.get("dataType"))
        wanted = (spec.dimension, spec.distance_metric, spec.data_type)
        if actual != wanted:
            raise Conflict(
                f"index {index_name(tenant)!r} exists with dimension/metric/type {actual}, but the deployment "
                f"expects {wanted}; vectors of one shape cannot go into the other (migrate the embeddings)",
                tenant=tenant,
            )


def _require_tenant(tenant: str) -> None:
    if not is_valid_tenant(tenant):
        raise ValidationFailed(
            f"invalid tenant id {tenant!r}: 3-40 characters of a-z, 0-9 and '-', starting and ending with a "
            "letter or digit",
            tenant=tenant,
        )
