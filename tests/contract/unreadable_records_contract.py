"""What every `RecordStore` does with a stored record that no longer loads (issue 16, defect 1): skip it on
every read and count it, find it for repair, and let `repair_records` fix or quarantine it, never delete it.

Subclass it with a `record_store` fixture (an empty store) and a `damage` fixture: a function
`damage(record, edit)` that rewrites the stored JSON of `record` in place, as an older version could have
written it: `edit` is either the new body text, or a function changing the parsed JSON object.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, timedelta
from typing import Any

import pytest

from agent_memory.domain.memory.repair import PLACEHOLDER, repair_records
from agent_memory.domain.ports import RecordQuery, RecordStore, RecordWrite
from agent_memory.domain.records import ChangeOperation, MemoryRecord, Status
from tests.contract.record_store_contract import (
    BILLING,
    SEARCH,
    T0,
    TENANT_A,
    TENANT_B,
    make_change,
    make_record,
)

Damage = Callable[[MemoryRecord, "str | Callable[[dict[str, Any]], Any]"], None]


def _nulls(data: dict[str, Any]) -> None:
    """What a non-finite number became when an older version stored it: null."""
    data["metadata"]["x"] = None
    data["score"] = None


class UnreadableRecordsContract:
    @pytest.fixture
    def record_store(self) -> RecordStore:
        raise NotImplementedError

    @pytest.fixture
    def damage(self, record_store: RecordStore) -> Damage:
        raise NotImplementedError

    def create(self, store: RecordStore, content: str, minutes: int, **fields: Any) -> MemoryRecord:
        record = make_record(content, at=T0 + timedelta(minutes=minutes), **fields)
        store.commit([RecordWrite(record, None)], [make_change(record)])
        return record

    def test_a_damaged_record_is_skipped_by_every_read_and_counted_in_listings(self, record_store, damage):
        bad = self.create(record_store, "The invoice job retries three times", 0, metadata={"x": 1.5})
        good = self.create(record_store, "The invoice job runs hourly", 1)
        other = self.create(record_store, "Globex keeps its own", 2, tenant=TENANT_B)
        damage(bad, _nulls)

        page = record_store.list(TENANT_A, RecordQuery(namespaces=(BILLING,)))
        assert [r.id for r in page.items] == [good.id] and page.skipped == 1
        whole_tenant = record_store.list(TENANT_A, RecordQuery())
        assert [r.id for r in whole_tenant.items] == [good.id] and whole_tenant.skipped == 1
        # Paging is by stored position, so a page holding only the damaged record still leads on.
        first = record_store.list(TENANT_A, RecordQuery(namespaces=(BILLING,), limit=1))
        assert first.items == [] and first.skipped == 1 and first.next_cursor
        second = record_store.list(
            TENANT_A, RecordQuery(namespaces=(BILLING,), limit=1, cursor=first.next_cursor)
        )
        assert [r.id for r in second.items] == [good.id] and second.next_cursor is None
        assert record_store.get(TENANT_A, bad.id) is None
        assert [r.id for r in record_store.get_many(TENANT_A, [bad.id, good.id])] == [good.id]
        assert record_store.find_by_hash(TENANT_A, BILLING, bad.content_hash) == []
        assert record_store.get(TENANT_B, other.id) == other

        (found,) = record_store.unreadable(TENANT_A, BILLING)
        assert (found.record_id, found.namespace, found.version, found.status) == (
            bad.id,
            BILLING,
            0,
            "active",
        )
        assert "metadata.x" in found.error and "score" in found.error
        assert "invoice" not in found.error  # the reason names fields, never content
        assert json.loads(found.body)["metadata"] == {"x": None}
        assert record_store.unreadable(TENANT_A) == [found]
        assert record_store.unreadable(TENANT_A, SEARCH) == []
        assert record_store.unreadable(TENANT_B) == []

    def test_naive_date_times_in_a_stored_record_load_as_utc(self, record_store, damage):
        record = self.create(record_store, "The office opens at nine", 0)

        def naive(data: dict[str, Any]) -> None:
            for name in ("created_at", "updated_at", "valid_from", "recorded_at"):
                data[name] = "2026-01-05T09:00:00"

        damage(record, naive)
        loaded = record_store.get(TENANT_A, record.id)
        assert loaded is not None and loaded.valid_from == T0 and loaded.valid_from.tzinfo is not None
        assert loaded.is_valid_at(T0.replace(tzinfo=None))  # a naive moment is UTC too
        assert record_store.unreadable(TENANT_A) == []

    def test_repair_fixes_what_it_can_and_quarantines_the_rest_never_deleting(self, record_store, damage):
        nulls = self.create(record_store, "Payroll runs on the 25th", 0, metadata={"x": 1.0, "team": "hr"})
        garbage = self.create(record_store, "The VPN gateway is in Dublin", 1)
        no_content = self.create(record_store, "Backups are kept 30 days", 2)
        odd_status = self.create(record_store, "Staging is rebuilt weekly", 3)
        fine = self.create(record_store, "The wiki lives on Confluence", 4)
        damage(nulls, _nulls)
        damage(garbage, "{this is not json")
        damage(no_content, lambda data: data.pop("content"))
        damage(odd_status, lambda data: data.update(status="zombie", half_life_hours="forever"))
        now = T0 + timedelta(days=1)

        preview = repair_records(
            record_store, TENANT_A, namespace=BILLING, now=now, actor="ops", dry_run=True
        )
        assert preview.as_dict()["counts"] == {"fixed": 2, "quarantined": 2}
        assert len(record_store.unreadable(TENANT_A)) == 4  # a dry run writes nothing

        report = repair_records(record_store, TENANT_A, namespace=BILLING, now=now, actor="ops")
        actions = {outcome.record_id: outcome.action for outcome in report.outcomes}
        assert actions == {
            nulls.id: "fixed",
            garbage.id: "quarantined",
            no_content.id: "quarantined",
            odd_status.id: "fixed",
        }
        assert record_store.unreadable(TENANT_A) == []
        page = record_store.list(TENANT_A, RecordQuery(namespaces=(BILLING,)))
        assert page.skipped == 0
        assert [r.id for r in page.items] == [nulls.id, garbage.id, no_content.id, odd_status.id, fine.id]

        fixed = record_store.get(TENANT_A, nulls.id)
        assert fixed is not None
        assert fixed.metadata == {"team": "hr"} and fixed.score == 0.5 and fixed.content == nulls.content
        assert fixed.status is Status.ACTIVE and fixed.version == nulls.version + 1
        assert fixed.valid_from == nulls.valid_from and fixed.created_at == nulls.created_at
        held = record_store.get(TENANT_A, odd_status.id)
        assert held is not None and held.status is Status.QUARANTINED and held.half_life_hours == 168.0
        placeholder = record_store.get(TENANT_A, garbage.id)
        assert placeholder is not None and placeholder.status is Status.QUARANTINED
        assert placeholder.content == PLACEHOLDER and placeholder.created_at == garbage.created_at
        assert "could not be read" in placeholder.status_reason
        emptied = record_store.get(TENANT_A, no_content.id)
        assert emptied is not None and emptied.status is Status.QUARANTINED and emptied.content == PLACEHOLDER
        assert record_store.get(TENANT_A, fine.id) == fine

        changes = record_store.list_changes(TENANT_A, namespace=BILLING, limit=100).items
        repairs = {c.record_id: c for c in changes if c.operation is ChangeOperation.REPAIR}
        assert set(repairs) == set(actions)
        assert repairs[garbage.id].before == {"stored_body": "{this is not json"}  # kept as it was stored
        assert repairs[nulls.id].before is not None and repairs[nulls.id].before["metadata"] == {
            "x": None,
            "team": "hr",
        }
        assert "metadata.x" in repairs[nulls.id].reason and repairs[nulls.id].actor == "ops"
        assert repairs[nulls.id].at == now.astimezone(UTC)

        assert repair_records(record_store, TENANT_A, namespace=None, now=now, actor="ops").outcomes == []
