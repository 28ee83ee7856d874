"""`RecordStore` on one DynamoDB table (the contract's MemoryTable): records, change log and recall log.

Key design (full rationale in docs/dynamodb-keys.md). `<t>` is the tenant id; EVERY partition key value
(pk, gsi1pk, gsi2pk) starts with `<t>#` (gsi3 reuses gsi2pk), so the tenant role's `dynamodb:LeadingKeys` condition confines a
request to its tenant in IAM, not only in this code. Times `<at>` are fixed-width UTC text
(`2026-11-30T09:15:00.000000Z`) so string order is time order.

| item             | pk                          | sk                      | gsi1pk / gsi1sk                      | gsi2pk / gsi2sk         |
|------------------|-----------------------------|-------------------------|--------------------------------------|-------------------------|
| record           | `<t>#REC#<id>`              | `REC`                   | `<t>#NS#<ns>` / `REC#<created>#<id>` | `<t>#REC` / `<created>#<id>` |
| tree marker      | `<t>#META`                  | `TREE_INDEX`            | –                                    | –                       |
| hash pointer     | `<t>#HASH#<ns>#<hash>`      | `REC#<id>`              | –                                    | –                       |
| conflict pointer | `<t>#CONFLICT#<group>`      | `REC#<id>`              | –                                    | –                       |
| change entry     | `<t>#CHG#<record_id>`       | `<at>#<stamp>#<chg_id>` | `<t>#NS#<ns>` / `CHG#<at>#<stamp>#<chg_id>` | `<t>#CHG` / `<at>#<stamp>#<chg_id>` |
| recall entry     | `<t>#RCL#<ns>`              | `<at>#<stamp>#<rcl_id>` | –                                    | –                       |

- gsi3 (partition `gsi2pk`, sort `gsi3sk` = `<ns>#<created>#<id>`, records only) serves namespace-tree
  listings as key ranges; its key, its backfill and the marker are in `record_tree`. Item (de)serialization
  is in `_record_items`, query and filter building in `_record_queries`, a commit's transaction in
  `_record_commit`.
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
  the content. The GSIs project ALL (the table's keys are projected whatever the projection type); a
  ProjectionExpression on a GSI read always asks for `pk`. Dropping happens before the page limit is
  applied, so a query page with dropped items never ends a listing early and cursors stay positions of
  returned items.
- Listings are queries on a GSI (eventually consistent, usually well under a second); `get`, `get_many`,
  `find_by_hash` and the change log of one record read strongly consistently. Filters the keys do not serve
  (type, status, tier, last access) run as FilterExpressions; the adapter keeps reading pages until it has
  `limit` items or the partition ends. Cursors are opaque base64 of the last returned position.
"""

from __future__ import annotations

import builtins
import contextvars
import heapq
import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from ...domain.errors import ValidationFailed
from ...domain.ports import Page, RecordCounts, RecordQuery, RecordWrite, UnreadableRecord
from ...domain.records import ChangeEntry, MemoryRecord, RecallLogEntry, describe_invalid
from ._dynamo import dynamo_item, expr_values, read_number, read_text, until_processed
from ._errors import error_code, upstream_errors
from ._record_commit import MAX_TRANSACTION_BYTES, MAX_TRANSACTION_ITEMS, raise_cancelled, transaction
from ._record_items import (
    UNREADABLE,
    Item,
    check_limit,
    check_namespace,
    conflict_pk,
    cursor_kind,
    decode_cursor,
    encode_cursor,
    hash_pk,
    logger,
    next_stamp,
    overlaid_doc,
    read_model,
    read_record,
    record_from_item,
    record_position,
    record_tree_position,
    sortable_time,
    stamp_text,
    text,
)
from ._record_queries import Filter, Queries
from .record_tree import SUBTREE_READ_BUDGET, TREE_CURSOR, RecordTree, TreeBackfill, records_page

__all__ = [
    "MAX_TRANSACTION_BYTES",
    "MAX_TRANSACTION_ITEMS",
    "SUBTREE_READ_BUDGET",
    "DynamoRecordStore",
    "TreeBackfill",
    "logger",
    "sortable_time",
]

