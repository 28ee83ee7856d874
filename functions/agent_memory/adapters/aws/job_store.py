"""`JobStore` in the MemoryTable, its large payloads staged in S3 (the AWS job path, issue 29).

| item | pk               | sk    | other attributes |
|------|------------------|-------|------------------|
| job  | `<t>#JOB#<id>`   | `JOB` | `doc` (the job's JSON), `status`, `gsi2pk` = `<t>#JOB`, `gsi2sk` = `<created>#<id>`, `expires_at` (TTL), and its payload: `payload` (inline, up to `INLINE_PAYLOAD_BYTES`) or `staged` (the S3 key) |

The payload (what the job is to do: the route's request, JSON) is kept until the job finishes, then removed:
inline in the item when small, else staged as one object `<t>/jobs/<id>.json` in the staging bucket (SSE-KMS
by the bucket's default key, and a lifecycle rule that expires what a lost job left). Both the table and the
bucket are reached with the tenant's credentials (session tag `tenant=<t>`): the tenant role allows item
actions only on `<t>#` keys and objects only under `<t>/`, so a job of one tenant cannot read another
tenant's job or payload even through a bug that built the other's key.

The job item expires (DynamoDB TTL `expires_at`) `RETENTION` after it finishes, and at the latest
`UNFINISHED_TTL` after it was created. Jobs are listed per tenant only (Query GSI2 `<t>#JOB`): the AWS runtime
never scans, and each job runs from its own Lambda event, so `unfinished` and `queued()` of every tenant (the
local worker's loop) are refused here.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from ...domain.erasure.model import EraseScope, StoreFinding
from ...domain.errors import Misconfigured
from ...domain.jobs.model import Job, JobStatus
from ...domain.jobs.service import RETENTION
from ._dynamo import dynamo_item, expr_values, read_text, tenant_client
from ._errors import error_code, upstream_errors

ClientFactory = Callable[[str], Any]

INLINE_PAYLOAD_BYTES = 128 * 1024
"""A payload up to this size stays in the job item (DynamoDB items hold 400 KB); a larger one (an archive
import: up to 4 MiB, base64) is staged in S3."""
UNFINISHED_TTL = timedelta(days=2)
"""A job that never finishes (its events all lost) is forgotten after this; its staged object expires with
the bucket's lifecycle rule (`infra/constructs/job_worker.py`: one day)."""
_UNFINISHED = (JobStatus.QUEUED, JobStatus.RUNNING)


def staged_key(tenant: str, job_id: str) -> str:
    return f"{tenant}/jobs/{job_id}.json"


