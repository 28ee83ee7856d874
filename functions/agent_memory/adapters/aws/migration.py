"""The embedding migration's AWS adapters.

- `DynamoMigrationStore` — on the memory table (every partition key starts with `<tenant>#`, so the tenant
  role's `dynamodb:LeadingKeys` confines it):

  | item          | pk                         | sk              |
  |---------------|----------------------------|-----------------|
  | migration     | `<t>#MIG`                  | `<migration id>` (sortable: the latest is the last) |
  | open marker   | `<t>#MIG`                  | `OPEN`          |
  | dead letter   | `<t>#MIGDLQ#<migration id>`| `<record id>`   |
  | cache vector  | `<t>#EMB#<fingerprint>`    | `<text sha256>` (binary float32, TTL `expires_at`) |

  `create` puts the migration and the `OPEN` marker in one transaction, the marker conditional on not
  existing (one open migration per tenant); `save` is a PutItem conditional on the stored version and state,
  and a save into a finished state also deletes the marker, in the same transaction.
- `S3VectorsIndexCatalog` — the tenant's indexes by name: "" is `mem-<tenant>`, a migration's target is
  `mem-<tenant>.<name>` (a dot: tenant ids never hold one, so IAM can grant `mem-${tenant}.*`; created by the migration with the tenant role, never by `cdk deploy`); `count` pages
  ListVectors (keys only), `export` pages ListVectors with data and metadata into JSON-lines parts in the
  archive bucket (`<tenant>/<migration>/vectors-NNNNN.jsonl`, tagged for the Glacier lifecycle rule, each put
  with a SHA-256 checksum S3 verifies) and a `manifest.json`; the read-back re-reads the manifest and every
  part, comparing each part's SHA-256 and line count with the manifest's. `drop` is DeleteIndex.
- The backfill is started by `stepfunctions.StepFunctionsLauncher` (with the API function's own role).
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from botocore.exceptions import ClientError

from ...domain.errors import ConcurrentModification, Conflict
from ...domain.migration.model import FINISHED, ArchiveReceipt, DeadLetter, Migration, MigrationState
from ...domain.ports import SearchIndex, Vector
from ...domain.records import EmbedderIdentity
from ._dynamo import attr, dynamo_item, expr_values, read_binary, read_text, until_processed, write_all
from ._errors import error_code, upstream_errors
from .s3vectors_index import S3VectorsIndex

ClientFor = Callable[[str], Any]
"""tenant -> boto3 client with the tenant's credentials."""

CACHE_TTL_DAYS = 30
_BATCH_GET = 100
_BATCH_WRITE = 25


