"""`RecordStore` on one DynamoDB table (the contract's MemoryTable): records, change log and recall log.

Key design (full rationale in docs/dynamodb-keys.md). `<t>` is the tenant id; EVERY partition key value
(pk, gsi1pk, gsi2pk) starts with `<t>#`, so the tenant role's `dynamodb:LeadingKeys` condition confines a
request to its tenant in IAM, not only in this code. Times `<at>` are fixed-width UTC text
(`2026-11-30T09:15:00.000000Z`) so string order is time order.

| item             | pk                          | sk                      | gsi1pk / gsi1sk                      | gsi2pk / gsi2sk         |
|------------------|-----------------------------|-------------------------|--------------------------------------|-------------------------|
| record           | `<t>#REC#<id>`              | `REC`                   | `<t>#NS#<ns>` / `REC#<created>#<id>` | `<t>#REC` / `<created>#<id>` |
| hash pointer     | `<t>#HASH#<ns>#<hash>`      | `REC#<id>`              | –                                    | –                       |
| conflict pointer | `<t>#CONFLICT#<group>`      | `REC#<id>`              | –                                    | –                       |
| change entry     | `<t>#CHG#<record_id>`       | `<at>#<stamp>#<chg_id>` | `<t>#NS#<ns>` / `CHG#<at>#<stamp>#<chg_id>` | `<t>#CHG` / `<at>#<stamp>#<chg_id>` |
| recall entry     | `<t>#RCL#<ns>`              | `<at>#<stamp>#<rcl_id>` | –                                    | –                       |

- A record is one item (`doc` = its JSON) plus copies of the fields that keys and filters use. `touch()`
  changes only `access_count`/`last_access_at` (ADD/SET, no version bump); reads overlay them on `doc`.
- Pointer items make the two equality lookups that no GSI serves cheap: de-duplication by content hash and
  the records of a conflict group. They are written in the same transaction as the record and may go stale
  when a record's hash or group changes; readers always re-check the record itself, so a stale pointer costs
  one read and never a wrong answer.
- `<stamp>` (writer's nanosecond clock + position in the commit) keeps entries with the same `at` in commit
  order, as the local store does.
- Recall entries carry `expires_at` (epoch seconds, the table's TTL attribute): default 90 days.
- `dynamodb:LeadingKeys` checks only the BASE table's partition key: another tenant can write an item whose
  `pk` is its own but whose GSI key attributes carry this tenant's values, and that item then sits in this
  tenant's GSI partitions. Every GSI read therefore drops items whose base `pk` does not start with `<t>#`
  (fail closed: an item without `pk` is dropped too) and logs a warning with the index and the count, never
  the content. Both GSIs project ALL (the table's keys are projected whatever the projection type); a
  ProjectionExpression on a GSI read always asks for `pk`. Dropping happens before the page limit is
  applied, so a query page with dropped items never ends a listing early and cursors stay positions of
  returned items.
- Listings are queries on a GSI (eventually consistent, usually well under a second); `get`, `get_many`,
  `find_by_hash` and the change log of one record read strongly consistently. Filters the keys do not serve
  (type, status, tier, last access) run as FilterExpressions; the adapter keeps reading pages until it has
  `limit` items or the partition ends. Cursors are opaque base64 of the last returned position.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import contextvars
import heapq
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError
from pydantic import BaseModel

from ...domain.errors import ConcurrentModification, TooLarge, UpstreamUnavailable, ValidationFailed
from ...domain.ports import Page, RecordCounts, RecordQuery, RecordWrite, UnreadableRecord
from ...domain.records import (
    ChangeEntry,
    MemoryRecord,
    RecallLogEntry,
    describe_invalid,
    is_valid_namespace,
    is_valid_tenant,
)
from ._dynamo import attr, dynamo_item, expr_values, read_number, read_text, until_processed
from ._errors import error_code, upstream_errors

DEFAULT_RECALL_TTL_DAYS = 90
MAX_TRANSACTION_ITEMS = 100
"""DynamoDB's TransactWriteItems maximum. Larger commits are refused, never split: splitting would break
the all-or-nothing promise of `commit()`."""
MAX_TRANSACTION_BYTES = 4_000_000
"""TransactWriteItems accepts at most 4 MB in total; checked (approximately) before the call."""
SUBTREE_READ_BUDGET = 5_000
"""Items one page of a subtree listing (`RecordQuery.namespaces_below`) may read before it answers: the
namespace is in gsi1's partition key, so no key condition selects a subtree and the tenant's records are read
with a filter. A page that ran out of budget holds what it found (maybe nothing) and a cursor after the last
item read, so a listing of a sparse subtree in a large tenant answers in bounded time per page and reads each
record of the tenant once over all its pages."""
_BATCH_GET_MAX = 100
_TOUCH_CONCURRENCY = 16
"""A default recall (k=10) touches in one wave; within the tenant clients' 32 pooled connections
(credentials.DEFAULT_CLIENT_CONFIG), which the recall log's PutItem shares at the same time."""
_touch_lock = threading.Lock()
_touch_executor: ThreadPoolExecutor | None = None


