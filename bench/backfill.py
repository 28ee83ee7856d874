"""Embedding-migration backfill under a rate budget, on a simulated clock (issue 12).

A provider stands in for the embedding model: it admits at most `--rpm` requests in any 60 s window (more are
throttled, and counted as budget violations), answers each request after 50 ms, and injects faults into 10 % of
the requests it admits (half throttles, half model errors). Records are loaded into a real local data directory
(SQLite records, the local index catalog, the SQLite migration store and embedding cache); 5 % of them repeat
another record's text. Time is simulated (the `Pacer` port and the provider share one fake clock), so the
figures are exact and the run takes seconds.

Two runs:
- straight: plan → start → all pages → verify (the dead letters retried until empty);
- interrupted: the same, but the process "dies" halfway, after writing a page and before saving its
  checkpoint; a new service (a new process) resumes from the last saved checkpoint.

Figures: achieved request rate as % of the RPM budget (target ≥ 95 %), budget violations (0), records lost (0),
texts embedded twice (0), cache hit ratio, and the time 100k records take at this budget.

    .venv/bin/python bench/backfill.py [--records 5000] [--rpm 600] [--batch-size 1] [--seed 7]

Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from collections import Counter, deque
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agent_memory.adapters.local.embedders import HashingEmbedder
from agent_memory.adapters.local.migration import (
    LocalIndexCatalog,
    SqliteEmbeddingCache,
    SqliteMigrationStore,
)
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.domain.errors import UpstreamFailed, UpstreamUnavailable
from agent_memory.domain.migration.model import Budget, MigrationState
from agent_memory.domain.migration.routing import VectorRouting
from agent_memory.domain.migration.service import MigrationService
from agent_memory.domain.ports import RecordWrite
from agent_memory.domain.records import MemoryRecord, MemoryType, content_hash

TENANT = "bench"
NOW = datetime(2026, 12, 1, tzinfo=UTC)
LATENCY = 0.05
FAULT_RATE = 0.10
TARGET_SHARE = 0.95


class SimClock:
    """The Pacer (monotonic seconds, sleep) and the Clock port, on simulated time."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def monotonic(self) -> float:
        return self.seconds

    def sleep(self, seconds: float) -> None:
        self.seconds += max(0.0, seconds)

    def now(self) -> datetime:
        return NOW + timedelta(seconds=self.seconds)


class BudgetedProvider:
    """An embedding model behind a requests-per-minute quota, with injected faults."""

    def __init__(self, clock: SimClock, rpm: int, rng: random.Random) -> None:
        self._clock, self._rpm, self._rng = clock, rpm, rng
        self._model = HashingEmbedder(256)
        self._window: deque[float] = deque()
        self.admitted = 0
        self.over_budget = 0
        self.faults = 0
        self.embedded: Counter[str] = Counter()

    @property
    def identity(self):
        return self._model.identity

    def embed_query(self, text: str) -> list[float]:
        return self._model.embed_query(text)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        now = self._clock.monotonic()
        while self._window and self._window[0] <= now - 60.0:
            self._window.popleft()
        if len(self._window) >= self._rpm:
            self.over_budget += 1
            raise UpstreamUnavailable("ThrottlingException: requests per minute exceeded")
        self._window.append(now)
        self.admitted += 1
        self._clock.sleep(LATENCY)
        draw = self._rng.random()
        if draw < FAULT_RATE / 2:
            self.faults += 1
            raise UpstreamUnavailable("ThrottlingException: injected")
        if draw < FAULT_RATE:
            self.faults += 1
            raise UpstreamFailed("ModelErrorException: injected")
        self.embedded.update(texts)
        return self._model.embed_documents(texts)


def load(store: SqliteRecordStore, count: int, rng: random.Random) -> None:
    texts: list[str] = []
    for i in range(count):
        if texts and rng.random() < 0.05:
            texts.append(rng.choice(texts))
        else:
            texts.append(
                f"note {i}: service {rng.randrange(500)} uses port {rng.randrange(1, 65535)} in zone {i % 7}"
            )
    batch: list[RecordWrite] = []
    for text in texts:
        record = MemoryRecord(
            tenant=TENANT,
            namespace="/bench",
            type=MemoryType.DOMAIN_KNOWLEDGE,
            content=text,
            created_at=NOW,
            updated_at=NOW,
            last_access_at=NOW,
            valid_from=NOW,
            recorded_at=NOW,
            content_hash=content_hash(text),
            embedding_model=HashingEmbedder(384).identity.key,
        )
        batch.append(RecordWrite(record, None))
        if len(batch) == 500:
            store.commit(batch, [])
            batch = []
    if batch:
        store.commit(batch, [])


