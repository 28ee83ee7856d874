"""`SnapshotStore` and `ReferenceStore` (domain/versioning) in the MemoryTable.

| item           | pk                          | sk             | other attributes                               |
|----------------|-----------------------------|----------------|------------------------------------------------|
| snapshot       | `<t>#SNAP#<namespace>`      | `<name>`       | `meta` (JSON), `data_id`, `parts`              |
| snapshot part  | `<t>#SNAPDATA#<data_id>`    | `PART#<00000>` | `data` (binary, ≤ 300 KB of the `.tar.gz`)     |
| session uses   | `<t>#REFS#<namespace>`      | `<sha256>`     | `sessions` (number, atomic ADD)                |
| review         | `<t>#REVIEW`                | `<record id>`  | `reviewed_at` (ISO 8601)                       |

- Every partition key starts with `<t>#`: the tenant role's `dynamodb:LeadingKeys` condition confines each call
  to the caller's tenant, with the grants the record store already has (GetItem, PutItem, Query, UpdateItem
  also inside TransactWriteItems, DeleteItem, BatchGetItem); no new permission.
- A snapshot's payload is cut into parts under DynamoDB's 400 KB item limit. The parts are written first under
  a fresh `data_id`, then the snapshot item, conditioned on its name being free: a snapshot is visible only
  once whole, and a name is never reused (the loser's parts are deleted).
- Reads are strongly consistent.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from ...domain.errors import Conflict, ValidationFailed
from ...domain.versioning.ports import SnapshotMeta
from ._dynamo import dynamo_item, expr_values, read_binary, read_number, read_text, tenant_client
from ._errors import error_code, upstream_errors

PART_BYTES = 300_000
"""Bytes of payload per item, well under DynamoDB's 400 KB item limit with the keys."""
_BATCH_GET_MAX = 100
_TRANSACTION_MAX = 100

DynamoClientFactory = Callable[[str], Any]


