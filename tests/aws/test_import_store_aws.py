"""The import store in the MemoryTable (adapters/aws/import_store.py): key design (every partition key starts
with the tenant), batch limits (BatchGetItem 100 keys, BatchWriteItem 25 requests), resends of unprocessed
items, and release."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from agent_memory.adapters.aws.import_store import BATCH_GET_MAX, BATCH_WRITE_MAX, DynamoImportStore
from agent_memory.domain.errors import UpstreamUnavailable
from agent_memory.domain.interop.model import ImportReport, ImportState, InventoryView, ItemOutcome
from agent_memory.domain.retry import DYNAMODB_BATCH
from tests.aws.support import TABLE

T0 = datetime(2026, 12, 1, 12, tzinfo=UTC)


def _report(tenant: str = "acme", import_id: str = "imp_abc") -> ImportReport:
    inventory = InventoryView(
        format="jsonl",
        files=["chat.jsonl"],
        entries=0,
        notes=0,
        turns=3,
        memories=0,
        skills=0,
        items=3,
        skipped_files=[],
    )
    return ImportReport(
        id=import_id,
        tenant=tenant,
        namespace="/n",
        format="jsonl",
        source="chat",
        dry_run=False,
        state=ImportState.COMPLETED,
        actor="t",
        started_at=T0,
        inventory=inventory,
    )


class Flaky:
    """Passes calls to the real client; the first `unprocessed` BatchWriteItem calls answer half as unprocessed."""

    def __init__(self, client: Any, unprocessed: int) -> None:
        self._client = client
        self.left = unprocessed
        self.calls: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def batch_write_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
        requests = RequestItems[TABLE]
        self.calls.append(len(requests))
        assert len(requests) <= BATCH_WRITE_MAX
        if self.left > 0 and len(requests) > 1:
            self.left -= 1
            half = len(requests) // 2
            self._client.batch_write_item(RequestItems={TABLE: requests[:half]})
            return {"UnprocessedItems": {TABLE: requests[half:]}}
        return self._client.batch_write_item(RequestItems=RequestItems)


def test_reports_outcomes_and_refs_round_trip_within_the_tenant(dynamodb: Any) -> None:
    store = DynamoImportStore(TABLE, lambda tenant: dynamodb)
    store.save(_report())
    assert store.get("acme", "imp_abc") == _report()
    assert store.get("other", "imp_abc") is None
    outcomes = [
        ItemOutcome(
            ref=f"chat.jsonl#id:m{i}", namespace="/n", decision="added", record_id=f"r{i}", created=True
        )
        for i in range(230)
    ]
    store.add_outcomes("acme", "imp_abc", "/n", outcomes)
    assert sorted(o.ref for o in store.outcomes("acme", "imp_abc")) == sorted(o.ref for o in outcomes)
    refs = [o.ref for o in outcomes] + ["never"]
    assert store.seen("acme", "/n", refs) == set(refs[:-1])
    assert store.seen("acme", "/other", refs) == set()
    assert store.seen("other", "/n", refs) == set()
    items = dynamodb.scan(TableName=TABLE)["Items"]
    assert len(items) == 1 + 2 * 230
    assert all(item["pk"]["S"].startswith("acme#") for item in items)
    store.release("acme", "/n", refs[:100])
    assert store.seen("acme", "/n", refs) == set(refs[100:230])
    assert BATCH_GET_MAX == 100


def test_unprocessed_items_are_resent(dynamodb: Any) -> None:
    flaky = Flaky(dynamodb, unprocessed=2)
    store = DynamoImportStore(TABLE, lambda tenant: flaky, sleep=lambda s: None)
    outcomes = [ItemOutcome(ref=f"r{i}", namespace="/n", decision="added") for i in range(20)]
    store.add_outcomes("acme", "imp_x", "/n", outcomes)
    assert len(store.outcomes("acme", "imp_x")) == 20
    assert flaky.calls[:3] == [25, 13, 7]  # 25, its unprocessed half, then that one's half


class Throttled(Flaky):
    def batch_write_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(len(RequestItems[TABLE]))
        return {"UnprocessedItems": RequestItems}


def test_gives_up_after_bounded_resends(dynamodb: Any) -> None:
    throttled = Throttled(dynamodb, unprocessed=0)
    store = DynamoImportStore(TABLE, lambda tenant: throttled, sleep=lambda s: None)
    with pytest.raises(UpstreamUnavailable, match="unprocessed") as raised:
        store.add_outcomes("acme", "imp_y", "/n", [ItemOutcome(ref="r", namespace="/n", decision="added")])
    assert len(throttled.calls) == DYNAMODB_BATCH.max_attempts  # bounded: the one retry policy's attempts
    assert "acme#IMP#imp_y/ITEM#" in raised.value.message  # the error names what was not written
    assert len(raised.value.details["unprocessed"]) == 2  # the outcome and its ref row
