"""DynamoDB specifics of the record store that the shared contract cannot see: the key design IAM relies on,
transaction limits and shapes, TTL of the recall log, cursors, stale pointers, racing writers."""

from __future__ import annotations

import base64
import json
import threading
from datetime import timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from agent_memory.adapters.aws.dynamodb_store import MAX_TRANSACTION_ITEMS, DynamoRecordStore
from agent_memory.domain.errors import ConcurrentModification, TooLarge, UpstreamUnavailable, ValidationFailed
from agent_memory.domain.ports import RecordQuery, RecordWrite
from agent_memory.domain.records import Status, content_hash
from tests.aws.support import TABLE, CallCounter, serialize_moto_writes
from tests.contract.record_store_contract import (
    BILLING,
    SEARCH,
    T0,
    TENANT_A,
    TENANT_B,
    make_change,
    make_recall,
    make_record,
    next_version,
)


@pytest.fixture
def store(dynamodb: Any) -> DynamoRecordStore:
    return DynamoRecordStore(TABLE, lambda tenant: dynamodb)


def all_items(client: Any) -> list[dict[str, Any]]:
    return client.scan(TableName=TABLE)["Items"]


def create(store: DynamoRecordStore, *records: Any) -> None:
    store.commit([RecordWrite(r, None) for r in records], [make_change(r) for r in records])


def test_given_every_kind_of_item_when_written_then_every_partition_key_starts_with_its_tenant(
    store: DynamoRecordStore, dynamodb: Any
):
    # Given records (with a conflict group), changes and recalls of two tenants
    create(store, make_record("a", conflict_group="g"), make_record("b", namespace=SEARCH))
    create(store, make_record("c", tenant=TENANT_B))
    store.log_recall(make_recall())
    store.log_recall(make_recall(tenant=TENANT_B))

    # When the raw table is inspected
    items = all_items(dynamodb)

    # Then pk, gsi1pk and gsi2pk of every item start with "<tenant>#" (what dynamodb:LeadingKeys checks)
    assert len(items) == 12  # 3 records + 3 hash pointers + 1 conflict pointer + 3 changes + 2 recalls
    for item in items:
        tenant = item["pk"]["S"].split("#", 1)[0]
        assert tenant in (TENANT_A, TENANT_B)
        for key in ("pk", "gsi1pk", "gsi2pk"):
            if key in item:
                assert item[key]["S"].startswith(f"{tenant}#"), item


def test_given_recall_when_logged_then_ttl_is_set_from_its_time(dynamodb: Any):
    # Given a store that keeps recalls 30 days
    store = DynamoRecordStore(TABLE, lambda tenant: dynamodb, recall_ttl_days=30)

    # When a recall is logged
    store.log_recall(make_recall(at=T0))

    # Then the item expires 30 days after the recall (epoch seconds, the table's TTL attribute)
    (item,) = all_items(dynamodb)
    assert int(item["expires_at"]["N"]) == int((T0 + timedelta(days=30)).timestamp())


def test_given_commit_when_applied_then_one_conditional_transaction(store: DynamoRecordStore, dynamodb: Any):
    # Given an existing record
    record = make_record()
    create(store, record)
    calls = CallCounter(dynamodb)

    # When it is updated with a change entry
    updated = next_version(record, content="new content", content_hash=content_hash("new content"))
    store.commit([RecordWrite(updated, expected_version=record.version)], [make_change(updated)])

    # Then exactly one TransactWriteItems guards the record by its version
    assert calls.count("TransactWriteItems") == 1
    (params,) = calls.params("TransactWriteItems")
    puts = [item["Put"] for item in params["TransactItems"]]
    guarded = [p for p in puts if "ConditionExpression" in p]
    assert len(guarded) == 1
    assert guarded[0]["ConditionExpression"] == "#version = :expected"
    assert guarded[0]["ExpressionAttributeValues"][":expected"] == {"N": str(record.version)}


