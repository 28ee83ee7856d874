"""The DynamoDB tables the functions reach with their own role (not the tenant role), and the S3 buckets an
adapter of their own needs, one declaration each.

Everything else is derived from these entries: the table itself (`infra/constructs/memory_tables.py` builds
every declared table under its `construct_id`, with the shared encryption, recovery and removal settings), its
name in the environment of every function that touches data (`AGENT_MEMORY_<SETTING>`, read by the `Settings`
field `setting` names), and each access: the stack applies it to exactly the functions it names, as one IAM
statement on the table (Sid-less, CDK's `Table.grant`), the key use it needs, and, for a function in the VPC,
the same call in the DynamoDB endpoint's policy under `sid` (`Network.allow_functions`). The wiring finds the
table's name through `setting`. Plain data: the CDK app imports it.

The memory table is not declared here: every function reaches it with the tenant role, whose grant
(`infra/constructs/tenant_vectors.py`) confines each call to the tenant's partition keys.

A declared bucket (`BUCKETS`) is built the same way (`infra/constructs/declared_buckets.py`): SSE-KMS with the
stack's key, TLS only, no public access, server access logs (`infra/constructs/buckets.py` `data_bucket`, as
the buckets the constructs own); its name goes to the functions its accesses name, and each access is granted
to exactly those functions: with their own role, or with the tenant's session (`tenant=True`: the tenant role
they assume, confined to keys under `<tenant>/`), on the objects under its `prefix` (a listing only with an
`s3:prefix` under it), with the key use it needs and the same call in the S3 endpoint's policy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KEY_USE_ACTIONS = ("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey")
"""Reading and writing items encrypted with the stack's data key."""
KEY_READ_ACTIONS = ("kms:Decrypt", "kms:DescribeKey")
"""Reading them only."""

FUNCTIONS = ("api", "authorizer", "chat", "console", "dreaming", "files", "job_worker", "jobs", "migration")
"""The Lambda functions an access may name: their handler modules (`agent_memory.handlers.<name>`)."""


@dataclass(frozen=True)
class Access:
    """One kind of call some functions make on a declared table, with their own role."""

    sid: str
    """The statement's id in the DynamoDB endpoint's policy (one statement per access, each caller's role in
    its condition)."""
    actions: tuple[str, ...]
    functions: tuple[str, ...]
    """The functions that make these calls (names of `FUNCTIONS`); a function the deployment does not have (the
    chat function without chat models) is skipped."""
    key_actions: tuple[str, ...] = KEY_USE_ACTIONS
    """What the calls need of the data key the table is encrypted with."""


class _Named:
    """A resource the functions find through a `Settings` field."""

    setting: str

    @property
    def variable(self) -> str:
        return f"AGENT_MEMORY_{self.setting.upper()}"

    def name_in(self, settings: Any) -> str:
        """The resource's name in `settings` (a `Settings` or `HandlerSettings`); empty when the stack set none."""
        return str(getattr(settings, self.setting))


@dataclass(frozen=True)
class Table(_Named):
    construct_id: str
    """The table's id under the `Tables` construct (its CloudFormation logical id derives from it)."""
    setting: str
    """The `Settings` field (and `HandlerSettings` field, for the authorizer) naming the table: the stack sets
    `AGENT_MEMORY_<SETTING>` on every function that touches data."""
    partition_key: str
    access: tuple[Access, ...]
    time_to_live: str | None = None
    """The item attribute holding its expiry (DynamoDB TTL), if any."""


IDEMPOTENCY_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
"""Powertools idempotency records (the API and chat functions, with their own roles)."""
IDEMPOTENCY_PURGE_ACTIONS = ("dynamodb:Scan", "dynamodb:DeleteItem")
"""A purge's idempotency step (domain/erasure): find stored responses that name purged content, delete them
(the table is keyed by a hash, not by tenant, hence the Scan): inline in the API function, or in the purge
workflow's steps on the dreaming function."""

