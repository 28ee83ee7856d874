"""The erasure wing's stores on the AWS runtime (DynamoDB memory table, idempotency table) and its purge ledger.

Every memory-table request uses the tenant's credentials (`dynamodb:LeadingKeys` confines it to `<t>#...`):
records are found through GSI2 (`<t>#REC`, `<t>#CHG`), recall entries in their namespace partitions
(`<t>#RCL#<ns>`), sessions open or ended through GSI1 (`<t>#SES`, `<t>#SESEND`), cached vectors by key in
`<t>#EMB#<fingerprint>` (BatchGetItem on the purged texts' hashes), and all are deleted with BatchWriteItem
(DeleteRequest). The idempotency table is keyed by a hash and read with the function's own role: a purge
scans it for stored responses that name the purge. Embedding-migration archives are rewritten in the archive
bucket with the tenant role (`S3VectorArchives`), import state through the import store (`ImportRows`).

| item       | pk                 | sk     | gsi2pk / gsi2sk                       |
|------------|--------------------|--------|---------------------------------------|
| purge plan | `<t>#PURGE#<id>`   | `PLAN` | `<t>#PURGE` / `<planned at>#<id>`     |
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from botocore.exceptions import ClientError

from ...domain.erasure.archives import ArchivePart
from ...domain.erasure.model import (
    EraseScope,
    PurgeKind,
    StoreFinding,
    is_tombstone,
)
from ...domain.migration.model import text_hash
from ...domain.sessions.ports import SessionStatus
from ...domain.sessions.sessions import snapshot_digest
from ._dynamo import dynamo_item, expr_values, read_text, until_processed, write_all
from ._errors import error_code, upstream_errors
from .migration import ARCHIVE_TAG
from .session_store import ENDED_LISTING, OPEN_LISTING

Item = dict[str, dict[str, Any]]
ClientFor = Callable[[str], Any]
_BATCH_WRITE = 25
_BATCH_GET = 100
"""BatchGetItem takes at most 100 keys (botocore's model: RequestItems / Keys max 100)."""
_GET_VECTORS_MAX = 100
"""S3 Vectors' GetVectors takes at most 100 keys."""


def _json(doc: str) -> dict[str, Any] | None:
    try:
        parsed = json.loads(doc)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


class _Table:
    def __init__(self, table: str, dynamodb: ClientFor) -> None:
        self.table = table
        self._dynamodb = dynamodb

    def client(self, tenant: str) -> Any:
        return self._dynamodb(tenant)

    def query(self, tenant: str, request: dict[str, Any]) -> Iterator[Item]:
        client = self.client(tenant)
        request = {"TableName": self.table, **request}
        while True:
            with upstream_errors("DynamoDB", "Query"):
                response = client.query(**request)
            for item in response.get("Items", []):
                if read_text(item, "pk", "").startswith(f"{tenant}#"):  # GSI items of this tenant only
                    yield item
            last = response.get("LastEvaluatedKey")
            if not last:
                return
            request["ExclusiveStartKey"] = last

    def gsi2(self, tenant: str, partition: str) -> Iterator[Item]:
        return self.query(
            tenant,
            {
                "IndexName": "gsi2",
                "KeyConditionExpression": "gsi2pk = :pk",
                "ExpressionAttributeValues": expr_values(pk=partition),
            },
        )

    def partition(self, tenant: str, pk: str) -> Iterator[Item]:
        return self.query(
            tenant,
            {
                "KeyConditionExpression": "pk = :pk",
                "ExpressionAttributeValues": expr_values(pk=pk),
                "ConsistentRead": True,
            },
        )

    def present(self, tenant: str, keys: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
        """Which of these keys have an item: BatchGetItem by key (at most 100 keys a call, no duplicates),
        keys only (ProjectionExpression), strongly consistent; unprocessed keys are asked again."""
        client = self.client(tenant)
        unique = list(dict.fromkeys(keys))
        found: list[tuple[str, str]] = []
        for start in range(0, len(unique), _BATCH_GET):
            request: dict[str, Any] = {
                self.table: {
                    "Keys": [dynamo_item(pk=pk, sk=sk) for pk, sk in unique[start : start + _BATCH_GET]],
                    "ProjectionExpression": "pk, sk",
                    "ConsistentRead": True,
                }
            }
            for response in until_processed(
                lambda pending: client.batch_get_item(RequestItems=pending),
                request,
                operation="BatchGetItem",
                advice="run the purge step again",
            ):
                found.extend(_key(item) for item in response.get("Responses", {}).get(self.table, []))
        return found

    def delete(self, tenant: str, keys: Sequence[tuple[str, str]]) -> None:
        client = self.client(tenant)
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), _BATCH_WRITE):
            request: dict[str, Any] = {
                self.table: [
                    {"DeleteRequest": {"Key": dynamo_item(pk=pk, sk=sk)}}
                    for pk, sk in unique[start : start + _BATCH_WRITE]
                ]
            }
            write_all(
                lambda pending: client.batch_write_item(RequestItems=pending),
                request,
                advice="execute the purge again to resume",
            )