def test_given_state_transition_when_committed_then_successor_and_guarded_predecessor_in_one_transaction(
    store: DynamoRecordStore, dynamodb: Any
):
    # Given an active record
    record = make_record()
    create(store, record)
    calls = CallCounter(dynamodb)

    # When a correction commits its successor and retires the record, expecting it still active
    successor = make_record("The billing service uses Postgres 17", supersedes=record.id)
    retired = next_version(record, status=Status.ARCHIVED, superseded_by=successor.id)
    store.commit(
        [RecordWrite(successor, None), RecordWrite(retired, record.version, Status.ACTIVE)],
        [make_change(successor), make_change(retired)],
    )

    # Then one TransactWriteItems creates the successor and guards the predecessor by version AND status
    (params,) = calls.params("TransactWriteItems")
    guarded = {
        p["Item"]["record_id"]["S"]: p
        for p in (i["Put"] for i in params["TransactItems"])
        if "ConditionExpression" in p
    }
    assert guarded[successor.id]["ConditionExpression"] == "attribute_not_exists(pk)"
    condition = guarded[record.id]
    assert condition["ConditionExpression"] == "#version = :expected AND #status = :expected_status"
    assert condition["ExpressionAttributeNames"] == {"#version": "version", "#status": "status"}
    assert condition["ExpressionAttributeValues"][":expected_status"] == {"S": "active"}


def test_given_too_many_items_for_one_transaction_when_committed_then_refused_and_nothing_written(
    store: DynamoRecordStore, dynamodb: Any
):
    # Given 34 new records with their changes: 34 x (record + hash pointer + change) = 102 items
    records = [make_record(f"note {i}") for i in range(34)]

    # When committed at once
    with pytest.raises(TooLarge) as raised:
        store.commit([RecordWrite(r, None) for r in records], [make_change(r) for r in records])

    # Then the commit is refused as a whole (never split into several transactions)
    assert raised.value.details["limit"] == MAX_TRANSACTION_ITEMS
    assert all_items(dynamodb) == []


def test_given_records_of_two_tenants_in_one_commit_then_refused(store: DynamoRecordStore):
    with pytest.raises(ValidationFailed):
        store.commit(
            [RecordWrite(make_record("a"), None), RecordWrite(make_record("b", tenant=TENANT_B), None)], []
        )


def test_given_two_chained_writes_of_one_record_when_committed_then_last_one_stored(store: DynamoRecordStore):
    # Given a record and two successive versions of it in the same commit
    record = make_record()
    create(store, record)
    first = next_version(record, content="first")
    second = next_version(first, content="second")

    # When both are committed together
    store.commit(
        [
            RecordWrite(first, expected_version=record.version),
            RecordWrite(second, expected_version=first.version),
        ],
        [],
    )

    # Then the item holds the last version
    stored = store.get(TENANT_A, record.id)
    assert stored is not None and stored.content == "second" and stored.version == record.version + 2


