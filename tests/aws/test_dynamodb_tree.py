"""Namespace-tree listings on DynamoDB (issue 32): the tree index (gsi3) makes a page a bounded Query, and a
tenant whose records predate it is served by the old filtered read until its backfill completes.

Records of an "older" tenant are written by the adapter and then stripped of `gsi3sk`, as an item written
before the index existed looks (CloudFormation adds a GSI; DynamoDB indexes only items carrying its keys)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from agent_memory.adapters.aws.dynamodb_store import DynamoRecordStore
from agent_memory.domain.ports import RecordQuery, RecordWrite
from agent_memory.domain.records import MemoryRecord
from tests.aws.support import TABLE, CallCounter
from tests.contract.record_store_contract import T0, TENANT_A, make_change, make_record

TREE = RecordQuery(namespaces=("/me",), namespaces_below=("/me",), limit=3)


def _write(store: DynamoRecordStore, records: list[MemoryRecord]) -> None:
    for start in range(0, len(records), 25):
        chunk = records[start : start + 25]
        store.commit([RecordWrite(r, None) for r in chunk], [make_change(r) for r in chunk[:5]])


def _strip_tree_keys(dynamodb: Any) -> int:
    stripped = 0
    for item in dynamodb.scan(TableName=TABLE)["Items"]:
        if "gsi3sk" in item:
            dynamodb.update_item(
                TableName=TABLE, Key={"pk": item["pk"], "sk": item["sk"]}, UpdateExpression="REMOVE gsi3sk"
            )
            stripped += 1
    return stripped


def _walk(store: DynamoRecordStore, query: RecordQuery, cursor: str | None = None) -> list[str]:
    seen = []
    while True:
        page = store.list(TENANT_A, RecordQuery(**{**query.__dict__, "cursor": cursor}))
        seen.extend(r.namespace for r in page.items)
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor


def _tree_records() -> list[MemoryRecord]:
    names = ["/me/users/u-2", "/me", "/mexico", "/me/users/u-1", "/me-too", "/other"]
    return [make_record(f"fact {i}", namespace=names[i % 6], at=T0 + timedelta(minutes=i)) for i in range(18)]


def test_given_records_older_than_the_index_when_backfilled_in_steps_then_the_tree_lists_them_from_the_index(
    dynamodb: Any,
):
    store = DynamoRecordStore(TABLE, lambda tenant: dynamodb)
    records = _tree_records()
    _write(store, records)
    assert _strip_tree_keys(dynamodb) == len(records)
    in_tree = [r for r in records if r.namespace == "/me" or r.namespace.startswith("/me/")]
    by_creation = [r.namespace for r in sorted(in_tree, key=lambda r: (r.created_at, r.id))]
    by_tree = [r.namespace for r in sorted(in_tree, key=lambda r: (r.namespace, r.created_at, r.id))]
    calls = CallCounter(dynamodb)

    # Before the backfill: the old path (gsi2 with a filter), every record of the tree, creation order
    assert _walk(store, TREE) == by_creation
    assert {p["IndexName"] for p in calls.params("Query")} == {"gsi2"}
    old_cursor = store.list(TENANT_A, TREE).next_cursor

    # The backfill resumes where it stopped, and a second pass changes nothing
    first = store.backfill_tree_index(TENANT_A, max_records=7)
    second = store.backfill_tree_index(TENANT_A, max_records=7)
    rest = store.backfill_tree_index(TENANT_A)
    again = store.backfill_tree_index(TENANT_A)
    assert (first.read, first.updated, first.complete) == (7, 7, False)
    assert (second.read, second.updated, second.complete) == (7, 7, False)
    assert (rest.read, rest.updated, rest.complete) == (len(records) - 14, len(records) - 14, True)
    assert (again.read, again.updated, again.complete) == (0, 0, True)
    items = dynamodb.scan(TableName=TABLE)["Items"]
    assert sum("gsi3sk" in item for item in items) == len(records)  # records only: a sparse index

    # After it: a fresh store (another Lambda) reads the marker and lists from gsi3, by namespace
    fresh = DynamoRecordStore(TABLE, lambda tenant: dynamodb)
    calls.calls.clear()
    assert _walk(fresh, TREE) == by_tree
    assert {p.get("IndexName") for p in calls.params("Query")} == {"gsi3"}
    # A listing begun on the old path ends on it, in its own order
    assert _walk(fresh, TREE, old_cursor) == by_creation[3:]


def test_given_a_large_tenant_when_a_small_tree_is_listed_then_the_read_is_bounded_by_the_page(dynamodb: Any):
    store = DynamoRecordStore(TABLE, lambda tenant: dynamodb)
    assert store.backfill_tree_index(TENANT_A).complete  # a new tenant: nothing to add
    outside = [
        make_record(f"other {i}", namespace=f"/org/t-{i % 7}", at=T0 + timedelta(seconds=i))
        for i in range(40)  # more than the tree holds, so a read of the tenant would show in the count
    ]
    inside = [
        make_record(f"mine {i}", namespace=f"/me/u-{i % 3}", at=T0 + timedelta(seconds=i)) for i in range(12)
    ]
    _write(store, outside + inside)
    scanned: list[int] = []
    dynamodb.meta.events.register(
        "after-call.dynamodb.Query", lambda parsed, **_: scanned.append(int(parsed.get("ScannedCount", 0)))
    )

    page = store.list(TENANT_A, RecordQuery(namespaces=("/me",), namespaces_below=("/me",), limit=5))

    assert [r.namespace for r in page.items] == ["/me/u-0"] * 4 + ["/me/u-1"]
    assert len(scanned) == 2  # one Query per range: /me itself, below /me
    assert sum(scanned) <= len(inside)  # never the 40 records outside the tree


def test_given_other_items_in_the_tenant_partition_when_a_tree_is_listed_then_only_records_appear(
    dynamodb: Any,
):
    store = DynamoRecordStore(TABLE, lambda tenant: dynamodb)
    assert store.backfill_tree_index(TENANT_A).complete
    records = [make_record(f"r {i}", namespace="/me", at=T0 + timedelta(minutes=i)) for i in range(3)]
    _write(store, records)

    index = dynamodb.query(
        TableName=TABLE,
        IndexName="gsi3",
        KeyConditionExpression="gsi2pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"{TENANT_A}#REC"}},
    )["Items"]

    assert sorted(item["kind"]["S"] for item in index) == ["record"] * 3
    assert [r.id for r in store.list(TENANT_A, TREE).items] == [r.id for r in records]


def test_given_a_cursor_past_a_range_when_paged_then_no_query_has_its_between_bounds_reversed(dynamodb: Any):
    # DynamoDB refuses `BETWEEN :lo AND :hi` with lo > hi (moto does not): a cursor beyond the range of `/me`
    # itself must skip that range, not query it
    store = DynamoRecordStore(TABLE, lambda tenant: dynamodb)
    assert store.backfill_tree_index(TENANT_A).complete
    records = [make_record(f"r {i}", namespace=["/me", "/me/a", "/me/b"][i % 3], at=T0) for i in range(9)]
    _write(store, records)
    calls = CallCounter(dynamodb)

    listed = _walk(store, RecordQuery(namespaces=("/me",), namespaces_below=("/me",), limit=2))

    assert listed == ["/me"] * 3 + ["/me/a"] * 3 + ["/me/b"] * 3
    bounds = [
        (p["ExpressionAttributeValues"][":lo"]["S"], p["ExpressionAttributeValues"][":hi"]["S"])
        for p in calls.params("Query")
        if ":hi" in p.get("ExpressionAttributeValues", {})
    ]
    assert bounds and all(lo <= hi for lo, hi in bounds)