def _key(item: Item) -> tuple[str, str]:
    return read_text(item, "pk"), read_text(item, "sk")


class DynamoRecordEraser:
    """Records (with their hash and conflict pointers), change entries and recall entries of one tenant."""

    name = "records"

    def __init__(self, table: str, dynamodb: ClientFor) -> None:
        self._t = _Table(table, dynamodb)

    def namespaces(self, tenant: str) -> list[str]:
        found = {
            read_text(item, "namespace")
            for item in self._t.gsi2(tenant, f"{tenant}#REC")
            if "namespace" in item
        }
        found |= {
            read_text(item, "namespace")
            for item in self._t.gsi2(tenant, f"{tenant}#CHG")
            if "namespace" in item
        }
        return sorted(found)

    def _scan(self, scope: EraseScope) -> tuple[list[str], list[tuple[str, str]]]:
        """(refs `<namespace>#<id>` of records, every item key to delete)."""
        t = scope.tenant
        ids = set(scope.record_ids)
        refs: list[str] = []
        keys: list[tuple[str, str]] = []
        for item in self._t.gsi2(t, f"{t}#REC"):
            record_id = read_text(item, "pk").rpartition("#REC#")[2]
            namespace = read_text(item, "namespace", "")
            doc = read_text(item, "doc", "")
            if not (
                record_id in ids
                or scope.in_scope_namespace(namespace)
                or (scope.kind is PurgeKind.SUBJECT and scope.names_record(_json(doc)))
            ):
                continue
            refs.append(f"{namespace}#{record_id}")
            keys.append(_key(item))
            try:
                body = json.loads(doc)
            except ValueError:
                body = {}
            if body.get("content_hash"):
                keys.append((f"{t}#HASH#{namespace}#{body['content_hash']}", f"REC#{record_id}"))
            if body.get("conflict_group"):
                keys.append((f"{t}#CONFLICT#{body['conflict_group']}", f"REC#{record_id}"))
        for item in self._t.gsi2(t, f"{t}#CHG"):
            record_id = read_text(item, "pk").rpartition("#CHG#")[2]
            namespace = read_text(item, "namespace", "")
            doc = read_text(item, "doc", "")
            if is_tombstone(doc):
                continue
            if record_id in ids or scope.in_scope_namespace(namespace) or scope.names_change(doc):
                refs.append(f"change:{read_text(item, 'sk')}")
                keys.append(_key(item))
        for namespace in sorted(set(self.namespaces(t)) | set(scope.namespaces)):
            for item in self._t.partition(t, f"{t}#RCL#{namespace}"):
                if scope.in_scope_namespace(namespace) or scope.names_recall(read_text(item, "doc", "")):
                    refs.append(f"recall:{read_text(item, 'sk')}")
                    keys.append(_key(item))
        return refs, keys

    def find(self, scope: EraseScope) -> StoreFinding:
        refs, _ = self._scan(scope)
        return StoreFinding(store=self.name, items=len(refs), refs=refs)

    def erase(self, scope: EraseScope, *, actor: str, reason: str, plan_id: str) -> int:
        refs, keys = self._scan(scope)
        self._t.delete(scope.tenant, keys)
        return len(refs)