DEFAULT_RECALL_TTL_DAYS = 90
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
        self._recall_ttl = timedelta(days=recall_ttl_days)
        self._q = Queries(table_name, client_factory, page_size)
        self._tree = RecordTree(self._q, read_budget=subtree_read_budget)

    def _client(self, tenant: str) -> Any:
        return self._q.client(tenant)

    # ------------------------------------------------------------------ writes

    def commit(self, writes: Sequence[RecordWrite], changes: Sequence[ChangeEntry]) -> None:
        """All of it in one TransactWriteItems, or nothing (`_record_commit`: the items, the limits, and a
        cancellation read back as ConcurrentModification naming the record)."""
        if not writes and not changes:
            return
        tenants = {w.record.tenant for w in writes} | {c.tenant for c in changes}
        if len(tenants) != 1:
            raise ValidationFailed(f"one commit must stay within one tenant, got {sorted(tenants)}")
        tenant = tenants.pop()
        planned = transaction(self._table, tenant, writes, changes)
        client = self._client(tenant)
        try:
            with upstream_errors("DynamoDB", "TransactWriteItems"):
                client.transact_write_items(TransactItems=planned.items)
        except ClientError as error:
            if error_code(error) != "TransactionCanceledException":
                raise
            raise_cancelled(error, planned.owners, planned.writes)

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
        position = f"{sortable_time(entry.at)}#{stamp_text(next_stamp(), 0)}#{entry.id}"
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
        return read_record(item, tenant) if item else None

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
                record = read_record(item, tenant)
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
        pk = hash_pk(tenant, namespace, content_hash)
        ids = [read_text(item, "record_id") for item in self._q.partition(tenant, pk, consistent=True)]
        records = [
            r
            for r in self.get_many(tenant, ids)
            if r.namespace == namespace and r.content_hash == content_hash
        ]
        return sorted(records, key=record_position)

    # ------------------------------------------------------------------ listings

    def list(self, tenant: str, query: RecordQuery) -> Page[MemoryRecord]:
        """Creation order; a tree (`namespaces_below`) by namespace, then creation order (`record_tree`)."""
        check_limit(query.limit)
        for namespace in (*query.namespaces, *query.namespaces_below):
            check_namespace(namespace)
        kind = self._listing_kind(tenant, query)
        after = decode_cursor(query.cursor, kind)
        if query.conflict_group is not None:
            return self._list_conflict_group(tenant, query, after, kind)

        flt = Filter()
        flt.one_of("type", [t.value for t in query.types])
        flt.one_of("status", [s.value for s in query.statuses])
        flt.one_of("tier", [t.value for t in query.tiers])
        if query.last_access_before is not None:
            flt.compare("last_access_at", "<", sortable_time(query.last_access_before))

        if query.namespaces_below:
            if kind == TREE_CURSOR:
                return self._tree.list_indexed(tenant, query, after, flt)
            return self._tree.list_filtered(tenant, query, after, flt)
        if query.namespaces:
            streams = [
                self._q.index(
                    tenant, "gsi1", f"{tenant}#NS#{namespace}", "REC#", after, flt, limit_hint=query.limit
                )
                for namespace in sorted(set(query.namespaces))
            ]
            merged: Iterator[tuple[str, Item]] = heapq.merge(*streams, key=lambda pair: pair[0])
        else:
            merged = self._q.index(tenant, "gsi2", f"{tenant}#REC", "", after, flt, limit_hint=query.limit)
        # One item beyond the page tells whether a next page exists.
        return records_page(list(itertools.islice(merged, query.limit + 1)), query.limit, tenant, "records")

    def _listing_kind(self, tenant: str, query: RecordQuery) -> str:
        """`tree` (the tree index's order) or `records` (creation order; a tree on the old path): a cursor
        keeps the listing on the path that made it; any other cursor kind is refused when decoded."""
        if not query.namespaces_below:
            return "records"
        given = cursor_kind(query.cursor)
        if given in (TREE_CURSOR, "records"):
            return str(given)
        if given is None and (query.conflict_group is not None or self._tree.indexed(tenant)):
            return TREE_CURSOR  # a conflict group is sorted in memory: always in the tree's order
        return "records"

    def backfill_tree_index(self, tenant: str, *, max_records: int | None = None) -> TreeBackfill:
        """Adds the tree index key to the tenant's older records (`record_tree.RecordTree.backfill`)."""
        return self._tree.backfill(tenant, max_records=max_records)

    def _list_conflict_group(
        self, tenant: str, query: RecordQuery, after: str | None, kind: str
    ) -> Page[MemoryRecord]:
        pk = conflict_pk(tenant, query.conflict_group or "")
        ids = [read_text(item, "record_id") for item in self._q.partition(tenant, pk, consistent=True)]
        position = record_tree_position if kind == TREE_CURSOR else record_position
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
            and (after is None or position(r) > after)
        ]
        matching.sort(key=position)
        page, more = matching[: query.limit], len(matching) > query.limit
        next_cursor = encode_cursor(kind, position(page[-1])) if more else None
        return Page(items=page, next_cursor=next_cursor)

    def counts(self, tenant: str, namespace: str | None = None) -> RecordCounts:
        """Reads every record of the namespace (or tenant) with a small projection: O(n), meant for
        dashboards and admin calls, not for the request path."""
        if namespace is not None:
            check_namespace(namespace)
            stream = self._q.index(
                tenant, "gsi1", f"{tenant}#NS#{namespace}", "REC#", None, Filter(), projection=_COUNTED
            )
        else:
            stream = self._q.index(tenant, "gsi2", f"{tenant}#REC", "", None, Filter(), projection=_COUNTED)
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
        check_limit(limit)
        after = decode_cursor(cursor, "changes")
        flt = Filter()
        if namespace is not None:
            check_namespace(namespace)
        if record_id is not None:
            if namespace is not None:
                flt.compare("namespace", "=", namespace)
            stream = self._q.table_partition(
                tenant, f"{tenant}#CHG#{record_id}", after, flt, limit_hint=limit
            )
        elif namespace is not None:
            stream = self._q.index(tenant, "gsi1", f"{tenant}#NS#{namespace}", "CHG#", after, flt, limit)
        else:
            stream = self._q.index(tenant, "gsi2", f"{tenant}#CHG", "", after, flt, limit_hint=limit)
        taken = list(itertools.islice(stream, limit + 1))
        page, more = taken[:limit], len(taken) > limit
        loaded = [read_model(ChangeEntry, item, tenant) for _, item in page]
        items = [entry for entry in loaded if entry is not None]
        next_cursor = encode_cursor("changes", page[-1][0]) if more else None
        return Page(items=items, next_cursor=next_cursor, skipped=len(loaded) - len(items))

    def list_recalls(self, tenant: str, namespace: str, since: datetime) -> builtins.list[RecallLogEntry]:
        """Recalls at or after `since`, oldest first (expired ones may linger until TTL removes them)."""
        check_namespace(namespace)
        stream = self._q.table_partition(
            tenant, f"{tenant}#RCL#{namespace}", None, Filter(), from_inclusive=sortable_time(since)
        )
        loaded = (read_model(RecallLogEntry, item, tenant) for _, item in stream)
        return [entry for entry in loaded if entry is not None]

    def unreadable(self, tenant: str, namespace: str | None = None) -> builtins.list[UnreadableRecord]:
        if namespace is not None:
            check_namespace(namespace)
            stream = self._q.index(tenant, "gsi1", f"{tenant}#NS#{namespace}", "REC#", None, Filter())
        else:
            stream = self._q.index(tenant, "gsi2", f"{tenant}#REC", "", None, Filter())
        found = []
        for _, item in stream:
            try:
                record_from_item(item)
            except UNREADABLE as error:
                found.append(
                    UnreadableRecord(
                        tenant=tenant,
                        record_id=text(item, "record_id"),
                        namespace=text(item, "namespace"),
                        type=text(item, "type"),
                        status=text(item, "status"),
                        version=int(read_number(item, "version", "0")),
                        created_at=text(item, "created_at"),
                        body=overlaid_doc(item),
                        error=describe_invalid(error),
                    )
                )
        return found