def _touch_pool() -> ThreadPoolExecutor:
    global _touch_executor
    with _touch_lock:
        if _touch_executor is None:
            _touch_executor = ThreadPoolExecutor(_TOUCH_CONCURRENCY, thread_name_prefix="dynamodb-touch")
        return _touch_executor


_COUNTED = ("status", "tier", "type")

DynamoClientFactory = Callable[[str], Any]
"""tenant -> boto3 DynamoDB client (tenant-scoped credentials in production, a moto client in tests)."""

Item = dict[str, dict[str, Any]]
M = TypeVar("M", bound=BaseModel)
_UNREADABLE = (ValueError, KeyError, TypeError)
"""What a stored item that no longer validates raises (pydantic's ValidationError is a ValueError)."""

logger = Logger()
"""The service's Powertools logger (the handlers' service name, so the same output and keys)."""


# --------------------------------------------------------------------------- small helpers


def sortable_time(moment: datetime) -> str:
    """Fixed-width UTC text whose string order is time order. Naive datetimes are taken as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


_stamp_lock = threading.Lock()
_last_stamp = 0


def _next_stamp() -> int:
    """Strictly increasing within this process, close to wall-clock order across processes."""
    global _last_stamp
    with _stamp_lock:
        _last_stamp = max(_last_stamp + 1, time.time_ns())
        return _last_stamp


def _stamp_text(base: int, position: int) -> str:
    return f"{base:020d}{position:05d}"


def encode_cursor(kind: str, position: str) -> str:
    raw = json.dumps([kind, position], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None, kind: str) -> str | None:
    if cursor is None:
        return None
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error) as error:
        raise ValidationFailed(
            "invalid page cursor: pass back the next_cursor of the previous page"
        ) from error
    if not (isinstance(value, list) and len(value) == 2 and value[0] == kind and isinstance(value[1], str)):
        raise ValidationFailed("invalid page cursor: it does not belong to this listing")
    return value[1]


def _check_tenant(tenant: str) -> None:
    if not is_valid_tenant(tenant):
        raise ValidationFailed(f"invalid tenant id {tenant!r}")


def _check_namespace(namespace: str) -> None:
    if not is_valid_namespace(namespace):
        raise ValidationFailed(f"invalid namespace {namespace!r}: use a path like /projects/billing")


def _check_limit(limit: int) -> None:
    if limit < 1:
        raise ValidationFailed(f"page limit must be at least 1, got {limit}")


def _text(item: Item, attribute: str) -> str:
    return str(read_text(item, attribute, ""))


def _overlaid_doc(item: Item) -> str:
    """`doc` with the access attributes touch() keeps beside it, as the record's JSON (as stored if it is
    not a JSON object, so repair keeps it whole)."""
    raw = _text(item, "doc")
    try:
        data = json.loads(raw)
        if isinstance(data, dict):
            data["access_count"] = int(read_number(item, "access_count"))
            data["last_access_at"] = _parse_time(read_text(item, "last_access_at")).isoformat()
            return json.dumps(data)
    except _UNREADABLE:
        pass
    return raw


def _warn_unreadable(kind: str, tenant: str, item: Item, error: Exception) -> None:
    item_id = _text(item, "record_id") or _text(item, "sk")
    logger.warning(
        f"skipped an unreadable stored {kind}",
        extra={"kind": kind, "tenant": tenant, "item_id": item_id, "problem": describe_invalid(error)},
    )


def _belongs_to(item: Item, tenant: str) -> bool:
    """Whether the item's base-table partition key is the tenant's (every pk starts with `<tenant>#`)."""
    pk = read_text(item, "pk", None)
    return isinstance(pk, str) and pk.startswith(f"{tenant}#")


class _Filter:
    """Builds one FilterExpression with its own placeholder names and values."""

    def __init__(self) -> None:
        self.clauses: list[str] = []
        self.names: dict[str, str] = {}
        self.values: dict[str, dict[str, Any]] = {}
        self._counter = itertools.count()

    def one_of(self, attribute: str, values: Sequence[str]) -> None:
        if not values:
            return
        name = f"#f{next(self._counter)}"
        self.names[name] = attribute
        placeholders = []
        for value in dict.fromkeys(values):
            placeholder = f":f{next(self._counter)}"
            self.values[placeholder] = attr(value)
            placeholders.append(placeholder)
        self.clauses.append(f"{name} IN ({', '.join(placeholders)})")

    def compare(self, attribute: str, operator: str, value: str) -> None:
        name, placeholder = f"#f{next(self._counter)}", f":f{next(self._counter)}"
        self.names[name] = attribute
        self.values[placeholder] = attr(value)
        self.clauses.append(f"{name} {operator} {placeholder}")

    def namespace_tree(self, exact: Sequence[str], below: Sequence[str]) -> None:
        """Records of one of the `exact` namespaces or of a namespace strictly below one of `below`."""
        if not exact and not below:
            return
        name = f"#f{next(self._counter)}"
        self.names[name] = "namespace"
        either = []
        if exact:
            placeholders = []
            for value in dict.fromkeys(exact):
                placeholder = f":f{next(self._counter)}"
                self.values[placeholder] = attr(value)
                placeholders.append(placeholder)
            either.append(f"{name} IN ({', '.join(placeholders)})")
        for parent in dict.fromkeys(below):
            placeholder = f":f{next(self._counter)}"
            self.values[placeholder] = attr(parent + "/")
            either.append(f"begins_with({name}, {placeholder})")
        self.clauses.append(f"({' OR '.join(either)})")

    def apply(self, request: dict[str, Any]) -> None:
        if not self.clauses:
            return
        request["FilterExpression"] = " AND ".join(self.clauses)
        request.setdefault("ExpressionAttributeNames", {}).update(self.names)
        request.setdefault("ExpressionAttributeValues", {}).update(self.values)


# --------------------------------------------------------------------------- the store


class DynamoRecordStore:
    """Records, change log and recall log in the MemoryTable (see the module docstring for the keys)."""

    def __init__(
        self,
        table_name: str,
        client_factory: DynamoClientFactory,
        *,
        recall_ttl_days: int = DEFAULT_RECALL_TTL_DAYS,
        page_size: int | None = None,
        subtree_read_budget: int = SUBTREE_READ_BUDGET,
    ) -> None:
        """`page_size` is the Limit of each Query request; by default max(200, page limit + 1), at most
        1000 (a filtered listing reads pages until it has enough matches). `subtree_read_budget`: see
        `SUBTREE_READ_BUDGET`."""
        if recall_ttl_days < 1:
            raise ValueError("recall_ttl_days must be at least 1")
        if page_size is not None and not 1 <= page_size <= 1000:
            raise ValueError("page_size must be between 1 and 1000")
        self._table = table_name
        self._client_factory = client_factory
        self._recall_ttl = timedelta(days=recall_ttl_days)
        self._page_size = page_size
        self._subtree_budget = max(1, subtree_read_budget)

    def _client(self, tenant: str) -> Any:
        _check_tenant(tenant)
        return self._client_factory(tenant)

    # ------------------------------------------------------------------ item shapes

    @staticmethod
    def _record_position(record: MemoryRecord) -> str:
        return f"{sortable_time(record.created_at)}#{record.id}"

    def _record_item(self, record: MemoryRecord) -> Item:
        t, position = record.tenant, self._record_position(record)
        item: Item = dynamo_item(
            pk=f"{t}#REC#{record.id}",
            sk="REC",
            gsi1pk=f"{t}#NS#{record.namespace}",
            gsi1sk=f"REC#{position}",
            gsi2pk=f"{t}#REC",
            gsi2sk=position,
            kind="record",
            tenant=t,
            record_id=record.id,
            namespace=record.namespace,
            type=record.type.value,
            status=record.status.value,
            tier=record.tier.value,
            content_hash=record.content_hash,
            created_at=sortable_time(record.created_at),
            last_access_at=sortable_time(record.last_access_at),
            access_count=record.access_count,
            version=record.version,
            doc=record.model_dump_json(),
        )
        if record.conflict_group is not None:
            item["conflict_group"] = attr(record.conflict_group)
        return item

    @staticmethod
    def _pointer_item(pk: str, record: MemoryRecord) -> Item:
        return dynamo_item(pk=pk, sk=f"REC#{record.id}", kind="pointer", record_id=record.id)

    @staticmethod
    def _hash_pk(tenant: str, namespace: str, content_hash: str) -> str:
        return f"{tenant}#HASH#{namespace}#{content_hash}"

    @staticmethod
    def _conflict_pk(tenant: str, group: str) -> str:
        return f"{tenant}#CONFLICT#{group}"

    @staticmethod
    def _record_from_item(item: Item) -> MemoryRecord:
        data = json.loads(read_text(item, "doc"))
        # touch() updates these two attributes in place without rewriting `doc`: they are authoritative.
        data["access_count"] = int(read_number(item, "access_count"))
        stored_access = read_text(item, "last_access_at")
        if sortable_time(datetime.fromisoformat(data["last_access_at"])) != stored_access:
            data["last_access_at"] = _parse_time(stored_access).isoformat()
        return MemoryRecord.model_validate(data)

    @classmethod
    def _read_record(cls, item: Item, tenant: str) -> MemoryRecord | None:
        """The record, or None when it no longer validates (logged without content): one bad item, e.g.
        written by an older version, must never make a whole namespace unreadable. `agent-memory repair`."""
        try:
            return cls._record_from_item(item)
        except _UNREADABLE as error:
            _warn_unreadable("MemoryRecord", tenant, item, error)
            return None

    @staticmethod
    def _read(model: type[M], item: Item, tenant: str) -> M | None:
        try:
            return model.model_validate_json(read_text(item, "doc"))
        except _UNREADABLE as error:
            _warn_unreadable(model.__name__, tenant, item, error)
            return None

    def _change_item(self, change: ChangeEntry, stamp: str) -> Item:
        t, position = change.tenant, f"{sortable_time(change.at)}#{stamp}#{change.id}"
        return dynamo_item(
            pk=f"{t}#CHG#{change.record_id}",
            sk=position,
            gsi1pk=f"{t}#NS#{change.namespace}",
            gsi1sk=f"CHG#{position}",
            gsi2pk=f"{t}#CHG",
            gsi2sk=position,
            kind="change",
            namespace=change.namespace,
            doc=change.model_dump_json(),
        )

    # ------------------------------------------------------------------ writes

    def commit(self, writes: Sequence[RecordWrite], changes: Sequence[ChangeEntry]) -> None:
        if not writes and not changes:
            return
        tenants = {w.record.tenant for w in writes} | {c.tenant for c in changes}
        if len(tenants) != 1:
            raise ValidationFailed(f"one commit must stay within one tenant, got {sorted(tenants)}")
        tenant = tenants.pop()
        merged = self._merge_writes(writes)

        items: list[dict[str, Any]] = []
        owners: list[str | None] = []  # the record id each transaction item guards (None: other items)
        for write in merged:
            record = write.record
            items.append(self._record_put(write))
            owners.append(record.id)
            pointers = [self._hash_pk(tenant, record.namespace, record.content_hash)]
            if record.conflict_group is not None:
                pointers.append(self._conflict_pk(tenant, record.conflict_group))
            for pk in pointers:
                items.append({"Put": {"TableName": self._table, "Item": self._pointer_item(pk, record)}})
                owners.append(None)
        base = _next_stamp()
        for position, change in enumerate(changes):
            items.append(
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": self._change_item(change, _stamp_text(base, position)),
                    }
                }
            )
            owners.append(None)

        if len(items) > MAX_TRANSACTION_ITEMS:
            raise TooLarge(
                f"this commit needs {len(items)} DynamoDB items but one transaction holds at most "
                f"{MAX_TRANSACTION_ITEMS} (each record write takes 2-3, each change entry 1); "
                "commit fewer records at a time",
                items=len(items),
                limit=MAX_TRANSACTION_ITEMS,
            )
        size = len(json.dumps(items))
        if size > MAX_TRANSACTION_BYTES:
            raise TooLarge(
                f"this commit is about {size} bytes but one DynamoDB transaction holds at most "
                f"{MAX_TRANSACTION_BYTES}; commit fewer records at a time",
                bytes=size,
                limit=MAX_TRANSACTION_BYTES,
            )

        client = self._client(tenant)
        try:
            with upstream_errors("DynamoDB", "TransactWriteItems"):
                client.transact_write_items(TransactItems=items)
        except ClientError as error:
            if error_code(error) != "TransactionCanceledException":
                raise
            self._raise_cancelled(error, owners, merged)

    @staticmethod
    def _merge_writes(writes: Sequence[RecordWrite]) -> list[RecordWrite]:
        """One write per record: DynamoDB cannot touch an item twice in a transaction. A later write of the
        same record must expect the version the earlier one stores, exactly as if applied in sequence; it
        then replaces the earlier item while the earlier condition guards the stored version."""
        merged: dict[str, RecordWrite] = {}
        for write in writes:
            record = write.record
            earlier = merged.get(record.id)
            if earlier is None:
                merged[record.id] = write
                continue
            if write.expected_version != earlier.record.version:
                raise ConcurrentModification(
                    f"record {record.id} is written twice in one commit and the second write expects "
                    f"version {write.expected_version}, but the first one stores {earlier.record.version}",
                    record_id=record.id,
                    expected_version=write.expected_version,
                    stored_version=earlier.record.version,
                )
            merged[record.id] = RecordWrite(record, earlier.expected_version, earlier.expected_status)
        return list(merged.values())

    def _record_put(self, write: RecordWrite) -> dict[str, Any]:
        put: dict[str, Any] = {
            "TableName": self._table,
            "Item": self._record_item(write.record),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if write.expected_version is None:
            put["ConditionExpression"] = "attribute_not_exists(pk)"
        else:
            put["ConditionExpression"] = "#version = :expected"
            put["ExpressionAttributeNames"] = {"#version": "version"}
            put["ExpressionAttributeValues"] = expr_values(expected=write.expected_version)
            if write.expected_status is not None:
                put["ConditionExpression"] += " AND #status = :expected_status"
                put["ExpressionAttributeNames"]["#status"] = "status"
                put["ExpressionAttributeValues"][":expected_status"] = attr(write.expected_status.value)
        return {"Put": put}

    @staticmethod
    def _raise_cancelled(error: ClientError, owners: list[str | None], writes: Sequence[RecordWrite]) -> None:
        reasons = error.response.get("CancellationReasons") or []
        expected = {w.record.id: w.expected_version for w in writes}
        expected_status = {
            w.record.id: w.expected_status.value for w in writes if w.expected_status is not None
        }
        for index, reason in enumerate(reasons):
            code = reason.get("Code", "None")
            record_id = owners[index] if index < len(owners) else None
            if code == "ConditionalCheckFailed" and record_id is not None:
                old = reason.get("Item") or {}
                stored = int(read_number(old, "version")) if "version" in old else None
                if expected[record_id] is None:
                    raise ConcurrentModification(
                        f"record {record_id} already exists; it cannot be created twice", record_id=record_id
                    ) from error
                if stored is None and not old:
                    raise ConcurrentModification(
                        f"record {record_id} does not exist, so version {expected[record_id]} cannot be replaced",
                        record_id=record_id,
                        expected_version=expected[record_id],
                    ) from error
                wanted_status = expected_status.get(record_id)
                statuses = (
                    {"expected_status": wanted_status, "stored_status": read_text(old, "status", None)}
                    if wanted_status
                    else {}
                )
                raise ConcurrentModification(
                    f"record {record_id} was changed by someone else (stored version {stored}, expected "
                    f"{expected[record_id]}"
                    + (
                        f"; stored status {statuses['stored_status']}, expected {wanted_status}"
                        if statuses
                        else ""
                    )
                    + "); read it again and retry",
                    record_id=record_id,
                    expected_version=expected[record_id],
                    stored_version=stored,
                    **statuses,
                ) from error
            if code == "TransactionConflict":
                raise ConcurrentModification(
                    "another request is changing the same records right now; read them again and retry",
                    record_id=record_id,
                ) from error
            if code in {"ThrottlingError", "ProvisionedThroughputExceeded"}:
                raise UpstreamUnavailable(
                    "DynamoDB is throttling this table; retry in a few seconds", aws_error=code
                ) from error
        if any(r.get("Code") == "ConditionalCheckFailed" for r in reasons):
            raise ConcurrentModification(
                "a record changed while this commit was applied; read it again and retry"
            ) from error
        raise error

    def touch(self, tenant: str, record_ids: Sequence[str], at: datetime) -> None:
        """One UpdateItem per record (DynamoDB has no batch update), sent at once: each is a round trip, and
        recall waits for them (bench/aws_recall_round_trips.py: 10 sequential round trips → 1)."""
        client = self._client(tenant)
        moment = sortable_time(at)

        def update(record_id: str) -> None:
            try:
                with upstream_errors("DynamoDB", "UpdateItem"):
                    # version is deliberately untouched: access bookkeeping must never fail a real update.
                    client.update_item(
                        TableName=self._table,
                        Key=dynamo_item(pk=f"{tenant}#REC#{record_id}", sk="REC"),
                        UpdateExpression="SET #last = :at ADD #count :one",
                        ConditionExpression="attribute_exists(pk)",
                        ExpressionAttributeNames={"#last": "last_access_at", "#count": "access_count"},
                        ExpressionAttributeValues=expr_values(at=moment, one=1),
                    )
            except ClientError as error:
                if error_code(error) != "ConditionalCheckFailedException":
                    raise
                # A record deleted or never created: nothing to account for.

        ids = list(dict.fromkeys(record_ids))
        if len(ids) < 2:
            for record_id in ids:
                update(record_id)
            return
        context = contextvars.copy_context()
        futures = [_touch_pool().submit(context.copy().run, update, record_id) for record_id in ids]
        errors = [future.exception() for future in futures]  # waits for every update
        for error in errors:
            if error is not None:
                raise error

    def log_recall(self, entry: RecallLogEntry) -> None:
        client = self._client(entry.tenant)
        position = f"{sortable_time(entry.at)}#{_stamp_text(_next_stamp(), 0)}#{entry.id}"
        expires = entry.at if entry.at.tzinfo else entry.at.replace(tzinfo=UTC)
        with upstream_errors("DynamoDB", "PutItem"):
            client.put_item(
                TableName=self._table,
                Item=dynamo_item(
                    pk=f"{entry.tenant}#RCL#{entry.namespace}",
                    sk=position,
                    kind="recall",
                    doc=entry.model_dump_json(),
                    expires_at=int((expires + self._recall_ttl).timestamp()),
                ),
            )

    # ------------------------------------------------------------------ point reads

    def get(self, tenant: str, record_id: str) -> MemoryRecord | None:
        client = self._client(tenant)
        with upstream_errors("DynamoDB", "GetItem"):
            response = client.get_item(
                TableName=self._table,
                Key=dynamo_item(pk=f"{tenant}#REC#{record_id}", sk="REC"),
                ConsistentRead=True,
            )
        item = response.get("Item")
        return self._read_record(item, tenant) if item else None

    def get_many(self, tenant: str, record_ids: Sequence[str]) -> list[MemoryRecord]:
        """Existing records among `record_ids`, in the order given; missing and repeated ids are skipped."""
        ids = list(dict.fromkeys(record_ids))
        if not ids:
            return []
        client = self._client(tenant)
        found: dict[str, MemoryRecord] = {}
        for start in range(0, len(ids), _BATCH_GET_MAX):
            keys = [
                dynamo_item(pk=f"{tenant}#REC#{i}", sk="REC") for i in ids[start : start + _BATCH_GET_MAX]
            ]
            for item in self._batch_get(client, keys):
                record = self._read_record(item, tenant)
                if record is not None:
                    found[record.id] = record
        return [found[i] for i in ids if i in found]

    def _batch_get(self, client: Any, keys: list[Item]) -> Iterator[Item]:
        request: dict[str, Any] = {self._table: {"Keys": keys, "ConsistentRead": True}}
        for response in until_processed(
            lambda pending: client.batch_get_item(RequestItems=pending),
            request,
            operation="BatchGetItem",
            advice="retry in a few seconds",
        ):
            yield from response.get("Responses", {}).get(self._table, [])

    def find_by_hash(self, tenant: str, namespace: str, content_hash: str) -> list[MemoryRecord]:
        pk = self._hash_pk(tenant, namespace, content_hash)
        ids = [read_text(item, "record_id") for item in self._query_partition(tenant, pk, consistent=True)]
        records = [
            r
            for r in self.get_many(tenant, ids)
            if r.namespace == namespace and r.content_hash == content_hash
        ]
        return sorted(records, key=self._record_position)

    # ------------------------------------------------------------------ listings

    def list(self, tenant: str, query: RecordQuery) -> Page[MemoryRecord]:
        _check_limit(query.limit)
        for namespace in (*query.namespaces, *query.namespaces_below):
            _check_namespace(namespace)
        after = decode_cursor(query.cursor, "records")
        if query.conflict_group is not None:
            return self._list_conflict_group(tenant, query, after)

        flt = _Filter()
        flt.one_of("type", [t.value for t in query.types])
        flt.one_of("status", [s.value for s in query.statuses])
        flt.one_of("tier", [t.value for t in query.tiers])
        if query.last_access_before is not None:
            flt.compare("last_access_at", "<", sortable_time(query.last_access_before))

        if query.namespaces_below:
            flt.namespace_tree(query.namespaces, query.namespaces_below)
            return self._list_subtree(tenant, query, after, flt)
        if query.namespaces:
            streams = [
                self._query_index(
                    tenant, "gsi1", f"{tenant}#NS#{namespace}", "REC#", after, flt, limit_hint=query.limit
                )
                for namespace in sorted(set(query.namespaces))
            ]
            merged: Iterator[tuple[str, Item]] = heapq.merge(*streams, key=lambda pair: pair[0])
        else:
            merged = self._query_index(
                tenant, "gsi2", f"{tenant}#REC", "", after, flt, limit_hint=query.limit
            )

        # One item beyond the page tells whether a next page exists.
        taken = list(itertools.islice(merged, query.limit + 1))
        page, more = taken[: query.limit], len(taken) > query.limit
        loaded = [self._read_record(item, tenant) for _, item in page]
        items = [record for record in loaded if record is not None]
        next_cursor = encode_cursor("records", page[-1][0]) if more else None
        return Page(items=items, next_cursor=next_cursor, skipped=len(loaded) - len(items))

    def _list_subtree(
        self, tenant: str, query: RecordQuery, after: str | None, flt: _Filter
    ) -> Page[MemoryRecord]:
        """The tenant's records in creation order (gsi2) with the namespaces as a filter, within the read
        budget (`SUBTREE_READ_BUDGET`): a page ends at `limit` matches, at the partition's end, or when the
        budget is spent (then its cursor resumes after the last item read, even when it found nothing)."""
        client = self._client(tenant)
        request: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": "gsi2",
            "ExpressionAttributeNames": {"#pk": "gsi2pk"},
            "ExpressionAttributeValues": {":pk": attr(f"{tenant}#REC")},
            "KeyConditionExpression": "#pk = :pk",
            "Limit": self._page_limit(query.limit),
        }
        if after is not None:
            request["KeyConditionExpression"] = "#pk = :pk AND #sk > :lo"
            request["ExpressionAttributeNames"]["#sk"] = "gsi2sk"
            request["ExpressionAttributeValues"][":lo"] = attr(after)
        flt.apply(request)
        found: builtins.list[tuple[str, Item]] = []
        read, resume = 0, None
        while len(found) <= query.limit:
            with upstream_errors("DynamoDB", "Query"):
                response = client.query(**request)
            read += int(response.get("ScannedCount", 0))
            own = [item for item in response.get("Items", []) if _belongs_to(item, tenant)]
            if len(own) < len(response.get("Items", [])):
                logger.warning(
                    "dropped items of another tenant from a GSI query",
                    extra={"index": "gsi2", "dropped": len(response["Items"]) - len(own), "tenant": tenant},
                )
            found.extend((item["gsi2sk"]["S"], item) for item in own)
            last = response.get("LastEvaluatedKey")
            if not last:
                break
            if read >= self._subtree_budget and len(found) <= query.limit:
                resume = last["gsi2sk"]["S"]
                break
            request["ExclusiveStartKey"] = last
        page, more = found[: query.limit], len(found) > query.limit
        loaded = [self._read_record(item, tenant) for _, item in page]
        items = [record for record in loaded if record is not None]
        position = page[-1][0] if more else resume
        next_cursor = encode_cursor("records", position) if position is not None else None
        return Page(items=items, next_cursor=next_cursor, skipped=len(loaded) - len(items))

    def _list_conflict_group(self, tenant: str, query: RecordQuery, after: str | None) -> Page[MemoryRecord]:
        pk = self._conflict_pk(tenant, query.conflict_group or "")
        ids = [read_text(item, "record_id") for item in self._query_partition(tenant, pk, consistent=True)]
        cutoff = query.last_access_before
        matching = [
            r
            for r in self.get_many(tenant, ids)
            if r.conflict_group == query.conflict_group
            and (
                not (query.namespaces or query.namespaces_below)
                or r.namespace in query.namespaces
                or any(r.namespace.startswith(parent + "/") for parent in query.namespaces_below)
            )
            and (not query.types or r.type in query.types)
            and (not query.statuses or r.status in query.statuses)
            and (not query.tiers or r.tier in query.tiers)
            and (cutoff is None or sortable_time(r.last_access_at) < sortable_time(cutoff))
            and (after is None or self._record_position(r) > after)
        ]
        matching.sort(key=self._record_position)
        page, more = matching[: query.limit], len(matching) > query.limit
        next_cursor = encode_cursor("records", self._record_position(page[-1])) if more else None
        return Page(items=page, next_cursor=next_cursor)

    def counts(self, tenant: str, namespace: str | None = None) -> RecordCounts:
        """Reads every record of the namespace (or tenant) with a small projection: O(n), meant for
        dashboards and admin calls, not for the request path."""
        if namespace is not None:
            _check_namespace(namespace)
            stream = self._query_index(
                tenant, "gsi1", f"{tenant}#NS#{namespace}", "REC#", None, _Filter(), projection=_COUNTED
            )
        else:
            stream = self._query_index(
                tenant, "gsi2", f"{tenant}#REC", "", None, _Filter(), projection=_COUNTED
            )
        counts = RecordCounts()
        for _, item in stream:
            for bucket, attribute in (
                (counts.by_status, "status"),
                (counts.by_tier, "tier"),
                (counts.by_type, "type"),
            ):
                value = read_text(item, attribute)
                bucket[value] = bucket.get(value, 0) + 1
        return counts

    def list_changes(
        self,
        tenant: str,
        *,
        record_id: str | None = None,
        namespace: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> Page[ChangeEntry]:
        """Change entries oldest first: by `at`, then in commit order."""
        _check_limit(limit)
        after = decode_cursor(cursor, "changes")
        flt = _Filter()
        if namespace is not None:
            _check_namespace(namespace)
        if record_id is not None:
            if namespace is not None:
                flt.compare("namespace", "=", namespace)
            stream = self._query_table(tenant, f"{tenant}#CHG#{record_id}", after, flt, limit_hint=limit)
        elif namespace is not None:
            stream = self._query_index(tenant, "gsi1", f"{tenant}#NS#{namespace}", "CHG#", after, flt, limit)
        else:
            stream = self._query_index(tenant, "gsi2", f"{tenant}#CHG", "", after, flt, limit_hint=limit)
        taken = list(itertools.islice(stream, limit + 1))
        page, more = taken[:limit], len(taken) > limit
        loaded = [self._read(ChangeEntry, item, tenant) for _, item in page]
        items = [entry for entry in loaded if entry is not None]
        next_cursor = encode_cursor("changes", page[-1][0]) if more else None
        return Page(items=items, next_cursor=next_cursor, skipped=len(loaded) - len(items))

    def list_recalls(self, tenant: str, namespace: str, since: datetime) -> builtins.list[RecallLogEntry]:
        """Recalls at or after `since`, oldest first (expired ones may linger until TTL removes them)."""
        _check_namespace(namespace)
        stream = self._query_table(
            tenant, f"{tenant}#RCL#{namespace}", None, _Filter(), from_inclusive=sortable_time(since)
        )
        loaded = (self._read(RecallLogEntry, item, tenant) for _, item in stream)
        return [entry for entry in loaded if entry is not None]

    def unreadable(self, tenant: str, namespace: str | None = None) -> builtins.list[UnreadableRecord]:
        if namespace is not None:
            _check_namespace(namespace)
            stream = self._query_index(tenant, "gsi1", f"{tenant}#NS#{namespace}", "REC#", None, _Filter())
        else:
            stream = self._query_index(tenant, "gsi2", f"{tenant}#REC", "", None, _Filter())
        found = []
        for _, item in stream:
            try:
                self._record_from_item(item)
            except _UNREADABLE as error:
                found.append(
                    UnreadableRecord(
                        tenant=tenant,
                        record_id=_text(item, "record_id"),
                        namespace=_text(item, "namespace"),
                        type=_text(item, "type"),
                        status=_text(item, "status"),
                        version=int(read_number(item, "version", "0")),
                        created_at=_text(item, "created_at"),
                        body=_overlaid_doc(item),
                        error=describe_invalid(error),
                    )
                )
        return found

    # ------------------------------------------------------------------ query plumbing

    def _pages(self, client: Any, request: dict[str, Any]) -> Iterator[builtins.list[Item]]:
        """The items of each Query response, following LastEvaluatedKey to the end."""
        while True:
            with upstream_errors("DynamoDB", "Query"):
                response = client.query(**request)
            yield response.get("Items", [])
            last = response.get("LastEvaluatedKey")
            if not last:
                return
            request["ExclusiveStartKey"] = last

    def _paginate(self, client: Any, request: dict[str, Any]) -> Iterator[Item]:
        for page in self._pages(client, request):
            yield from page

    def _page_limit(self, limit_hint: int | None) -> int:
        if self._page_size is not None:
            return self._page_size
        if limit_hint is None:
            return 1000
        return min(1000, max(200, limit_hint + 1))

    def _query_index(
        self,
        tenant: str,
        index: str,
        partition: str,
        prefix: str,
        after: str | None,
        flt: _Filter,
        limit_hint: int | None = None,
        projection: Sequence[str] = (),
    ) -> Iterator[tuple[str, Item]]:
        """Items of one GSI partition whose sort key starts with `prefix`, after position `after`, in order.
        Yields (position without the prefix, item); `projection` limits the attributes returned."""
        client = self._client(tenant)
        sk = f"{index}sk"
        request: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": index,
            "ExpressionAttributeNames": {"#pk": f"{index}pk"},
            "ExpressionAttributeValues": expr_values(pk=partition),
            "Limit": self._page_limit(limit_hint),
        }
        if prefix or after is not None:
            request["ExpressionAttributeNames"]["#sk"] = sk
        if prefix:
            # BETWEEN keeps other item kinds sharing the partition out ("REC$" sorts right after "REC#…").
            upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
            request["KeyConditionExpression"] = "#pk = :pk AND #sk BETWEEN :lo AND :hi"
            request["ExpressionAttributeValues"][":lo"] = attr(prefix + (after or ""))
            request["ExpressionAttributeValues"][":hi"] = attr(upper)
        elif after is not None:
            request["KeyConditionExpression"] = "#pk = :pk AND #sk > :lo"
            request["ExpressionAttributeValues"][":lo"] = attr(after)
        else:
            request["KeyConditionExpression"] = "#pk = :pk"
        if projection:
            # `pk` always: the tenant check below needs it.
            attributes = dict.fromkeys((sk, "pk", *projection))
            names = {f"#p{i}": attribute for i, attribute in enumerate(attributes)}
            request["ExpressionAttributeNames"].update(names)
            request["ProjectionExpression"] = ", ".join(names)
        flt.apply(request)
        for page in self._pages(client, request):
            # LeadingKeys confined only the base pk of whoever wrote an item, not its GSI keys: keep the
            # caller's items only. Filtering each response (not the final page) keeps pagination intact.
            own = [item for item in page if _belongs_to(item, tenant)]
            if len(own) < len(page):
                logger.warning(
                    "dropped items of another tenant from a GSI query",
                    extra={"index": index, "dropped": len(page) - len(own), "tenant": tenant},
                )
            for item in own:
                position = read_text(item, sk)[len(prefix) :]
                if after is not None and position <= after:
                    continue  # BETWEEN is inclusive: skip the cursor item itself
                yield position, item

    def _query_table(
        self,
        tenant: str,
        partition: str,
        after: str | None,
        flt: _Filter,
        *,
        limit_hint: int | None = None,
        from_inclusive: str | None = None,
    ) -> Iterator[tuple[str, Item]]:
        client = self._client(tenant)
        request: dict[str, Any] = {
            "TableName": self._table,
            "ConsistentRead": True,
            "ExpressionAttributeNames": {"#pk": "pk"},
            "ExpressionAttributeValues": expr_values(pk=partition),
            "KeyConditionExpression": "#pk = :pk",
            "Limit": self._page_limit(limit_hint),
        }
        if after is not None:
            request["KeyConditionExpression"] += " AND #sk > :lo"
            request["ExpressionAttributeNames"]["#sk"] = "sk"
            request["ExpressionAttributeValues"][":lo"] = attr(after)
        elif from_inclusive is not None:
            request["KeyConditionExpression"] += " AND #sk >= :lo"
            request["ExpressionAttributeNames"]["#sk"] = "sk"
            request["ExpressionAttributeValues"][":lo"] = attr(from_inclusive)
        flt.apply(request)
        for item in self._paginate(client, request):
            yield read_text(item, "sk"), item

    def _query_partition(self, tenant: str, partition: str, *, consistent: bool) -> Iterator[Item]:
        client = self._client(tenant)
        request: dict[str, Any] = {
            "TableName": self._table,
            "ConsistentRead": consistent,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": "pk"},
            "ExpressionAttributeValues": expr_values(pk=partition),
        }
        yield from self._paginate(client, request)