class DynamoSessionEraser:
    """Sessions, open (GSI1 `<t>#SES`) or ended (`<t>#SESEND`), whose snapshot or turns name the purge:
    status `purged`, snapshot emptied, turns deleted (the next turn of an open one fails with
    `session_purged`), out of both listings. A tenant purge deletes them."""

    name = "sessions"

    def __init__(self, table: str, dynamodb: ClientFor) -> None:
        self._t = _Table(table, dynamodb)

    def _matching(self, scope: EraseScope) -> list[tuple[Item, list[Item]]]:
        t = scope.tenant
        found = []
        listed_keys: dict[str, None] = {}
        for suffix in (OPEN_LISTING, ENDED_LISTING):
            for listed in self._t.query(
                t,
                {
                    "IndexName": "gsi1",
                    "KeyConditionExpression": "gsi1pk = :pk",
                    "ExpressionAttributeValues": expr_values(pk=f"{t}#{suffix}"),
                    "ProjectionExpression": "pk",
                },
            ):
                listed_keys[read_text(listed, "pk")] = None  # a session ended during the listing: once
        for pk in listed_keys:
            items = list(self._t.partition(t, pk))
            session = next((i for i in items if read_text(i, "sk") == "SES"), None)
            if session is None:
                continue
            turns = [i for i in items if read_text(i, "sk").startswith("TURN#")]
            doc = read_text(session, "doc", "")
            namespace = read_text(session, "namespace", "")
            if (
                scope.whole_tenant
                or scope.in_scope_namespace(namespace)
                or scope.names(str((_json(doc) or {}).get("snapshot") or ""))
                or any(scope.names_json(read_text(turn, "doc", "")) for turn in turns)
            ):
                found.append((session, turns))
        return found

    def find(self, scope: EraseScope) -> StoreFinding:
        found = self._matching(scope)
        return StoreFinding(
            store=self.name, items=len(found), refs=[read_text(s, "pk").rpartition("#")[2] for s, _ in found]
        )

    def erase(self, scope: EraseScope, *, actor: str, reason: str, plan_id: str) -> int:
        found = self._matching(scope)
        t = scope.tenant
        client = self._t.client(t)
        for session, turns in found:
            self._t.delete(t, [_key(turn) for turn in turns])
            if scope.whole_tenant:
                self._t.delete(t, [_key(session)])
                continue
            doc = json.loads(read_text(session, "doc"))
            doc.update(status=SessionStatus.PURGED.value, snapshot="", snapshot_sha256=snapshot_digest(""))
            with upstream_errors("DynamoDB", "UpdateItem"):
                client.update_item(
                    TableName=self._t.table,
                    Key={"pk": session["pk"], "sk": session["sk"]},
                    UpdateExpression="SET #status = :purged, doc = :doc REMOVE gsi1pk, gsi1sk",
                    ExpressionAttributeNames={"#status": "status"},
                    ExpressionAttributeValues=expr_values(
                        purged=SessionStatus.PURGED.value, doc=json.dumps(doc)
                    ),
                )
        return len(found)


class DynamoEmbeddingCacheEraser:
    """Cached vectors of the purged texts (`<t>#EMB#<fingerprint>` / `<text sha256>`) in every fingerprint
    the tenant's embedding routing uses: read by key (the plan's text hashes), never the whole partition."""

    name = "embedding_cache"

    def __init__(self, table: str, dynamodb: ClientFor, fingerprints: Callable[[str], list[str]]) -> None:
        self._t = _Table(table, dynamodb)
        self._fingerprints = fingerprints

    def _matching(self, scope: EraseScope) -> list[tuple[str, str]]:
        t = scope.tenant
        hashes = sorted({text_hash(text) for text in scope.record_texts})
        if not hashes:
            return []
        keys = [(f"{t}#EMB#{fingerprint}", h) for fingerprint in self._fingerprints(t) for h in hashes]
        return sorted(self._t.present(t, keys))

    def find(self, scope: EraseScope) -> StoreFinding:
        found = self._matching(scope)
        return StoreFinding(
            store=self.name, items=len(found), refs=[f"{pk.rpartition('#EMB#')[2]}#{sk}" for pk, sk in found]
        )

    def erase(self, scope: EraseScope, *, actor: str, reason: str, plan_id: str) -> int:
        found = self._matching(scope)
        self._t.delete(scope.tenant, found)
        return len(found)