class DynamoJobStore:
    def __init__(
        self, table: str, dynamodb: ClientFactory, staging_bucket: str = "", s3: ClientFactory | None = None
    ) -> None:
        """`dynamodb`, `s3`: tenant → a client on that tenant's credentials. Without a staging bucket a payload
        over `INLINE_PAYLOAD_BYTES` is refused (Misconfigured) rather than cut."""
        self._table, self._dynamodb = table, dynamodb
        self._bucket, self._s3 = staging_bucket, s3

    def _db(self, tenant: str) -> Any:
        return tenant_client(self._dynamodb, tenant)

    def _item(self, job: Job) -> dict[str, Any]:
        done = job.finished_at
        expires = done + RETENTION if done else job.created_at + UNFINISHED_TTL
        return dynamo_item(
            pk=f"{job.tenant}#JOB#{job.id}",
            sk="JOB",
            gsi2pk=f"{job.tenant}#JOB",
            gsi2sk=f"{job.created_at.isoformat()}#{job.id}",
            kind="job",
            status=job.status.value,
            doc=job.model_dump_json(),
            expires_at=int(expires.timestamp()),
            lease_until=_lease(job),
        )

    def save(self, job: Job, payload: str | None = None) -> None:
        """The first save (with `payload`) writes the item with its payload inline or staged; a later save
        keeps the payload while the job is unfinished, and removes it (and the staged object) once finished."""
        item = self._item(job)
        if payload is not None:
            item |= self._stage(job, payload)
            with upstream_errors("DynamoDB", "PutItem"):
                self._db(job.tenant).put_item(TableName=self._table, Item=item)
            return
        finished = job.status not in _UNFINISHED
        names = ("status", "doc", "expires_at", "lease_until")
        update = "SET " + ", ".join(f"#{n} = :{n}" for n in names)
        if finished:
            update += " REMOVE payload"
        with upstream_errors("DynamoDB", "UpdateItem"):
            response = self._db(job.tenant).update_item(
                TableName=self._table,
                Key=self._key(job.tenant, job.id),
                UpdateExpression=update,
                ExpressionAttributeNames={f"#{n}": n for n in names},
                ExpressionAttributeValues={f":{n}": item[n] for n in names},
                ReturnValues="ALL_OLD",
            )
        staged = read_text(response.get("Attributes", {}), "staged", None)
        if finished and staged:
            self._unstage(job.tenant, staged)

    def _stage(self, job: Job, payload: str) -> dict[str, Any]:
        data = payload.encode("utf-8")
        if len(data) <= INLINE_PAYLOAD_BYTES:
            return dynamo_item(payload=payload)
        if not self._bucket or self._s3 is None:
            raise Misconfigured(
                f"a job's request of {len(data):,} bytes needs the job staging bucket "
                "(AGENT_MEMORY_JOB_STAGING_BUCKET), which this deployment does not set"
            )
        key = staged_key(job.tenant, job.id)
        with upstream_errors("S3", "PutObject"):
            tenant_client(self._s3, job.tenant).put_object(
                Bucket=self._bucket, Key=key, Body=data, ContentType="application/json"
            )
        return dynamo_item(staged=key)

    def _unstage(self, tenant: str, key: str) -> None:
        if self._s3 is None:
            return
        with upstream_errors("S3", "DeleteObject"):
            tenant_client(self._s3, tenant).delete_object(Bucket=self._bucket, Key=key)

    @staticmethod
    def _key(tenant: str, job_id: str) -> dict[str, Any]:
        return dynamo_item(pk=f"{tenant}#JOB#{job_id}", sk="JOB")

    def claim(self, job: Job, *, lease_expired_at: datetime | None = None) -> bool:
        """Conditional on the stored status: `queued`, or `running` with a lease that ended before
        `lease_expired_at` (the lease is in `lease_until`, fixed-width UTC text: text order is time order)."""
        condition, values = "#status = :queued", expr_values(queued=JobStatus.QUEUED.value)
        if lease_expired_at is not None:
            condition += " OR (#status = :running AND lease_until < :now)"
            values |= expr_values(running=JobStatus.RUNNING.value, now=_when(lease_expired_at))
        try:
            with upstream_errors("DynamoDB", "UpdateItem"):
                self._db(job.tenant).update_item(
                    TableName=self._table,
                    Key=self._key(job.tenant, job.id),
                    UpdateExpression="SET #status = :new, doc = :doc, lease_until = :lease",
                    ConditionExpression=condition,
                    ExpressionAttributeNames={"#status": "status"},
                    ExpressionAttributeValues=values
                    | expr_values(new=job.status.value, doc=job.model_dump_json(), lease=_lease(job)),
                )
        except ClientError as error:
            if error_code(error) != "ConditionalCheckFailedException":
                raise
            return False
        return True

    def _read(self, tenant: str, job_id: str) -> dict[str, Any] | None:
        with upstream_errors("DynamoDB", "GetItem"):
            response = self._db(tenant).get_item(
                TableName=self._table, Key=self._key(tenant, job_id), ConsistentRead=True
            )
        item = response.get("Item")
        return dict(item) if item else None

    def get(self, tenant: str, job_id: str) -> Job | None:
        item = self._read(tenant, job_id)
        return Job.model_validate_json(read_text(item, "doc")) if item else None

    def payload(self, tenant: str, job_id: str) -> str | None:
        item = self._read(tenant, job_id)
        if item is None:
            return None
        inline = read_text(item, "payload", None)
        if inline is not None:
            return str(inline)
        staged = read_text(item, "staged", None)
        if not staged or self._s3 is None or staged != staged_key(tenant, job_id):
            return None
        try:
            with upstream_errors("S3", "GetObject"):
                body = tenant_client(self._s3, tenant).get_object(Bucket=self._bucket, Key=staged)["Body"]
        except ClientError as error:
            if error_code(error) in ("NoSuchKey", "404"):
                return None  # expired by the lifecycle rule: the job reports its request gone
            raise
        return str(body.read().decode("utf-8"))

    def delete(self, tenant: str, job_id: str) -> None:
        item = self._read(tenant, job_id)
        if item is None:
            return
        staged = read_text(item, "staged", None)
        if staged:
            self._unstage(tenant, staged)
        with upstream_errors("DynamoDB", "DeleteItem"):
            self._db(tenant).delete_item(TableName=self._table, Key=self._key(tenant, job_id))

    def queued(self, tenant: str | None = None) -> list[Job]:
        """The tenant's queued jobs, oldest first (Query GSI2 `<t>#JOB`, eventually consistent)."""
        if tenant is None:
            raise Misconfigured("the AWS job store lists one tenant's jobs at a time (no scan)")
        jobs = [Job.model_validate_json(read_text(item, "doc")) for item in self.items(tenant, queued=True)]
        return sorted((j for j in jobs if j.tenant == tenant), key=lambda j: (j.created_at, j.id))

    def items(self, tenant: str, *, queued: bool = False) -> list[dict[str, Any]]:
        """The tenant's job items (Query GSI2 `<t>#JOB`, eventually consistent), only the queued ones if
        asked."""
        request: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": "gsi2",
            "KeyConditionExpression": "gsi2pk = :pk",
            "ExpressionAttributeValues": expr_values(pk=f"{tenant}#JOB"),
        }
        if queued:
            request["FilterExpression"] = "#status = :queued"
            request["ExpressionAttributeNames"] = {"#status": "status"}
            request["ExpressionAttributeValues"] |= expr_values(queued=JobStatus.QUEUED.value)
        items: list[dict[str, Any]] = []
        while True:
            with upstream_errors("DynamoDB", "Query"):
                response = self._db(tenant).query(**request)
            items += [i for i in response.get("Items", []) if read_text(i, "pk", "").startswith(f"{tenant}#")]
            if not response.get("LastEvaluatedKey"):
                return items
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def content(self, tenant: str, job_id: str) -> str | None:
        """What a job of `tenant` holds (its body, with its result, and its request), as stored now
        (consistent read by key); None once it is gone."""
        item = self._read(tenant, job_id)
        if item is None:
            return None
        return read_text(item, "doc", "") + (self.payload(tenant, job_id) or "")

    def unfinished(self) -> list[Job]:
        raise Misconfigured(
            "the AWS job store does not list every tenant's jobs: each job runs from its own Lambda event, and "
            "a lost invocation's lease expires instead"
        )

    def prune(self, finished_before: datetime) -> int:
        """Nothing to do: DynamoDB's TTL (`expires_at`) forgets finished jobs `RETENTION` after they end."""
        return 0


