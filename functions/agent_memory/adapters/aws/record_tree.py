"""Namespace-tree listings on the memory table (`RecordQuery.namespaces_below`) and the backfill of their index.

`gsi3` (partition `gsi2pk` = `<t>#REC`, sort `gsi3sk` = `<namespace>#<created>#<id>`) holds records only: no
other item carries `gsi3sk` (a sparse index). A tree is a few key ranges of the tenant's partition:

- the records of namespace `/me`: `gsi3sk BETWEEN "/me#" AND "/me$"` (`#` sorts below every namespace
  character, `$` right after it: `/me-x` and `/me.x` are outside);
- the records strictly below `/me`: `BETWEEN "/me/" AND "/me0"` (`0` follows `/`), never `/meta` nor `/mexico`.

Each range is one Query read in key order; the ranges are merged by key, so a page costs about `limit` items
per range however large the tenant, and a tree lists by namespace, then oldest first (SQLite's order for the
same query). The key's namespace patterns become the ranges (`tree_selectors`), so nothing outside them is read.

Records written before `gsi3sk` existed lack it and are not in the index. `backfill` adds it to a tenant's
records (resumable: a marker item `<t>#META`/`TREE_INDEX` keeps the position reached; idempotent: each update
is conditional on the record's namespace and position being those the key was computed from), and marks the
tenant complete at the end. Until that marker says complete, a tree listing takes the old path: the tenant's
records in creation order (gsi2) with the namespaces as a filter, within a read budget per page. A cursor
names its path, so a listing started on the old path ends on it."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from ...domain.ports import IndexProgress, Page, RecordQuery
from ...domain.records import MemoryRecord
from ._dynamo import dynamo_item, expr_values, read_text
from ._errors import error_code, upstream_errors
from ._record_items import (
    TREE_SEPARATOR,
    Item,
    encode_cursor,
    own_items,
    read_record,
    sortable_time,
    text,
    tree_position,
)
from ._record_queries import Filter, Queries

TREE_INDEX = "gsi3"
TREE_KEYS = ("gsi2pk", "gsi3sk")
TREE_CURSOR = "tree"
"""The cursor kind of a listing read from the tree index (`records`: the old filtered path)."""
MARKER_SK = "TREE_INDEX"
SUBTREE_READ_BUDGET = 5_000
"""Items one page of the old path may read before it answers (see the module docstring)."""
_SAVE_EVERY = 100


def tree_bounds(exact: Sequence[str], below: Sequence[str]) -> list[tuple[str, str]]:
    """The inclusive `gsi3sk` ranges of the records of the `exact` namespaces and of those below `below`."""
    after = chr(ord(TREE_SEPARATOR) + 1)
    ranges = [(f"{ns}{TREE_SEPARATOR}", f"{ns}{after}") for ns in dict.fromkeys(exact)]
    ranges += [(f"{parent}/", f"{parent}0") for parent in dict.fromkeys(below)]
    return ranges


def records_page(
    found: Sequence[tuple[str, Item]], limit: int, tenant: str, kind: str, resume: str | None = None
) -> Page[MemoryRecord]:
    """A page of the first `limit` of `found` (one more tells a next page exists; `resume`: a position to
    continue from although `found` ended)."""
    page, more = found[:limit], len(found) > limit
    loaded = [read_record(item, tenant) for _, item in page]
    items = [record for record in loaded if record is not None]
    position = page[-1][0] if more else resume
    next_cursor = encode_cursor(kind, position) if position is not None else None
    return Page(items=items, next_cursor=next_cursor, skipped=len(loaded) - len(items))


TreeBackfill = IndexProgress
"""What one `backfill` run did: records read, keys added, and whether the tenant is now complete."""


class RecordTree:
    def __init__(self, queries: Queries, *, read_budget: int = SUBTREE_READ_BUDGET) -> None:
        self._q = queries
        self._budget = max(1, read_budget)
        self._ready: set[str] = set()

    # ------------------------------------------------------------------ reads

    def indexed(self, tenant: str) -> bool:
        """Whether the tenant's records all carry `gsi3sk` (remembered once true: it stays true)."""
        if tenant not in self._ready and self._marker(tenant, consistent=False).get("state") == "complete":
            self._ready.add(tenant)
        return tenant in self._ready

    def list_indexed(
        self, tenant: str, query: RecordQuery, after: str | None, flt: Filter
    ) -> Page[MemoryRecord]:
        """One Query per range of the tree, merged by key (overlapping ranges give an item once)."""
        streams = [
            self._q.key_range(
                tenant, TREE_INDEX, TREE_KEYS, f"{tenant}#REC", bounds, after, flt, limit_hint=query.limit
            )
            for bounds in tree_bounds(query.namespaces, query.namespaces_below)
        ]
        merged = heapq.merge(*streams, key=lambda pair: pair[0])
        unique = (next(group) for _, group in itertools.groupby(merged, key=lambda pair: pair[0]))
        found = list(itertools.islice(unique, query.limit + 1))
        return records_page(found, query.limit, tenant, TREE_CURSOR)

    def list_filtered(
        self, tenant: str, query: RecordQuery, after: str | None, flt: Filter
    ) -> Page[MemoryRecord]:
        """The old path: the tenant's records in creation order (gsi2) with the namespaces as a filter. A page
        ends at `limit` matches, at the partition's end, or when the read budget is spent (then its cursor
        resumes after the last item read, even when it found nothing)."""
        flt.namespace_tree(query.namespaces, query.namespaces_below)
        client = self._q.client(tenant)
        request: dict[str, Any] = {
            "TableName": self._q.table,
            "IndexName": "gsi2",
            "ExpressionAttributeNames": {"#pk": "gsi2pk"},
            "ExpressionAttributeValues": expr_values(pk=f"{tenant}#REC"),
            "KeyConditionExpression": "#pk = :pk",
            "Limit": self._q.page_limit(query.limit),
        }
        if after is not None:
            request["KeyConditionExpression"] = "#pk = :pk AND #sk > :lo"
            request["ExpressionAttributeNames"]["#sk"] = "gsi2sk"
            request["ExpressionAttributeValues"].update(expr_values(lo=after))
        flt.apply(request)
        found: list[tuple[str, Item]] = []
        read, resume = 0, None
        for response in self._q.responses(client, request):
            read += int(response.get("ScannedCount", 0))
            own = own_items(response.get("Items", []), tenant, "gsi2")
            found.extend((read_text(item, "gsi2sk"), item) for item in own)
            last = response.get("LastEvaluatedKey")
            if len(found) > query.limit or not last:
                break
            if read >= self._budget:
                resume = read_text(last, "gsi2sk")
                break
        return records_page(found, query.limit, tenant, "records", resume)

    # ------------------------------------------------------------------ the backfill

    def backfill(self, tenant: str, *, max_records: int | None = None) -> TreeBackfill:
        """Adds `gsi3sk` to the tenant's records that lack it, from where the last run stopped; at the end
        marks the tenant complete. `max_records` bounds one run (call again to go on). Run it once every
        writer runs code that writes `gsi3sk` (after the deployment): a record an older writer adds later
        would be missing from the tree listings."""
        marker = self._marker(tenant, consistent=True)
        if marker.get("state") == "complete":
            self._ready.add(tenant)
            return TreeBackfill(tenant, read=0, updated=0, complete=True)
        client = self._q.client(tenant)
        after = marker.get("cursor") or None
        read = updated = 0
        stream = self._q.index(
            tenant, "gsi2", f"{tenant}#REC", "", after, Filter(), projection=("namespace", "gsi3sk")
        )
        for position, item in stream:
            namespace = text(item, "namespace")
            wanted = tree_position(namespace, position)
            if namespace and text(item, "gsi3sk") != wanted:
                updated += self._add_key(client, item, namespace, position, wanted)
            read += 1
            if read % _SAVE_EVERY == 0:
                self._save(client, tenant, "running", position, read, updated)
            if max_records is not None and read >= max_records:
                self._save(client, tenant, "running", position, read, updated)
                return TreeBackfill(tenant, read=read, updated=updated, complete=False)
        self._save(client, tenant, "complete", None, read, updated)
        self._ready.add(tenant)
        return TreeBackfill(tenant, read=read, updated=updated, complete=True)

    def _add_key(self, client: Any, item: Item, namespace: str, position: str, wanted: str) -> int:
        try:
            with upstream_errors("DynamoDB", "UpdateItem"):
                client.update_item(
                    TableName=self._q.table,
                    Key={"pk": item["pk"], "sk": {"S": "REC"}},
                    UpdateExpression="SET #tree = :tree",
                    ConditionExpression="#ns = :ns AND #pos = :pos",
                    ExpressionAttributeNames={"#tree": "gsi3sk", "#ns": "namespace", "#pos": "gsi2sk"},
                    ExpressionAttributeValues=expr_values(tree=wanted, ns=namespace, pos=position),
                )
        except ClientError as error:
            if error_code(error) != "ConditionalCheckFailedException":
                raise
            return 0  # changed or deleted meanwhile: its writer wrote the key it needs
        return 1

    def _marker(self, tenant: str, *, consistent: bool) -> dict[str, Any]:
        client = self._q.client(tenant)
        with upstream_errors("DynamoDB", "GetItem"):
            response = client.get_item(
                TableName=self._q.table,
                Key=dynamo_item(pk=f"{tenant}#META", sk=MARKER_SK),
                ConsistentRead=consistent,
            )
        item = response.get("Item") or {}
        return {"state": read_text(item, "state", None), "cursor": read_text(item, "cursor", None)}

    def _save(
        self, client: Any, tenant: str, state: str, cursor: str | None, read: int, updated: int
    ) -> None:
        item = dynamo_item(
            pk=f"{tenant}#META",
            sk=MARKER_SK,
            kind="marker",
            state=state,
            updated_at=sortable_time(datetime.now(UTC)),
            last_run_read=read,
            last_run_updated=updated,
        )
        if cursor is not None:
            item.update(dynamo_item(cursor=cursor))
        with upstream_errors("DynamoDB", "PutItem"):
            client.put_item(TableName=self._q.table, Item=item)