class DynamoIdempotencyEraser:
    """Powertools idempotency records (`id` = hash of tenant, operation and key; `data` = the stored
    response). Scanned with the function's role; a record whose response names the purge is deleted."""

    name = "idempotency"

    def __init__(self, table: str, client: Any) -> None:
        self._table = table
        self._client = client

    def _matching(self, scope: EraseScope) -> list[str]:
        found = []
        request: dict[str, Any] = {
            "TableName": self._table,
            "ProjectionExpression": "id, #d",
            "ExpressionAttributeNames": {"#d": "data"},
        }
        while True:
            with upstream_errors("DynamoDB", "Scan"):
                response = self._client.scan(**request)
            for item in response.get("Items", []):
                if scope.names_response(read_text(item, "data", "")):
                    found.append(read_text(item, "id"))
            last = response.get("LastEvaluatedKey")
            if not last:
                return found
            request["ExclusiveStartKey"] = last

    def find(self, scope: EraseScope) -> StoreFinding:
        found = self._matching(scope)
        return StoreFinding(store=self.name, items=len(found), refs=[f"key:{k[:16]}" for k in found])

    def erase(self, scope: EraseScope, *, actor: str, reason: str, plan_id: str) -> int:
        found = self._matching(scope)
        for key in found:
            with upstream_errors("DynamoDB", "DeleteItem"):
                self._client.delete_item(TableName=self._table, Key=dynamo_item(id=key))
        return len(found)


class DynamoSnapshotDeleter:
    """Deletes a named snapshot (`<t>#SNAP#<ns>` / name) and its payload parts (`<t>#SNAPDATA#<data_id>`),
    domain/versioning's items in the memory table."""

    def __init__(self, table: str, dynamodb: ClientFor) -> None:
        self._t = _Table(table, dynamodb)

    def delete_snapshot(self, tenant: str, namespace: str, name: str) -> bool:
        key = dynamo_item(pk=f"{tenant}#SNAP#{namespace}", sk=name)
        with upstream_errors("DynamoDB", "GetItem"):
            item = (
                self._t.client(tenant)
                .get_item(TableName=self._t.table, Key=key, ConsistentRead=True)
                .get("Item")
            )
        if item is None:
            return False
        parts = list(self._t.partition(tenant, f"{tenant}#SNAPDATA#{read_text(item, 'data_id')}"))
        # The snapshot item first: a snapshot without it is invisible; then its parts.
        self._t.delete(tenant, [(read_text(key, "pk"), name)])
        self._t.delete(tenant, [_key(part) for part in parts])
        return True


