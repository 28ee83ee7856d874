"""The tree-index upkeep's bounds (domain/memory/index_upkeep.py), on a recording backfill: steps of
`step_records`, at most `max_records` per tenant, no step once the time is spent, one tenant's failure kept
to itself, and nothing at all where the store needs no backfill."""

from __future__ import annotations

from agent_memory.domain.errors import UpstreamUnavailable
from agent_memory.domain.memory.index_upkeep import IndexUpkeep, TenantBackfill
from agent_memory.domain.ports import IndexProgress


class RecordingBackfill:
    """Each tenant has `pending` records to index; `fail` names tenants whose calls raise."""

    def __init__(self, pending: dict[str, int], fail: frozenset[str] = frozenset()) -> None:
        self.pending = dict(pending)
        self.fail = fail
        self.calls: list[tuple[str, int | None]] = []

    def backfill_tree_index(self, tenant: str, *, max_records: int | None = None) -> IndexProgress:
        self.calls.append((tenant, max_records))
        if tenant in self.fail:
            raise UpstreamUnavailable("DynamoDB throttled")
        left = self.pending.get(tenant, 0)
        read = left if max_records is None else min(left, max_records)
        self.pending[tenant] = left - read
        return IndexProgress(tenant, read, read, complete=read == left)


def test_a_run_indexes_each_tenant_in_steps_up_to_its_bound():
    backfill = RecordingBackfill({"acme": 25, "globex": 3})
    done = IndexUpkeep(backfill, step_records=10).run(["acme", "globex"], max_records=22)
    assert done == {"acme": TenantBackfill(22, 22, False), "globex": TenantBackfill(3, 3, True)}
    assert backfill.calls == [("acme", 10), ("acme", 10), ("acme", 2), ("globex", 10)]
    again = IndexUpkeep(backfill, step_records=10).run(["acme"], max_records=22)
    assert again == {"acme": TenantBackfill(3, 3, True)}  # the next night finishes it


def test_no_step_starts_once_the_time_is_spent_and_later_tenants_wait_for_the_next_run():
    backfill = RecordingBackfill({"acme": 25, "globex": 3})
    budget = iter([True, False, False])  # time for one step only
    done = IndexUpkeep(backfill, step_records=10).run(["acme", "globex"], has_time=lambda: next(budget))
    assert done == {"acme": TenantBackfill(10, 10, False)}
    assert backfill.calls == [("acme", 10)]


def test_a_failing_tenant_is_reported_and_the_others_still_run():
    backfill = RecordingBackfill({"acme": 5, "globex": 2}, fail=frozenset({"acme"}))
    done = IndexUpkeep(backfill).run(["acme", "globex"])
    assert done == {
        "acme": TenantBackfill(0, 0, False, "UpstreamUnavailable"),
        "globex": TenantBackfill(2, 2, True),
    }


def test_without_a_backfill_or_with_a_zero_bound_a_run_does_nothing():
    assert not IndexUpkeep(None).needed
    assert IndexUpkeep(None).run(["acme"]) == {}
    backfill = RecordingBackfill({"acme": 5})
    assert IndexUpkeep(backfill).run(["acme"], max_records=0) == {}
    assert backfill.calls == []