def _when(moment: datetime) -> str:
    """Fixed-width UTC text, so that DynamoDB's string comparison is time order."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _lease(job: Job) -> str:
    return _when(job.lease_until) if job.lease_until else ""


class DynamoJobEraser:
    """The purge's view of the jobs (domain/erasure `ContentStore`), as `SqliteJobEraser` locally: a finished
    job's `result` is the route's answer (the memories a batch wrote, an import's report) and an unfinished
    one's request is what it is to write, so both hold content. A job of the tenant whose body or request
    names the purge is deleted with its staged request (GET /v1/jobs/{id} then answers 404; a job function
    still running it never writes it back: `JobService._save`)."""

    name = "jobs"

    def __init__(self, store: DynamoJobStore) -> None:
        self._store = store

    def _matching(self, scope: EraseScope) -> list[str]:
        found = []
        for item in self._store.items(scope.tenant):
            job_id = read_text(item, "pk").rpartition("#JOB#")[2]
            held = self._store.content(scope.tenant, job_id)  # the index may lag behind a deletion
            if held is not None and scope.names_response(held):
                found.append(job_id)
        return sorted(found)

    def find(self, scope: EraseScope) -> StoreFinding:
        found = self._matching(scope)
        return StoreFinding(store=self.name, items=len(found), refs=[f"job:{j}" for j in found])

    def erase(self, scope: EraseScope, *, actor: str, reason: str, plan_id: str) -> int:
        found = self._matching(scope)
        for job_id in found:
            self._store.delete(scope.tenant, job_id)
        return len(found)