class DynamoMigrationStore:
    def __init__(self, table: str, dynamodb: ClientFor) -> None:
        self._table = table
        self._client = dynamodb

    def latest(self, tenant: str) -> Migration | None:
        with upstream_errors("DynamoDB", "Query"):
            found = self._client(tenant).query(
                TableName=self._table,
                KeyConditionExpression="pk = :pk AND begins_with(sk, :mig)",
                ExpressionAttributeValues=expr_values(pk=f"{tenant}#MIG", mig="mig_"),
                ScanIndexForward=False,
                Limit=1,
                ConsistentRead=True,
            )
        items = found.get("Items", [])
        return Migration.model_validate_json(read_text(items[0], "doc")) if items else None

    def _item(self, migration: Migration) -> dict[str, Any]:
        return dynamo_item(
            pk=f"{migration.tenant}#MIG",
            sk=migration.id,
            kind="migration",
            state=migration.state.value,
            version=migration.version,
            doc=migration.model_dump_json(),
        )

    def create(self, migration: Migration) -> None:
        tenant = migration.tenant
        try:
            with upstream_errors("DynamoDB", "TransactWriteItems"):
                self._client(tenant).transact_write_items(
                    TransactItems=[
                        {
                            "Put": {
                                "TableName": self._table,
                                "Item": dynamo_item(
                                    pk=f"{tenant}#MIG",
                                    sk="OPEN",
                                    kind="migration-open",
                                    migration_id=migration.id,
                                ),
                                "ConditionExpression": "attribute_not_exists(pk)",
                            }
                        },
                        {
                            "Put": {
                                "TableName": self._table,
                                "Item": self._item(migration),
                                "ConditionExpression": "attribute_not_exists(pk)",
                            }
                        },
                    ]
                )
        except ClientError as error:
            if error_code(error) == "TransactionCanceledException":
                raise Conflict(f"tenant {tenant!r} already has an unfinished embedding migration") from None
            raise

    def save(self, migration: Migration, *, expected_version: int, expected_state: MigrationState) -> None:
        put = {
            "TableName": self._table,
            "Item": self._item(migration),
            "ConditionExpression": "version = :v AND #state = :s",
            "ExpressionAttributeNames": {"#state": "state"},
            "ExpressionAttributeValues": expr_values(v=expected_version, s=expected_state.value),
        }
        client = self._client(migration.tenant)
        try:
            if migration.state in FINISHED and expected_state not in FINISHED:
                with upstream_errors("DynamoDB", "TransactWriteItems"):
                    client.transact_write_items(
                        TransactItems=[
                            {"Put": put},
                            {
                                "Delete": {
                                    "TableName": self._table,
                                    "Key": dynamo_item(pk=f"{migration.tenant}#MIG", sk="OPEN"),
                                }
                            },
                        ]
                    )
            else:
                with upstream_errors("DynamoDB", "PutItem"):
                    client.put_item(**put)
        except ClientError as error:
            if error_code(error) in ("ConditionalCheckFailedException", "TransactionCanceledException"):
                raise ConcurrentModification(f"migration {migration.id} changed meanwhile") from None
            raise

    def add_dead_letters(self, tenant: str, migration_id: str, letters: Sequence[DeadLetter]) -> None:
        items = [
            {
                "PutRequest": {
                    "Item": dynamo_item(
                        pk=f"{tenant}#MIGDLQ#{migration_id}",
                        sk=letter.record_id,
                        doc=letter.model_dump_json(),
                    )
                }
            }
            for letter in {letter.record_id: letter for letter in letters}.values()
        ]
        self._batch_write(tenant, items)

    def _batch_write(self, tenant: str, requests: list[dict[str, Any]]) -> None:
        client = self._client(tenant)
        for start in range(0, len(requests), _BATCH_WRITE):
            write_all(
                lambda pending: client.batch_write_item(RequestItems=pending),
                {self._table: requests[start : start + _BATCH_WRITE]},
                advice="retry (the migration's checkpoint is kept)",
            )

    def _dead_letter_items(self, tenant: str, migration_id: str, limit: int | None) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        params: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": expr_values(pk=f"{tenant}#MIGDLQ#{migration_id}"),
            "ConsistentRead": True,
        }
        while True:
            if limit is not None:
                params["Limit"] = limit - len(items)
            with upstream_errors("DynamoDB", "Query"):
                page = self._client(tenant).query(**params)
            items.extend(page.get("Items", []))
            last = page.get("LastEvaluatedKey")
            if not last or (limit is not None and len(items) >= limit):
                return items
            params["ExclusiveStartKey"] = last

    def dead_letters(self, tenant: str, migration_id: str, limit: int = 100) -> list[DeadLetter]:
        return [
            DeadLetter.model_validate_json(read_text(item, "doc"))
            for item in self._dead_letter_items(tenant, migration_id, limit)
        ]

    def count_dead_letters(self, tenant: str, migration_id: str) -> int:
        return len(self._dead_letter_items(tenant, migration_id, None))

    def remove_dead_letters(self, tenant: str, migration_id: str, record_ids: Sequence[str]) -> None:
        self._batch_write(
            tenant,
            [
                {"DeleteRequest": {"Key": dynamo_item(pk=f"{tenant}#MIGDLQ#{migration_id}", sk=record_id)}}
                for record_id in dict.fromkeys(record_ids)
            ],
        )