class S3VectorsIndexProbe:
    """Looks purged ids up (GetVectors, 100 keys a call) in every index the tenant's routing reads or writes:
    `mem-<t>` and, during an embedding migration, `mem-<t>.e<n>`."""

    def __init__(self, bucket: str, s3vectors: ClientFor, index_names: Callable[[str], list[str]]) -> None:
        self._bucket = bucket
        self._s3vectors = s3vectors
        self._index_names = index_names

    def present(self, tenant: str, record_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        client = self._s3vectors(tenant)
        ids = list(dict.fromkeys(record_ids))
        for name in self._index_names(tenant):
            for start in range(0, len(ids), _GET_VECTORS_MAX):
                try:
                    with upstream_errors("S3 Vectors", "GetVectors"):
                        response = client.get_vectors(
                            vectorBucketName=self._bucket,
                            indexName=name,
                            keys=ids[start : start + _GET_VECTORS_MAX],
                        )
                except ClientError as error:
                    if error_code(error) in ("NotFoundException", "NoSuchIndex"):
                        break  # no such index: nothing in it
                    raise
                found.update(vector["key"] for vector in response.get("vectors", []))
        return found


class S3VectorArchives:
    """Embedding-migration archives in the archive bucket (`<t>/<migration>/vectors-NNNNN.jsonl` and
    `manifest.json`, adapters/aws/migration.py), with the tenant role (its grants stop at the `<t>/` prefix):
    listed (ListObjectsV2 on the prefix), every part read (the lifecycle rule's Glacier Instant Retrieval reads
    like Standard; a part an older deployment moved to Glacier Flexible Retrieval answers `InvalidObjectState`:
    unreachable until restored), and rewritten with the export's tag (the lifecycle rule moves it again), a
    SHA-256 checksum S3 verifies, and the manifest's counts and hashes."""

    def __init__(self, bucket: str, s3: ClientFor) -> None:
        self._bucket = bucket
        self._s3 = s3

    def parts(self, tenant: str) -> Iterator[ArchivePart]:
        client = self._s3(tenant)
        request: dict[str, Any] = {"Bucket": self._bucket, "Prefix": f"{tenant}/"}
        while True:
            with upstream_errors("S3", "ListObjectsV2"):
                listing = client.list_objects_v2(**request)
            for entry in listing.get("Contents", []):
                key = str(entry["Key"])
                archive = key[len(tenant) + 1 :].partition("/")[0]
                if not key.endswith(".jsonl") or not archive:
                    continue
                try:
                    with upstream_errors("S3", "GetObject"):
                        body = client.get_object(Bucket=self._bucket, Key=key)["Body"].read()
                except ClientError as error:
                    if error_code(error) != "InvalidObjectState":
                        raise
                    yield ArchivePart(
                        archive, key, None, f"in {entry.get('StorageClass', 'GLACIER')}: restore it"
                    )
                    continue
                yield ArchivePart(archive, key, body.decode("utf-8").splitlines())
            if not listing.get("IsTruncated"):
                return
            request["ContinuationToken"] = listing["NextContinuationToken"]

    def rewrite(self, tenant: str, archive: str, parts: dict[str, list[str]], plan_id: str) -> None:
        client = self._s3(tenant)
        data = {
            key: ("\n".join(lines) + "\n").encode("utf-8") if lines else b"" for key, lines in parts.items()
        }
        digests = {
            key: base64.b64encode(hashlib.sha256(body).digest()).decode() for key, body in data.items()
        }
        # The manifest first: if the parts' rewrite is interrupted, they still hold purged lines, so the
        # resumed purge finds them and writes both again (the other order would leave a stale manifest).
        manifest_key = f"{tenant}/{archive}/manifest.json"
        try:
            with upstream_errors("S3", "GetObject"):
                manifest = json.loads(client.get_object(Bucket=self._bucket, Key=manifest_key)["Body"].read())
        except ClientError as error:
            if error_code(error) not in ("NoSuchKey", "404"):
                raise
            manifest = None  # an export interrupted before its manifest: only parts to rewrite
        if isinstance(manifest, dict):
            for entry in manifest.get("parts", []):
                if entry.get("key") in data:
                    entry["vectors"], entry["sha256"] = len(parts[entry["key"]]), digests[entry["key"]]
            manifest["vectors"] = sum(int(entry["vectors"]) for entry in manifest.get("parts", []))
            manifest["purges"] = list(dict.fromkeys([*manifest.get("purges", []), plan_id]))
            with upstream_errors("S3", "PutObject"):
                client.put_object(
                    Bucket=self._bucket,
                    Key=manifest_key,
                    Body=json.dumps(manifest, indent=2).encode(),
                    ContentType="application/json",
                )
        for key, body in data.items():
            with upstream_errors("S3", "PutObject"):
                client.put_object(
                    Bucket=self._bucket,
                    Key=key,
                    Body=body,
                    ContentType="application/x-ndjson",
                    ChecksumSHA256=digests[key],
                    Tagging=ARCHIVE_TAG,
                )


def dynamo_purge_ledger(table: str, dynamodb: ClientFor) -> Any:
    """The purge ledger on the memory table (tenant credentials), read through this module's table helper."""
    from .purge_ledger import DynamoPurgeLedger  # it reads the table through `_Table` (defined above)

    return DynamoPurgeLedger(_Table(table, dynamodb))