class DynamoVersioningStore:
    def __init__(self, table_name: str, client_factory: DynamoClientFactory) -> None:
        self._table = table_name
        self._client_factory = client_factory

    def _client(self, tenant: str) -> Any:
        return tenant_client(self._client_factory, tenant)

    def _query(self, client: Any, pk: str) -> list[dict[str, Any]]:
        request: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": expr_values(pk=pk),
            "ConsistentRead": True,
        }
        items: list[dict[str, Any]] = []
        while True:
            with upstream_errors("DynamoDB", "Query"):
                response = client.query(**request)
            items.extend(response.get("Items", []))
            last = response.get("LastEvaluatedKey")
            if not last:
                return items
            request["ExclusiveStartKey"] = last

    # ------------------------------------------------------------------ snapshots

    def put(self, tenant: str, meta: SnapshotMeta, payload: bytes) -> None:
        client = self._client(tenant)
        data_id = uuid.uuid4().hex
        parts = [payload[start : start + PART_BYTES] for start in range(0, len(payload), PART_BYTES)] or [b""]
        data_pk = f"{tenant}#SNAPDATA#{data_id}"
        for number, part in enumerate(parts):
            with upstream_errors("DynamoDB", "PutItem"):
                client.put_item(
                    TableName=self._table,
                    Item=dynamo_item(pk=data_pk, sk=f"PART#{number:05d}", data=part),
                )
        try:
            with upstream_errors("DynamoDB", "PutItem"):
                client.put_item(
                    TableName=self._table,
                    Item=dynamo_item(
                        pk=f"{tenant}#SNAP#{meta.namespace}",
                        sk=meta.name,
                        meta=meta.model_dump_json(),
                        data_id=data_id,
                        parts=len(parts),
                    ),
                    ConditionExpression="attribute_not_exists(pk)",
                )
        except ClientError as error:
            if error_code(error) != "ConditionalCheckFailedException":
                raise
            for number in range(len(parts)):
                with upstream_errors("DynamoDB", "DeleteItem"):
                    client.delete_item(
                        TableName=self._table, Key=dynamo_item(pk=data_pk, sk=f"PART#{number:05d}")
                    )
            raise Conflict(
                f"namespace {meta.namespace} already has a snapshot named {meta.name!r}; snapshots are "
                "immutable: choose another name",
                snapshot=meta.name,
            ) from error

    def get(self, tenant: str, namespace: str, name: str) -> tuple[SnapshotMeta, bytes] | None:
        client = self._client(tenant)
        with upstream_errors("DynamoDB", "GetItem"):
            item = client.get_item(
                TableName=self._table,
                Key=dynamo_item(pk=f"{tenant}#SNAP#{namespace}", sk=name),
                ConsistentRead=True,
            ).get("Item")
        if item is None:
            return None
        parts = self._query(client, f"{tenant}#SNAPDATA#{read_text(item, 'data_id')}")
        parts.sort(key=lambda part: read_text(part, "sk"))
        if len(parts) != int(read_number(item, "parts")):
            raise ValidationFailed(
                f"snapshot {name!r} is incomplete: {len(parts)} of {read_number(item, 'parts')} parts"
            )
        payload = b"".join(bytes(read_binary(part, "data")) for part in parts)
        return SnapshotMeta.model_validate_json(read_text(item, "meta")), payload

    def list(self, tenant: str, namespace: str) -> list[SnapshotMeta]:
        items = self._query(self._client(tenant), f"{tenant}#SNAP#{namespace}")
        metas = [SnapshotMeta.model_validate_json(read_text(item, "meta")) for item in items]
        return sorted(metas, key=lambda meta: (meta.created_at, meta.name))

    # ------------------------------------------------------------------ references

    def add_session_uses(self, tenant: str, namespace: str, content_hashes: Sequence[str]) -> None:
        """One TransactWriteItems of ADD updates per 100 hashes: a session start pays one round trip, not
        one per entry of its snapshot."""
        client = self._client(tenant)
        digests = list(dict.fromkeys(content_hashes))
        for start in range(0, len(digests), _TRANSACTION_MAX):
            items = [
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": dynamo_item(pk=f"{tenant}#REFS#{namespace}", sk=digest),
                        "UpdateExpression": "ADD sessions :one",
                        "ExpressionAttributeValues": expr_values(one=1),
                    }
                }
                for digest in digests[start : start + _TRANSACTION_MAX]
            ]
            with upstream_errors("DynamoDB", "TransactWriteItems"):
                client.transact_write_items(TransactItems=items)

    def session_uses(self, tenant: str, namespace: str) -> dict[str, int]:
        items = self._query(self._client(tenant), f"{tenant}#REFS#{namespace}")
        return {read_text(item, "sk"): int(read_number(item, "sessions")) for item in items}

    def mark_reviewed(self, tenant: str, record_id: str, at: datetime) -> None:
        with upstream_errors("DynamoDB", "PutItem"):
            self._client(tenant).put_item(
                TableName=self._table,
                Item=dynamo_item(pk=f"{tenant}#REVIEW", sk=record_id, reviewed_at=at.isoformat()),
            )

    def reviewed(self, tenant: str, record_ids: Sequence[str]) -> dict[str, datetime]:
        ids = list(dict.fromkeys(record_ids))
        if not ids:
            return {}
        client = self._client(tenant)
        found: dict[str, datetime] = {}
        for start in range(0, len(ids), _BATCH_GET_MAX):
            keys: list[dict[str, Any]] = [
                dynamo_item(pk=f"{tenant}#REVIEW", sk=record_id)
                for record_id in ids[start : start + _BATCH_GET_MAX]
            ]
            while keys:
                with upstream_errors("DynamoDB", "BatchGetItem"):
                    response = client.batch_get_item(
                        RequestItems={self._table: {"Keys": keys, "ConsistentRead": True}}
                    )
                for item in response.get("Responses", {}).get(self._table, []):
                    found[read_text(item, "sk")] = datetime.fromisoformat(read_text(item, "reviewed_at"))
                keys = response.get("UnprocessedKeys", {}).get(self._table, {}).get("Keys", [])
        return found