class DynamoEmbeddingCache:
    """Vectors as float32 bytes, one item per (tenant, fingerprint, text hash), expiring after 30 days."""

    def __init__(self, table: str, dynamodb: ClientFor, clock: Callable[[], float] = time.time) -> None:
        self._table = table
        self._client = dynamodb
        self._now = clock

    def get_many(self, tenant: str, fingerprint: str, hashes: Sequence[str]) -> dict[str, Vector]:
        found: dict[str, Vector] = {}
        pk = attr(f"{tenant}#EMB#{fingerprint}")
        client = self._client(tenant)
        unique = list(dict.fromkeys(hashes))
        for start in range(0, len(unique), _BATCH_GET):
            keys: list[dict[str, Any]] = [
                {"pk": pk, "sk": attr(h)} for h in unique[start : start + _BATCH_GET]
            ]
            for answer in until_processed(
                lambda pending: client.batch_get_item(RequestItems=pending),
                {self._table: {"Keys": keys}},
                operation="BatchGetItem",
                advice="retry (the migration's checkpoint is kept)",
            ):
                for item in answer.get("Responses", {}).get(self._table, []):
                    found[read_text(item, "sk")] = _unpack(read_binary(item, "vector"))
        return found

    def put_many(self, tenant: str, fingerprint: str, vectors: dict[str, Vector]) -> None:
        expires = int(self._now()) + CACHE_TTL_DAYS * 86_400
        requests = [
            {
                "PutRequest": {
                    "Item": dynamo_item(
                        pk=f"{tenant}#EMB#{fingerprint}", sk=h, vector=_pack(v), expires_at=expires
                    )
                }
            }
            for h, v in vectors.items()
        ]
        DynamoMigrationStore(self._table, self._client)._batch_write(tenant, requests)


def _pack(vector: Vector) -> bytes:
    """Little-endian float32 (the Lambda layer has no numpy: the struct module does this exactly)."""
    return struct.pack(f"<{len(vector)}f", *vector)


def _unpack(data: bytes) -> Vector:
    return list(struct.unpack(f"<{len(data) // 4}f", data))


EXPORT_PART_VECTORS = 5_000
ARCHIVE_TAG = "agent-memory-archive=vectors"
"""The tag the archive bucket's lifecycle rule moves to Glacier Instant Retrieval (the manifest stays in Standard)."""


