"""The scheduled completion of the record store's namespace-tree index (issue 32).

Records written before the tree index existed are not in it, and a tenant's tree listings take the old
filtered read (O(tenant) per page) until its backfill is complete (`ports.IndexBackfill`). The nightly
decay job (`handlers/jobs.py`) runs a bounded step of that backfill for every tenant it is given: at most
`max_records` records per tenant per run, in steps of `STEP_RECORDS`, and no new step once `has_time` says
the run's time is spent. Each step resumes where the last one stopped (the adapter keeps the position), so a
large tenant completes over several nights; a complete tenant costs one marker read. A tenant created after
the index (or with no records) completes in its first run.

A runtime whose store needs no backfill (SQLite indexes every record as it writes it) passes no backfill:
`run` does nothing there."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..errors import DomainError
from ..ports import IndexBackfill

RECORDS_PER_RUN = 20_000
"""Records one run may index per tenant (the decay job's input `tree_index_records` overrides it; 0 turns the
backfill off for that run). About 2 DynamoDB requests per record; a run stops early when its time is spent."""
STEP_RECORDS = 1_000
"""Records per backfill call: between steps the run checks its time."""


@dataclass(frozen=True)
class TenantBackfill:
    """One tenant's part of a run: records read and keys added by this run, whether the tenant is now complete,
    and the error that stopped it (the class name; the next run resumes)."""

    read: int = 0
    updated: int = 0
    complete: bool = False
    error: str | None = None

    def to_json(self) -> dict[str, object]:
        body: dict[str, object] = {"read": self.read, "updated": self.updated, "complete": self.complete}
        if self.error is not None:
            body["error"] = self.error
        return body


class IndexUpkeep:
    def __init__(self, backfill: IndexBackfill | None, *, step_records: int = STEP_RECORDS) -> None:
        self._backfill = backfill
        self._step = max(1, step_records)

    @property
    def needed(self) -> bool:
        """Whether this runtime's store has an index to complete."""
        return self._backfill is not None

    def run(
        self,
        tenants: Iterable[str],
        *,
        max_records: int = RECORDS_PER_RUN,
        has_time: Callable[[], bool] = lambda: True,
    ) -> dict[str, TenantBackfill]:
        """A bounded backfill step for each tenant, in order; a tenant reached when the time is spent is left
        for the next run (absent from the result). One tenant's failure does not stop the others."""
        if self._backfill is None or max_records <= 0:
            return {}
        done: dict[str, TenantBackfill] = {}
        for tenant in tenants:
            if not has_time():
                break
            done[tenant] = self._tenant(self._backfill, tenant, max_records, has_time)
        return done

    def _tenant(
        self, backfill: IndexBackfill, tenant: str, budget: int, has_time: Callable[[], bool]
    ) -> TenantBackfill:
        read = updated = 0
        try:
            while True:
                step = backfill.backfill_tree_index(tenant, max_records=min(self._step, budget - read))
                read, updated = read + step.read, updated + step.updated
                if step.complete or step.read == 0 or read >= budget or not has_time():
                    return TenantBackfill(read, updated, step.complete)
        except DomainError as error:
            return TenantBackfill(read, updated, False, type(error).__name__)
