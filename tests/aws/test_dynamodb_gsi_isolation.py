"""Tenant isolation of the record store's GSI reads (issue 11, item 6).

The tenant role's `dynamodb:LeadingKeys` condition only checks the BASE table's partition key. Tenant B may
therefore write an item whose `pk` is its own (`globex#...`) but whose GSI key attributes carry tenant A's
values (`acme#NS#...`, `acme#REC`, `acme#CHG`); that item then sits in tenant A's GSI partitions. Every GSI
read of the adapter must drop it (its base `pk` does not start with `acme#`), keep paginating correctly, and
log a warning with the index name and the count.

Each case plants such a row with the low-level client and reads tenant A's data through the adapter. The
cases cover every GSI query of the adapter (`list` with and without namespaces, of a namespace tree, `counts` with and without a namespace, `list_changes` with a namespace and without a
record id) and, together, every GSI of the table (checked against `describe_table`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

import pytest

from agent_memory.adapters.aws import dynamodb_store
from agent_memory.adapters.aws.dynamodb_store import DynamoRecordStore, sortable_time
from agent_memory.domain.ports import RecordQuery, RecordWrite
from agent_memory.domain.records import MemoryRecord
from tests.aws.support import TABLE, CallCounter
from tests.contract.record_store_contract import (
    BILLING,
    T0,
    TENANT_A,
    TENANT_B,
    make_change,
    make_record,
)

PLANTED = "PLANTED by globex"


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def plant_record(client: Any, index: str, *, at_minutes: int, tag: str = "") -> None:
    """A record item written under tenant B's own pk, with tenant A's keys for `index` only. Its `doc`
    pretends to be a record of tenant A, as an attacker would craft it."""
    record = make_record(f"{PLANTED} {tag}".strip(), tenant=TENANT_A, at=T0 + timedelta(minutes=at_minutes))
    position = f"{sortable_time(record.created_at)}#{record.id}"
    item = {
        "pk": _s(f"{TENANT_B}#REC#{record.id}"),  # LeadingKeys lets globex write this
        "sk": _s("REC"),
        "kind": _s("record"),
        "tenant": _s(TENANT_A),
        "record_id": _s(record.id),
        "namespace": _s(record.namespace),
        "type": _s(record.type.value),
        "status": _s(record.status.value),
        "tier": _s(record.tier.value),
        "content_hash": _s(record.content_hash),
        "created_at": _s(sortable_time(record.created_at)),
        "last_access_at": _s(sortable_time(record.last_access_at)),
        "access_count": {"N": "0"},
        "version": {"N": str(record.version)},
        "doc": _s(record.model_dump_json()),
    }
    if index == "gsi1":
        item |= {"gsi1pk": _s(f"{TENANT_A}#NS#{BILLING}"), "gsi1sk": _s(f"REC#{position}")}
    elif index == "gsi3":  # the namespace-tree index: tenant A's partition, a key inside A's tree
        item |= {"gsi2pk": _s(f"{TENANT_A}#REC"), "gsi3sk": _s(f"{BILLING}#{position}")}
    else:
        item |= {"gsi2pk": _s(f"{TENANT_A}#REC"), "gsi2sk": _s(position)}
    client.put_item(TableName=TABLE, Item=item)


def plant_change(client: Any, index: str, *, at_minutes: int, tag: str = "") -> None:
    """A change entry under tenant B's own pk, with tenant A's keys for `index` only."""
    record = make_record(f"{PLANTED} {tag}".strip(), tenant=TENANT_A)
    change = make_change(record, at=T0 + timedelta(minutes=at_minutes))
    position = f"{sortable_time(change.at)}#{0:025d}#{change.id}"
    item = {
        "pk": _s(f"{TENANT_B}#CHG#{record.id}"),
        "sk": _s(position),
        "kind": _s("change"),
        "namespace": _s(BILLING),
        "doc": _s(change.model_dump_json()),
    }
    if index == "gsi1":
        item |= {"gsi1pk": _s(f"{TENANT_A}#NS#{BILLING}"), "gsi1sk": _s(f"CHG#{position}")}
    else:
        item |= {"gsi2pk": _s(f"{TENANT_A}#CHG"), "gsi2sk": _s(position)}
    client.put_item(TableName=TABLE, Item=item)


def walk_records(store: DynamoRecordStore, query: RecordQuery) -> list[list[str]]:
    """Every page of a record listing (cursor followed to the end), as lists of contents."""
    pages, cursor = [], None
    while True:
        page = store.list(TENANT_A, replace(query, cursor=cursor))
        pages.append([r.content for r in page.items])
        if page.next_cursor is None:
            return pages
        cursor = page.next_cursor


def walk_changes(store: DynamoRecordStore, limit: int, **scope: Any) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        page = store.list_changes(TENANT_A, limit=limit, cursor=cursor, **scope)
        pages.append([(c.after or {}).get("content", "") for c in page.items])
        if page.next_cursor is None:
            return pages
        cursor = page.next_cursor


def _records(scoped: bool) -> Callable[[DynamoRecordStore, int], list[list[str]]]:
    namespaces = (BILLING,) if scoped else ()
    return lambda store, limit: walk_records(store, RecordQuery(namespaces=namespaces, limit=limit))


def _tree(store: DynamoRecordStore, limit: int) -> list[list[str]]:
    parent = BILLING.rsplit("/", 1)[0] or BILLING
    return walk_records(store, RecordQuery(namespaces=(parent,), namespaces_below=(parent,), limit=limit))


def _changes(scoped: bool) -> Callable[[DynamoRecordStore, int], list[list[str]]]:
    scope = {"namespace": BILLING} if scoped else {}
    return lambda store, limit: walk_changes(store, limit, **scope)


def _counts(scoped: bool) -> Callable[[DynamoRecordStore, int], list[list[str]]]:
    def read(store: DynamoRecordStore, limit: int) -> list[list[str]]:
        counts = store.counts(TENANT_A, BILLING if scoped else None)
        return [[f"{sum(counts.by_status.values())} records"]]

    return read


@dataclass(frozen=True)
class Case:
    name: str
    index: str  # the GSI the read must use
    plant: Callable[..., None]
    read: Callable[[DynamoRecordStore, int], list[list[str]]]
    paginated: bool = True


CASES = [
    Case("list records by namespace", "gsi1", plant_record, _records(scoped=True)),
    Case("list records of the tenant", "gsi2", plant_record, _records(scoped=False)),
    Case("list a namespace tree", "gsi3", plant_record, _tree),
    Case("counts of a namespace", "gsi1", plant_record, _counts(scoped=True), paginated=False),
    Case("counts of the tenant", "gsi2", plant_record, _counts(scoped=False), paginated=False),
    Case("list changes by namespace", "gsi1", plant_change, _changes(scoped=True)),
    Case("list changes of the tenant", "gsi2", plant_change, _changes(scoped=False)),
]


def own_data(store: DynamoRecordStore) -> list[MemoryRecord]:
    """Two records of tenant A (with their change entries) at minutes 0 and 10."""
    records = [make_record(f"own {i}", at=T0 + timedelta(minutes=10 * i)) for i in range(2)]
    store.commit([RecordWrite(r, None) for r in records], [make_change(r) for r in records])
    assert store.backfill_tree_index(TENANT_A).complete  # tree listings read gsi3 from now on
    return records


def expected_pages(case: Case, limit: int) -> list[list[str]]:
    if not case.paginated:
        return [["2 records"]]
    own = ["own 0", "own 1"]
    return [own[i : i + limit] for i in range(0, len(own), limit)]


@pytest.fixture
def warnings() -> Iterator[list[logging.LogRecord]]:
    """Records of the adapter's Powertools logger (attached to the logging.Logger it wraps)."""
    records: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING:
                records.append(record)

    handler = Collect()
    target = getattr(dynamodb_store, "logger", None)  # a Powertools Logger proxies addHandler to it
    if target is None:  # no logger: the test then fails on what it checks, not in this fixture
        yield records
        return
    target.addHandler(handler)
    try:
        yield records
    finally:
        target.removeHandler(handler)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@pytest.mark.parametrize("page_size", [None, 1], ids=["default-page-size", "one-item-per-query"])