class S3VectorsIndexCatalog:
    def __init__(
        self,
        original: S3VectorsIndex,
        build: Callable[[str], S3VectorsIndex],
        s3: ClientFor,
        archive_bucket: str,
    ) -> None:
        """`build(suffix)` makes an `S3VectorsIndex` over `mem-<tenant><suffix>` (same bucket and client)."""
        self._indexes: dict[str, S3VectorsIndex] = {"": original}
        self._build = build
        self._s3 = s3
        self._archive_bucket = archive_bucket
        self._lock = threading.Lock()

    def _named(self, name: str) -> S3VectorsIndex:
        with self._lock:
            index = self._indexes.get(name)
            if index is None:
                if not name.isalnum() or not name.islower():
                    raise ValueError(f"invalid index name {name!r}")
                index = self._indexes[name] = self._build(f".{name}")
            return index

    def index(self, name: str) -> SearchIndex:
        return self._named(name)

    def create(self, tenant: str, name: str, identity: EmbedderIdentity) -> None:
        self._named(name).ensure_tenant(tenant, identity)

    def count(self, tenant: str, name: str) -> int:
        return self._named(name).count(tenant)

    def drop(self, tenant: str, name: str) -> None:
        self._named(name).drop_index(tenant)

    def export(self, tenant: str, name: str, migration_id: str) -> ArchiveReceipt:
        if not self._archive_bucket:
            raise Conflict("no archive bucket is configured (AGENT_MEMORY_MIGRATION_ARCHIVE_BUCKET)")
        index = self._named(name)
        prefix = f"{tenant}/{migration_id}/"
        s3 = self._s3(tenant)
        parts: list[dict[str, Any]] = []
        lines: list[str] = []

        def flush() -> None:
            if not lines:
                return
            body = ("\n".join(lines) + "\n").encode("utf-8")
            digest = hashlib.sha256(body).digest()
            key = f"{prefix}vectors-{len(parts):05d}.jsonl"
            with upstream_errors("S3", "PutObject"):
                s3.put_object(
                    Bucket=self._archive_bucket,
                    Key=key,
                    Body=body,
                    ContentType="application/x-ndjson",
                    ChecksumSHA256=base64.b64encode(digest).decode(),
                    Tagging=ARCHIVE_TAG,
                )
            parts.append({"key": key, "vectors": len(lines), "sha256": base64.b64encode(digest).decode()})
            lines.clear()

        for vector in index.iter_vectors(tenant, with_data=True):
            lines.append(
                json.dumps(
                    {"key": vector["key"], "data": vector.get("data"), "metadata": vector.get("metadata")}
                )
            )
            if len(lines) >= EXPORT_PART_VECTORS:
                flush()
        flush()
        total = sum(int(part["vectors"]) for part in parts)
        export_id = uuid.uuid4().hex
        manifest = {
            "tenant": tenant,
            "index": index.index_name(tenant),
            "migration": migration_id,
            "vectors": total,
            "parts": parts,
            "export_id": export_id,
        }
        manifest_key = f"{prefix}manifest.json"
        with upstream_errors("S3", "PutObject"):
            s3.put_object(
                Bucket=self._archive_bucket,
                Key=manifest_key,
                Body=json.dumps(manifest, indent=2).encode(),
                ContentType="application/json",
            )
        return ArchiveReceipt(
            location=f"s3://{self._archive_bucket}/{prefix}",
            manifest=f"s3://{self._archive_bucket}/{manifest_key}",
            vectors=total,
            verified_count=self._verify(s3, manifest_key, export_id),
        )

    def _verify(self, s3: Any, manifest_key: str, export_id: str) -> int:
        """Re-read the stored manifest and every part it lists (right after writing them: the lifecycle rule
        moves parts to Glacier at the next transition run, not at once): the count it lists when every part is
        there with the SHA-256 and the number of lines the manifest names, -1 otherwise."""
        with upstream_errors("S3", "GetObject"):
            stored = json.loads(s3.get_object(Bucket=self._archive_bucket, Key=manifest_key)["Body"].read())
        if stored.get("export_id") != export_id:
            return -1
        count = 0
        for part in stored["parts"]:
            try:
                with upstream_errors("S3", "GetObject"):
                    body = s3.get_object(Bucket=self._archive_bucket, Key=part["key"])["Body"].read()
            except ClientError:
                return -1
            if base64.b64encode(hashlib.sha256(body).digest()).decode() != part["sha256"]:
                return -1
            if len(body.decode("utf-8").splitlines()) != part["vectors"]:
                return -1
            count += int(part["vectors"])
        return count if count == stored["vectors"] else -1


def drift_metric(namespace: str) -> Callable[[str, str, str], None]:
    """The drift guard's meter: one `EmbedderDriftRefusals` count (CloudWatch EMF, dimension `service`) per
    refused comparison; the fingerprints go to the log, never to a dimension (unbounded cardinality)."""
    import logging

    from aws_lambda_powertools.metrics import MetricUnit, single_metric

    log = logging.getLogger(__name__)

    def meter(tenant: str, index_fingerprint: str, given: str) -> None:
        log.warning("drift guard refused %s vectors against %s (tenant %s)", given, index_fingerprint, tenant)
        with single_metric(
            name="EmbedderDriftRefusals", unit=MetricUnit.Count, value=1, namespace=namespace
        ) as metric:
            metric.add_dimension(name="service", value="migration")

    return meter


def titan_embedders(client: Any) -> Callable[[str], Any]:
    """Embedders from migration target specs: `<bedrock model id>@<dimensions>` (e.g.
    `amazon.titan-embed-text-v2:0@512`), or a model id alone for 1,024 dimensions."""
    from .bedrock import TitanEmbedder

    def build(spec: str) -> Any:
        model_id, _, dims = spec.rpartition("@") if "@" in spec else (spec, "", "1024")
        if not model_id or not dims.isdigit():
            raise ValueError(f"embedder spec must be <model id>@<dimensions>; got {spec!r}")
        return TitanEmbedder(client, model_id=model_id, dimensions=int(dims))

    return build