def world(data: Path, clock: SimClock, provider: BudgetedProvider) -> tuple[MigrationService, VectorRouting]:
    store = SqliteRecordStore(data / "memory.db")
    routing = VectorRouting(
        SqliteMigrationStore(data / "migrations.db"),
        LocalIndexCatalog(data, LocalSearchIndex(data / "index")),
        HashingEmbedder(384),
        lambda spec: provider,
        clock,
        cache=SqliteEmbeddingCache(data / "embedding_cache.db"),
    )
    return MigrationService(store, routing, clock, rng=random.Random(3)), routing


def run(records: int, rpm: int, batch_size: int, seed: int, *, interrupt: bool) -> dict[str, float]:
    rng = random.Random(seed)
    clock = SimClock()
    provider = BudgetedProvider(clock, rpm, random.Random(seed + 1))
    with tempfile.TemporaryDirectory(prefix="backfill-bench-") as tmp:
        data = Path(tmp)
        load(SqliteRecordStore(data / "memory.db"), records, rng)
        service, routing = world(data, clock, provider)
        budget = Budget(rpm=rpm, tpm=rpm * 1000, page_size=500, batch_size=batch_size, max_attempts=4)
        migration = service.plan(TENANT, "provider", actor="bench", budget=budget, min_overlap_at_10=0.0)
        service.start(TENANT, actor="bench", launch=False)
        started = clock.monotonic()
        if interrupt:
            pages = records // budget.page_size // 2
            for _ in range(max(1, pages)):
                service.run_page(TENANT, migration.id)
            before = routing.store.latest(TENANT)
            assert before is not None
            service.run_page(TENANT, migration.id)  # written to the index and the cache...
            after = routing.store.latest(TENANT)
            assert after is not None
            # ...but the process dies before the checkpoint lands: put the previous checkpoint back.
            routing.store.save(
                before.bumped(clock.now()), expected_version=after.version, expected_state=after.state
            )
            service, routing = world(data, clock, provider)  # a new process
        done = service.run_backfill(TENANT, migration.id)
        while routing.store.count_dead_letters(TENANT, migration.id):
            done = service.retry(TENANT, actor="bench")
        elapsed = clock.monotonic() - started
        assert done.state is MigrationState.VERIFYING, done.state
        indexed = routing.catalog.count(TENANT, migration.target.index)
        status = service.status(TENANT)
        twice = sum(1 for n in provider.embedded.values() if n > 1)
        requests = provider.admitted + provider.over_budget
        return {
            "records": records,
            "indexed": indexed,
            "lost": records - indexed,
            "embedded_twice": twice,
            "requests": requests,
            "over_budget": provider.over_budget,
            "faults": provider.faults,
            "elapsed_s": elapsed,
            "share_of_budget": requests / (elapsed / 60.0 * rpm),
            "records_per_s": records / elapsed,
            "cache_hit_ratio": status.cache_hit_ratio or 0.0,
            "coverage": status.coverage,
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--rpm", type=int, default=600)
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    missed: list[str] = []
    print(
        f"budget {args.rpm} requests/min, {args.batch_size} text(s)/request, {FAULT_RATE:.0%} injected faults"
    )
    for interrupt in (False, True):
        name = "interrupted + resumed" if interrupt else "straight"
        r = run(args.records, args.rpm, args.batch_size, args.seed, interrupt=interrupt)
        hours_100k = 100_000 / r["records_per_s"] / 3600
        print(
            f"{name:>22}: {int(r['records'])} records in {r['elapsed_s'] / 60:.1f} simulated min; "
            f"requests {int(r['requests'])} = {r['share_of_budget']:.1%} of budget (target >= {TARGET_SHARE:.0%}); "
            f"over budget {int(r['over_budget'])}; injected faults {int(r['faults'])}; lost {int(r['lost'])}; "
            f"embedded twice {int(r['embedded_twice'])}; cache hit ratio {r['cache_hit_ratio']:.3f}; "
            f"coverage {r['coverage']:.4f}; 100k records at this budget: {hours_100k:.2f} h"
        )
        for label, ok in (
            ("throughput share", r["share_of_budget"] >= TARGET_SHARE),
            ("over budget", r["over_budget"] == 0),
            ("lost", r["lost"] == 0),
            ("embedded twice", r["embedded_twice"] == 0),
        ):
            if not ok:
                missed.append(f"{name}: {label}")
    if missed:
        print("MISSED: " + ", ".join(missed))
        return 1
    print("all targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
