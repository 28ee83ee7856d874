"""The embedding-migration lifecycle of one tenant: plan → start (dual write, then backfill) → verify →
switch → archive, or rollback before archive. See model.py for the states and routing.py for what each state
reads and writes. The service runs the same on both runtimes; a `BackfillLauncher` runs the backfill's pages
(a worker thread locally, the Step Functions state machine in AWS), each page through `run_page`."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from ..errors import ConcurrentModification, Conflict, NotFound, ValidationFailed
from ..ports import Hit, IndexFilter, RecordQuery, RecordStore
from ..records import Status
from ..retry import on_conflict
from .backfill import Backfiller
from .model import AuditEntry, Budget, IndexBinding, Migration, MigrationState, Progress, Verification
from .pacing import RateLimiter
from .ports import Pacer
from .routing import Target, VectorRouting

S = MigrationState
RECALL_SAMPLE = 50
RECALL_LOOKBACK = timedelta(days=30)
MAX_NAMESPACES = 200
INDEXED_STATUSES = tuple(s for s in Status if s is not Status.QUARANTINED)


class BackfillLauncher(Protocol):
    def start(self, tenant: str, migration_id: str) -> str:
        """Run the backfill's pages asynchronously; returns the run's id."""
        ...


@dataclass(frozen=True)
class MigrationStatus:
    migration: Migration
    records: int
    target_vectors: int
    coverage: float
    dead_letters: int
    rate_per_second: float | None
    eta_seconds: float | None
    cache_hit_ratio: float | None
    drift_refusals: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "tenant": self.migration.tenant,
            "id": self.migration.id,
            "state": self.migration.state.value,
            "source": self.migration.source.model_dump(mode="json"),
            "target": self.migration.target.model_dump(mode="json"),
            "records": self.records,
            "target_vectors": self.target_vectors,
            "coverage": round(self.coverage, 6),
            "dead_letters": self.dead_letters,
            "rate_per_second": self.rate_per_second,
            "eta_seconds": self.eta_seconds,
            "cache_hit_ratio": self.cache_hit_ratio,
            "drift_refusals": self.drift_refusals,
            "progress": self.migration.progress.model_dump(mode="json"),
            "verification": self.migration.verification.model_dump(mode="json")
            if self.migration.verification
            else None,
            "archive": self.migration.archive.model_dump(mode="json") if self.migration.archive else None,
            "execution": self.migration.execution,
            "history": [entry.model_dump(mode="json") for entry in self.migration.history],
        }


class MigrationService:
    def __init__(
        self,
        records: RecordStore,
        routing: VectorRouting,
        pacer: Pacer,
        *,
        launcher: BackfillLauncher | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self._records = records
        self.routing = routing
        self._store = routing.store
        self._catalog = routing.catalog
        self._clock = routing.clock
        self._pacer = pacer
        self.launcher = launcher
        self._rng = rng or random.Random()
        self._limiters: dict[str, RateLimiter] = {}
        """One limiter per migration for this process: its pages share the budget (no fresh burst per page)."""

    # ------------------------------------------------------------------ reading

    def get(self, tenant: str) -> Migration:
        migration = self._store.latest(tenant)
        if migration is None:
            raise NotFound(f"tenant {tenant!r} has no embedding migration; plan one first")
        return migration

    def status(self, tenant: str) -> MigrationStatus:
        migration = self.get(tenant)
        records = self._indexed_records(tenant)
        vectors = (
            self._catalog.count(tenant, migration.target.index) if migration.state is not S.PLANNED else 0
        )
        progress = migration.progress
        rate = progress.records_seen / progress.busy_seconds if progress.busy_seconds > 0 else None
        remaining = max(0, progress.records_total - progress.records_seen)
        eta = None
        if migration.state in (S.DUAL_WRITE, S.BACKFILLING) and rate:
            eta = 0.0 if progress.done else remaining / rate
        looked_up = progress.cache_hits + progress.cache_misses
        return MigrationStatus(
            migration=migration,
            records=records,
            target_vectors=vectors,
            coverage=vectors / records if records else 1.0,
            dead_letters=self._store.count_dead_letters(tenant, migration.id),
            rate_per_second=round(rate, 3) if rate else None,
            eta_seconds=round(eta, 1) if eta is not None else None,
            cache_hit_ratio=round(progress.cache_hits / looked_up, 4) if looked_up else None,
            drift_refusals=self.routing.drift_refusals,
        )

    def _indexed_records(self, tenant: str) -> int:
        counts = self._records.counts(tenant)
        return sum(n for status, n in counts.by_status.items() if status != Status.QUARANTINED.value)

    # ------------------------------------------------------------------ lifecycle

    def plan(
        self,
        tenant: str,
        embedder: str,
        *,
        actor: str,
        budget: Budget | None = None,
        min_coverage: float = 0.99,
        min_overlap_at_10: float = 0.5,
    ) -> Migration:
        latest = self._store.latest(tenant)
        if latest is not None and not latest.finished:
            raise Conflict(
                f"tenant {tenant!r} already has migration {latest.id} in state {latest.state.value}; finish "
                "it (switch and archive) or roll it back first",
                migration_id=latest.id,
                state=latest.state.value,
            )
        if not embedder.strip():
            raise ValidationFailed("name the embedder to migrate to")
        try:
            target_embedder = self.routing.embedder(embedder)
        except ValueError as error:
            raise ValidationFailed(str(error)) from error
        source = self.routing.current_binding(tenant)
        if target_embedder.identity.key == source.fingerprint:
            raise Conflict(f"tenant {tenant!r} already uses {source.fingerprint}; nothing to migrate")
        generation = (latest.generation + 1) if latest else 1
        now = self._clock.now()
        migration = Migration(
            tenant=tenant,
            generation=generation,
            source=source,
            target=IndexBinding(
                index=f"e{generation}", embedder=embedder, fingerprint=target_embedder.identity.key
            ),
            budget=budget or Budget(),
            min_coverage=min_coverage,
            min_overlap_at_10=min_overlap_at_10,
            created_at=now,
            updated_at=now,
        )
        migration = migration.model_copy(
            update={"history": [_audit(None, S.PLANNED, now, actor, f"to {migration.target.fingerprint}")]}
        )
        self._store.create(migration)
        self.routing.forget(tenant)
        return migration

    def start(self, tenant: str, *, actor: str, launch: bool = True) -> Migration:
        """planned → dual_write (the target index is created; from now on every write reaches both) →
        backfilling (the record count is taken), then the launcher runs the pages when `launch`."""
        migration = self.get(tenant)
        if migration.state is S.PLANNED:
            identity = self.routing.embedder(migration.target.embedder).identity
            self._catalog.create(tenant, migration.target.index, identity)
            migration = self._move(migration, S.DUAL_WRITE, actor, "target index created; dual write on")
        if migration.state is S.DUAL_WRITE:
            # Dual write is on before the count, so a record created from here on is written to both indexes.
            progress = Progress(records_total=self._indexed_records(tenant))
            migration = self._move(migration, S.BACKFILLING, actor, "backfill started", progress=progress)
        if migration.state is not S.BACKFILLING:
            raise Conflict(f"migration {migration.id} is {migration.state.value}; there is nothing to start")
        if launch and self.launcher is not None:
            execution = self.launcher.start(tenant, migration.id)
            migration = self._record_execution(migration, execution)
        return migration

    def _record_execution(self, migration: Migration, execution: str) -> Migration:
        """Note the run's id on the migration; the run may already have saved pages (or finished), so the
        note is written on top of whatever version is current. If it keeps losing to the run's own saves, 409
        says the run is started but unnoted (it was dropped silently before)."""

        def once() -> Migration:
            current = self.get(migration.tenant)
            if current.id != migration.id:
                return current
            return self._save(current.bumped(self._clock.now(), execution=execution), current)

        return on_conflict(
            once,
            attempts=5,
            give_up=lambda spent: ConcurrentModification(
                f"migration {migration.id}: run {execution} is started, but its id could not be noted on the "
                f"migration ({spent.attempts} attempts lost to other writes); read its status",
                migration_id=migration.id,
                execution=execution,
            ),
        )

    def run_page(self, tenant: str, migration_id: str) -> Migration:
        """One page of the backfill from the checkpoint; the checkpoint is saved guarded by the version read,
        so a rollback (or a second runner) that moved the migration on stops this one with 409. The page after
        the last one retries the dead letters once and moves the migration to verifying (and verifies)."""
        migration = self.get(tenant)
        if migration.id != migration_id:
            raise Conflict(f"migration {migration_id} is no longer the tenant's current one")
        if migration.state is not S.BACKFILLING:
            return migration
        progress = migration.progress
        if progress.done:
            return self._finish_backfill(migration)
        started = self._pacer.monotonic()
        page = self._records.list(
            tenant,
            RecordQuery(statuses=INDEXED_STATUSES, limit=migration.budget.page_size, cursor=progress.cursor),
        )
        target = self.routing.target(tenant, migration.target)
        backfiller = self._backfiller(migration)
        outcome = backfiller.run(tenant, target, page.items, self._clock.now())
        if outcome.dead:
            self._store.add_dead_letters(tenant, migration.id, outcome.dead)
        namespaces = list(dict.fromkeys([*progress.namespaces, *(r.namespace for r in page.items)]))
        updated = progress.model_copy(
            update={
                "cursor": page.next_cursor,
                "done": page.next_cursor is None,
                "pages_done": progress.pages_done + 1,
                "records_seen": progress.records_seen + len(page.items),
                "written": progress.written + len(outcome.written),
                "skipped_changed": progress.skipped_changed + outcome.skipped_changed,
                "dead_lettered": progress.dead_lettered + len(outcome.dead),
                "embed_requests": progress.embed_requests + outcome.requests,
                "embed_retries": progress.embed_retries + outcome.retries,
                "cache_hits": progress.cache_hits + outcome.cache_hits,
                "cache_misses": progress.cache_misses + outcome.cache_misses,
                "tokens": progress.tokens + outcome.tokens,
                "busy_seconds": progress.busy_seconds + (self._pacer.monotonic() - started),
                "namespaces": namespaces[:MAX_NAMESPACES],
            }
        )
        return self._save(migration.bumped(self._clock.now(), progress=updated), migration)

    def _backfiller(self, migration: Migration) -> Backfiller:
        limiter = self._limiters.get(migration.id)
        if limiter is None:
            budget = migration.budget
            limiter = self._limiters[migration.id] = RateLimiter(budget.rpm, budget.tpm, self._pacer)
        return Backfiller(self._records, self._pacer, migration.budget, limiter, self._rng)

    def run_page_retrying(self, tenant: str, migration_id: str, attempts: int = 3) -> Migration:
        """`run_page`, again when the checkpoint save lost to another write of the migration (e.g. `start`
        recording the run's id, or a retry's dead-letter pass): the page re-runs from the last saved
        checkpoint, its vectors come from the cache. A rollback meanwhile ends it (the state is re-read)."""
        return on_conflict(lambda: self.run_page(tenant, migration_id), attempts=attempts)

    def run_backfill(
        self, tenant: str, migration_id: str, on_page: Callable[[Migration], None] | None = None
    ) -> Migration:
        """All remaining pages (the local worker and the CLI), then verification."""
        while True:
            migration = self.run_page_retrying(tenant, migration_id)
            if on_page is not None:
                on_page(migration)
            if migration.state is not S.BACKFILLING:
                return migration

    def _finish_backfill(self, migration: Migration) -> Migration:
        self.retry_dead_letters_in(migration)
        migration = self._move(self.get(migration.tenant), S.VERIFYING, "backfill", "all pages done")
        return self.verify(migration.tenant)

    def retry_dead_letters_in(self, migration: Migration) -> int:
        """Embed the dead-lettered records again (from the store's current version); returns how many left
        the list."""
        tenant = migration.tenant
        letters = self._store.dead_letters(tenant, migration.id, limit=migration.budget.page_size)
        if not letters:
            return 0
        records = self._records.get_many(tenant, [letter.record_id for letter in letters])
        target = self.routing.target(tenant, migration.target)
        outcome = self._backfiller(migration).run(tenant, target, records, self._clock.now())
        still = {letter.record_id for letter in outcome.dead}
        gone = [letter.record_id for letter in letters if letter.record_id not in still]
        self._store.remove_dead_letters(tenant, migration.id, gone)
        if outcome.dead:
            self._store.add_dead_letters(tenant, migration.id, outcome.dead)
        return len(gone)

    def retry(self, tenant: str, *, actor: str) -> Migration:
        """Re-run the dead letters of a migration that is verifying, then verify again."""
        migration = self.get(tenant)
        if migration.state is not S.VERIFYING:
            raise Conflict(f"dead letters are retried while verifying; migration is {migration.state.value}")
        while self.retry_dead_letters_in(migration):
            migration = self.get(tenant)
        return self.verify(tenant)

    def verify(self, tenant: str) -> Migration:
        """Coverage (target vectors / indexed records) and overlap@10 of old and new on recent recall-log
        queries; saved on the migration (switch requires it passed)."""
        migration = self.get(tenant)
        if migration.state is not S.VERIFYING:
            raise Conflict(f"only a backfilled migration is verified; this one is {migration.state.value}")
        records = self._indexed_records(tenant)
        vectors = self._catalog.count(tenant, migration.target.index)
        coverage = vectors / records if records else 1.0
        overlap, sampled = self._overlap(migration)
        reasons = []
        if coverage < migration.min_coverage:
            reasons.append(f"coverage {coverage:.4f} is below {migration.min_coverage}")
        if overlap is not None and overlap < migration.min_overlap_at_10:
            reasons.append(f"overlap@10 {overlap:.3f} is below {migration.min_overlap_at_10}")
        if dead := self._store.count_dead_letters(tenant, migration.id):
            reasons.append(f"{dead} records are dead-lettered: `migrate retry`")
        verification = Verification(
            at=self._clock.now(),
            records=records,
            target_vectors=vectors,
            coverage=coverage,
            sample_queries=sampled,
            overlap_at_10=overlap,
            passed=not reasons,
            reasons=reasons
            or ([] if overlap is not None else ["no recent recall-log queries: overlap not measured"]),
        )
        return self._save(migration.bumped(self._clock.now(), verification=verification), migration)

    def _overlap(self, migration: Migration) -> tuple[float | None, int]:
        tenant = migration.tenant
        since = self._clock.now() - RECALL_LOOKBACK
        queries: list[tuple[str, str]] = []
        for namespace in migration.progress.namespaces or self._namespaces(tenant):
            for entry in self._records.list_recalls(tenant, namespace, since):
                if entry.query_terms:
                    queries.append((namespace, " ".join(entry.query_terms)))
        queries = list(dict.fromkeys(queries))[-RECALL_SAMPLE:]
        if not queries:
            return None, 0
        source = self.routing.target(tenant, migration.source)
        target = self.routing.target(tenant, migration.target)
        total = 0.0
        for namespace, text in queries:
            where = IndexFilter(namespaces=(namespace,), statuses=(Status.ACTIVE,))
            old = {h.record_id for h in _top(source, tenant, text, where)}
            new = {h.record_id for h in _top(target, tenant, text, where)}
            total += len(old & new) / max(1, min(10, max(len(old), len(new))))
        return total / len(queries), len(queries)

    def _namespaces(self, tenant: str) -> list[str]:
        found: dict[str, None] = {}
        cursor = None
        while len(found) < MAX_NAMESPACES:
            page = self._records.list(tenant, RecordQuery(limit=500, cursor=cursor))
            found.update((r.namespace, None) for r in page.items)
            cursor = page.next_cursor
            if not cursor:
                break
        return list(found)[:MAX_NAMESPACES]

    def switch(self, tenant: str, *, actor: str) -> Migration:
        """One guarded write flips the tenant's reads to the target index (writes still reach both)."""
        migration = self.verify(tenant)
        verification = migration.verification
        assert verification is not None
        if not verification.passed:
            raise Conflict(
                "the migration did not pass verification: " + "; ".join(verification.reasons),
                coverage=verification.coverage,
                overlap_at_10=verification.overlap_at_10,
            )
        return self._move(migration, S.SWITCHED, actor, f"coverage {verification.coverage:.4f}")

    def rollback(self, tenant: str, *, actor: str, reason: str = "") -> Migration:
        """One guarded write returns reads and writes to the source; the target index is then dropped (the
        source holds every record: it was written throughout)."""
        migration = self.get(tenant)
        if migration.state in (S.ARCHIVED, S.ROLLED_BACK):
            raise Conflict(f"migration {migration.id} is {migration.state.value}; it cannot be rolled back")
        rolled = self._move(migration, S.ROLLED_BACK, actor, reason or "rolled back")
        if migration.state is not S.PLANNED:
            self._pacer.sleep(self.routing.route_ttl_seconds)  # no process routes writes to it any more
            self._catalog.drop(tenant, migration.target.index)
        return rolled

    def archive(self, tenant: str, *, actor: str) -> Migration:
        """Export the source index's vectors (with a manifest, read back and counted), stop writing it, and
        only then delete it. A count that differs at any step stops before anything is deleted."""
        migration = self.get(tenant)
        if migration.state is not S.SWITCHED:
            raise Conflict(f"only a switched migration is archived; this one is {migration.state.value}")
        name = migration.source.index
        receipt = self._catalog.export(tenant, name, migration.id)
        live = self._catalog.count(tenant, name)
        if not receipt.vectors == receipt.verified_count == live:
            raise Conflict(
                f"archive export not verified: exported {receipt.vectors}, manifest says {receipt.verified_count}, "
                f"index holds {live}; nothing was deleted, run archive again",
            )
        archived = self._move(
            migration, S.ARCHIVED, actor, f"{receipt.vectors} vectors at {receipt.location}"
        )
        self._pacer.sleep(self.routing.route_ttl_seconds)  # until no process routes writes to the source
        if self._catalog.count(tenant, name) != receipt.vectors:  # a write landed between export and the flip
            receipt = self._catalog.export(tenant, name, migration.id)
            if receipt.vectors != receipt.verified_count or receipt.vectors != self._catalog.count(
                tenant, name
            ):
                raise Conflict("archive re-export not verified; the old index was kept, run archive again")
        archived = self._save(archived.bumped(self._clock.now(), archive=receipt), archived)
        self._catalog.drop(tenant, name)
        return archived

    # ------------------------------------------------------------------ saving

    def _move(
        self, migration: Migration, to: MigrationState, actor: str, note: str, **changes: Any
    ) -> Migration:
        try:
            moved = migration.moved(to, at=self._clock.now(), actor=actor, note=note)
        except ValueError as error:
            raise Conflict(str(error), state=migration.state.value) from error
        if changes:
            moved = moved.model_copy(update=changes)
        return self._save(moved, migration)

    def _save(self, new: Migration, old: Migration) -> Migration:
        try:
            self._store.save(new, expected_version=old.version, expected_state=old.state)
            self.routing.forget(old.tenant)
        except ConcurrentModification:
            current = self._store.latest(old.tenant)
            state = current.state.value if current else "gone"
            raise ConcurrentModification(
                f"migration {old.id} changed meanwhile (now {state}); read its status and retry",
                migration_id=old.id,
                state=state,
            ) from None
        return new


def _top(target: Target, tenant: str, text: str, where: IndexFilter) -> list[Hit]:
    vector = target.embedder.embed_query(text)
    return target.index.query_vector(tenant, target.embedder.identity, vector, k=10, where=where)


def _audit(
    source: MigrationState | None, to: MigrationState, at: datetime, actor: str, note: str
) -> AuditEntry:
    return AuditEntry(at=at, actor=actor, from_state=source, to_state=to, note=note)