def test_given_row_of_tenant_b_with_gsi_keys_of_tenant_a_when_tenant_a_reads_then_it_is_never_returned(
    dynamodb: Any, case: Case, page_size: int | None
):
    # Given tenant A's own data and three rows of tenant B carrying tenant A's keys of the case's GSI,
    # planted between and after A's items (so dropped items fall inside and at the end of pages)
    store = DynamoRecordStore(TABLE, lambda tenant: dynamodb, page_size=page_size)
    own_data(store)
    for minute, tag in ((5, "between"), (6, "between again"), (20, "after")):
        case.plant(dynamodb, case.index, at_minutes=minute, tag=tag)
    calls = CallCounter(dynamodb)

    # When tenant A reads through the adapter: the whole listing at once, then one item per page
    whole = case.read(store, 100)
    one_by_one = case.read(store, 1)

    # Then the read used the case's GSI, never returned a planted row, and paginated over A's items only
    assert {p.get("IndexName") for p in calls.params("Query")} == {case.index}
    assert whole == expected_pages(case, 100)
    assert one_by_one == expected_pages(case, 1)
    assert not any(PLANTED in text for page in whole + one_by_one for text in page)


def test_given_planted_rows_in_every_gsi_when_read_then_each_drop_is_logged_with_index_and_count(
    dynamodb: Any, warnings: list[logging.LogRecord]
):
    # Given the table's GSIs (as the shared contract defines them) ...
    table = dynamodb.describe_table(TableName=TABLE)["Table"]
    indexes = {
        gsi["IndexName"]: gsi["Projection"]["ProjectionType"] for gsi in table["GlobalSecondaryIndexes"]
    }
    # ... every one of them is read by at least one case, and projects the base-table keys (pk) the
    # adapter checks (every projection type does: KEYS_ONLY, INCLUDE and ALL all carry the table's keys)
    assert set(indexes) == {case.index for case in CASES}
    assert set(indexes.values()) <= {"KEYS_ONLY", "INCLUDE", "ALL"}

    store = DynamoRecordStore(TABLE, lambda tenant: dynamodb)
    own_data(store)
    for case in CASES:
        # And one planted row of tenant B in the case's GSI partition of tenant A
        client_items = dynamodb.scan(TableName=TABLE)["Items"]
        for item in client_items:
            if item["pk"]["S"].startswith(f"{TENANT_B}#"):
                dynamodb.delete_item(TableName=TABLE, Key={"pk": item["pk"], "sk": item["sk"]})
        case.plant(dynamodb, case.index, at_minutes=5)
        warnings.clear()

        # When tenant A reads
        result = case.read(store, 100)

        # Then the row is dropped, and a warning names the index and the count, without any content
        assert result == expected_pages(case, 100), case.name
        dropped = [r for r in warnings if getattr(r, "index", None) == case.index]
        assert sum(r.dropped for r in dropped) == 1, case.name  # type: ignore[attr-defined]
        assert all(r.tenant == TENANT_A for r in dropped), case.name  # type: ignore[attr-defined]
        for record in warnings:
            text = f"{record.getMessage()} {vars(record)}"
            assert PLANTED not in text and f"{TENANT_B}#" not in text, case.name