@pytest.fixture
def atomic_moto(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto applies conditional writes non-atomically: see `serialize_moto_writes`."""
    serialize_moto_writes(monkeypatch)


@pytest.mark.usefixtures("atomic_moto")
def test_given_many_writers_with_same_version_when_racing_then_exactly_one_wins(
    store: DynamoRecordStore,
):
    # Given one record and 8 writers that all read version 0
    record = make_record()
    create(store, record)
    outcomes: list[str] = []
    lock = threading.Lock()

    def writer(n: int) -> None:
        attempt = next_version(record, content=f"writer {n}")
        try:
            store.commit([RecordWrite(attempt, expected_version=record.version)], [])
            result = "won"
        except ConcurrentModification:
            result = "lost"
        with lock:
            outcomes.append(result)

    # When they commit concurrently
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # Then exactly one commit succeeded and the stored version moved by exactly one
    assert sorted(outcomes) == ["lost"] * 7 + ["won"]
    stored = store.get(TENANT_A, record.id)
    assert stored is not None and stored.version == record.version + 1


def test_given_record_whose_content_changed_when_found_by_old_hash_then_stale_pointer_ignored(
    store: DynamoRecordStore,
):
    # Given a record whose content (and hash) was corrected
    record = make_record("Deploys happen on Tuesdays")
    create(store, record)
    corrected = next_version(
        record,
        content="Deploys happen on Thursdays",
        content_hash=content_hash("Deploys happen on Thursdays"),
    )
    store.commit([RecordWrite(corrected, expected_version=record.version)], [])

    # When both hashes are looked up
    by_old = store.find_by_hash(TENANT_A, BILLING, record.content_hash)
    by_new = store.find_by_hash(TENANT_A, BILLING, corrected.content_hash)

    # Then the old pointer still exists but leads nowhere; the new one finds the record
    assert by_old == []
    assert [r.id for r in by_new] == [record.id]


def test_given_conflict_group_left_when_listed_by_group_then_record_no_longer_listed(
    store: DynamoRecordStore,
):
    record = make_record("tabs", conflict_group="indent")
    create(store, record)
    resolved = next_version(record, conflict_group=None)
    store.commit([RecordWrite(resolved, expected_version=record.version)], [])

    assert store.list(TENANT_A, RecordQuery(conflict_group="indent")).items == []


def test_given_page_cursor_when_decoded_then_opaque_position_not_a_raw_key(store: DynamoRecordStore):
    # Given three records listed two at a time
    records = [make_record(f"r{i}", at=T0 + timedelta(minutes=i)) for i in range(3)]
    create(store, *records)

    page = store.list(TENANT_A, RecordQuery(limit=2))

    # Then the cursor is url-safe base64 of the last returned position (no tenant, no table key names)
    assert page.next_cursor is not None
    decoded = json.loads(base64.urlsafe_b64decode(page.next_cursor + "=" * (-len(page.next_cursor) % 4)))
    assert decoded[0] == "records"
    assert decoded[1].endswith(records[1].id)
    assert TENANT_A not in page.next_cursor and "pk" not in decoded[1]


def test_given_change_cursor_when_used_for_records_then_validation_error(store: DynamoRecordStore):
    record = make_record()
    create(store, record)
    for i in range(2):
        store.commit([], [make_change(record, at=T0 + timedelta(minutes=i + 1))])
    change_cursor = store.list_changes(TENANT_A, limit=1).next_cursor

    with pytest.raises(ValidationFailed):
        store.list(TENANT_A, RecordQuery(cursor=change_cursor))


def test_given_selective_filter_when_listed_then_pages_are_read_until_limit(dynamodb: Any):
    # Given 30 records of which every 10th is archived, read 5 items per DynamoDB page
    store = DynamoRecordStore(TABLE, lambda tenant: dynamodb, page_size=5)
    for start in range(0, 30, 10):
        batch = [
            make_record(
                f"n{i}",
                at=T0 + timedelta(minutes=i),
                status=Status.ARCHIVED if i % 10 == 0 else Status.ACTIVE,
            )
            for i in range(start, start + 10)
        ]
        create(store, *batch)
    calls = CallCounter(dynamodb)

    # When two archived records are asked for
    page = store.list(TENANT_A, RecordQuery(statuses=(Status.ARCHIVED,), limit=2))

    # Then the adapter kept querying past pages without matches until it had them
    assert [r.content for r in page.items] == ["n0", "n10"]
    assert page.next_cursor is not None
    assert calls.count("Query") >= 3


def test_given_more_than_100_ids_when_get_many_then_all_found_in_order(
    store: DynamoRecordStore, dynamodb: Any
):
    # Given 101 records (more than one BatchGetItem holds)
    records = [make_record(f"bulk {i}") for i in range(101)]
    for start in range(0, 101, 50):
        store.commit([RecordWrite(r, None) for r in records[start : start + 50]], [])
    calls = CallCounter(dynamodb)
    wanted = [r.id for r in reversed(records)]

    # When fetched together
    found = store.get_many(TENANT_A, wanted)

    # Then in two batches, in the order asked
    assert [r.id for r in found] == wanted
    assert calls.count("BatchGetItem") == 2


@pytest.mark.parametrize(
    ("reasons", "expected"),
    [
        ([{"Code": "TransactionConflict"}, {"Code": "None"}], ConcurrentModification),
        ([{"Code": "None"}, {"Code": "ThrottlingError"}], UpstreamUnavailable),
    ],
)
def test_given_cancelled_transaction_when_committed_then_domain_error(reasons: list[Any], expected: type):
    # Given a DynamoDB client whose transaction is cancelled for a reason other than a version check
    client = boto3.client("dynamodb", region_name="us-east-1")
    store = DynamoRecordStore(TABLE, lambda tenant: client)
    with Stubber(client) as stubber:
        stubber.add_client_error(
            "transact_write_items",
            "TransactionCanceledException",
            "Transaction cancelled",
            400,
            modeled_fields={"CancellationReasons": reasons},
        )

        # Then the cancellation surfaces as the matching domain error
        with pytest.raises(expected):
            store.commit([RecordWrite(make_record(), None)], [])


def test_given_stale_version_when_committed_then_error_names_stored_and_expected_versions(
    store: DynamoRecordStore,
):
    record = make_record()
    create(store, record)
    first = next_version(record, content="first")
    store.commit([RecordWrite(first, expected_version=record.version)], [])

    with pytest.raises(ConcurrentModification) as raised:
        store.commit([RecordWrite(next_version(record, content="late"), expected_version=record.version)], [])

    assert raised.value.details == {
        "record_id": record.id,
        "expected_version": record.version,
        "stored_version": record.version + 1,
    }


def test_touch_sends_its_updates_at_once(store: DynamoRecordStore, dynamodb: Any) -> None:
    """Recall waits for the touch: one UpdateItem per record, each a round trip, so they must overlap. Every
    update here waits until all five have been sent; sent one after the other, the barrier would break."""
    records = [make_record(f"fact {i}") for i in range(5)]
    store.commit([RecordWrite(r, None) for r in records], [])
    in_flight = threading.Barrier(5, timeout=30)

    def sent(**_: Any) -> None:  # a hook that returns something would be taken as the response
        in_flight.wait()

    dynamodb.meta.events.register("before-call.dynamodb.UpdateItem", sent)
    try:
        store.touch(TENANT_A, [r.id for r in records], T0 + timedelta(hours=1))
    finally:
        dynamodb.meta.events.unregister("before-call.dynamodb.UpdateItem", sent)
    assert [store.get(TENANT_A, r.id).access_count for r in records] == [1] * 5  # type: ignore[union-attr]


def test_given_a_sparse_subtree_in_a_large_tenant_when_listed_below_then_pages_keep_to_the_read_budget(
    dynamodb: Any,
):
    # Given 2 records below /me among 30 elsewhere, and a store that reads at most 4 items a page
    store = DynamoRecordStore(TABLE, lambda tenant: dynamodb, page_size=2, subtree_read_budget=4)
    others = [make_record(f"other {i}", namespace="/meta", at=T0 + timedelta(minutes=i)) for i in range(30)]
    wanted = [
        make_record("first", namespace="/me/a", at=T0 + timedelta(minutes=5, seconds=1)),
        make_record("last", namespace="/me/b/c", at=T0 + timedelta(minutes=40)),
    ]
    create(store, *others, *wanted)
    calls = CallCounter(dynamodb)

    # When the subtree is listed page by page
    seen, pages, cursor = [], 0, None
    while True:
        page = store.list(TENANT_A, RecordQuery(namespaces_below=("/me",), limit=10, cursor=cursor))
        seen.extend(r.id for r in page.items)
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            break

    # Then every page answered after its budget (some empty, each with a cursor) and the listing is whole
    assert seen == [r.id for r in wanted]
    assert pages >= 30 // 4
    assert calls.count("Query") <= pages * 2  # budget 4 items at 2 a request