IDEMPOTENCY = Table(
    "Idempotency",
    setting="idempotency_table",
    partition_key="id",
    time_to_live="expiration",
    access=(
        Access("IdempotencyRecords", IDEMPOTENCY_ACTIONS, functions=("api", "chat")),
        Access("IdempotencyPurge", IDEMPOTENCY_PURGE_ACTIONS, functions=("api", "dreaming")),
    ),
)
API_KEYS = Table(
    "ApiKeys",
    setting="api_keys_table",
    partition_key="key_hash",
    access=(
        # The authorizer reads API keys by hash: GetItem only, and only decrypting with the key.
        Access(
            "ApiKeyLookup", ("dynamodb:GetItem",), functions=("authorizer",), key_actions=KEY_READ_ACTIONS
        ),
    ),
)
"""SHA-256 hashes of API keys and what each may do."""

TABLES: tuple[Table, ...] = (IDEMPOTENCY, API_KEYS)


S3_BUCKET_ACTIONS = frozenset(
    {"s3:ListBucket", "s3:ListBucketVersions", "s3:ListBucketMultipartUploads", "s3:GetBucketLocation"}
)
"""Calls on a bucket itself (granted on the bucket's ARN); every other `s3:` action is on its objects."""
TENANT_FUNCTIONS = ("api", "chat", "dreaming", "job_worker", "jobs", "migration")
"""The functions that may assume the tenant role (the stack's `tenant_functions`)."""


@dataclass(frozen=True)
class BucketAccess(Access):
    """One kind of call some functions make on a declared bucket."""

    prefix: str = ""
    """The keys the calls are confined to (`reports/`): the objects under it, and a listing only with an
    `s3:prefix` under it; empty: the whole bucket."""
    tenant: bool = False
    """Made with the tenant's session (the tenant role the functions assume: decision 0004) rather than the
    function's own role; the keys are then confined to `<tenant>/<prefix>` of the session's tenant, and the
    functions must be `TENANT_FUNCTIONS`."""

    @property
    def object_actions(self) -> tuple[str, ...]:
        return tuple(a for a in self.actions if a not in S3_BUCKET_ACTIONS)

    @property
    def bucket_actions(self) -> tuple[str, ...]:
        return tuple(a for a in self.actions if a in S3_BUCKET_ACTIONS)


@dataclass(frozen=True)
class Bucket(_Named):
    construct_id: str
    """The bucket's id under the `Buckets` construct (its CloudFormation logical id derives from it)."""
    setting: str
    """The `Settings` field naming the bucket: the stack sets `AGENT_MEMORY_<SETTING>` on every function an
    access names."""
    access: tuple[BucketAccess, ...]
    expire_days: int | None = None
    """Objects expire this many days after they are written (an S3 lifecycle rule); None: kept."""
    transient: bool = False
    """Its objects outlive no request or job (as staged job requests): deleted with the stack even when the
    deployment retains its data."""


BUCKETS: tuple[Bucket, ...] = ()
"""None yet: the two data buckets the service has (the migration archive, the staged job requests) predate the
declaration and are owned by their constructs (`migration_workflow.py`, `job_worker.py`). A new adapter's
bucket is declared here; `tests/infra/test_infra_declared_storage.py` deploys a throwaway one to prove the
path."""


@dataclass(frozen=True)
class Queue(_Named):
    """An SQS queue an adapter sends to or receives from, with its own role (`Access`: `sqs:` actions)."""

    construct_id: str
    """The queue's id under the `Queues` construct (its CloudFormation logical id derives from it)."""
    setting: str
    """The `Settings` field naming the queue (its URL): the stack sets `AGENT_MEMORY_<SETTING>` on every
    function an access names."""
    access: tuple[Access, ...]
    retention_days: int = 4
    visibility_timeout_seconds: int = 30
    max_receive_count: int = 3
    """Receives before a message moves to the queue's own dead-letter queue (kept 14 days)."""


QUEUES: tuple[Queue, ...] = ()
"""None yet: long work goes through Lambda's own asynchronous queue (decision 0008). A declared queue is built
by `infra/constructs/declared_queues.py` (encrypted with the stack's key, TLS only, its own dead-letter queue;
in the `isolated` profile the SQS interface endpoint is added); `tests/infra/test_infra_declared_storage.py`
deploys a throwaway one to prove the path."""


def accesses_of(function: str) -> tuple[tuple[Table, Access], ...]:
    """What `function` may do on the declared tables with its own role."""
    return tuple((t, a) for t in TABLES for a in t.access if function in a.functions)
