"""The embedding-migration wing (domain/migration) over the local adapters: the state machine and its guarded
saves, the drift guard, dual write, the paced and resumable backfill with its cache and dead letters, verify,
switch, rollback and archive."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from agent_memory.adapters.local.embedders import HashingEmbedder
from agent_memory.adapters.local.migration import (
    LocalIndexCatalog,
    SqliteEmbeddingCache,
    SqliteMigrationStore,
    build_embedder_spec,
)
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.domain.errors import (
    ConcurrentModification,
    Conflict,
    EmbedderDrift,
    NotFound,
    UpstreamUnavailable,
)
from agent_memory.domain.memory.service import MemoryService, RecallInput, RememberInput
from agent_memory.domain.migration.model import ArchiveReceipt, Budget, MigrationState
from agent_memory.domain.migration.pacing import RateLimiter, TokenBucket
from agent_memory.domain.migration.routing import VectorRouting
from agent_memory.domain.migration.service import MigrationService
from agent_memory.domain.ports import IndexFilter
from agent_memory.domain.records import EmbedderIdentity
from tests.conftest import FixedClock

TENANT = "acme"
NS = "/notes"


class FakePacer:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class CountingEmbedder:
    """hashing@128 that counts what it embeds and fails as told."""

    def __init__(self, fail: float = 0.0, poison: str = "", seed: int = 7) -> None:
        self._inner = HashingEmbedder(128)
        self.embedded: list[str] = []
        self.fail = fail
        self.poison = poison
        self.calls = 0
        self._rng = random.Random(seed)

    @property
    def identity(self):
        return self._inner.identity

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        if self.poison and any(self.poison in t for t in texts):
            raise RuntimeError("model error on this text")
        if self._rng.random() < self.fail:
            raise UpstreamUnavailable("ThrottlingException")
        self.embedded.extend(texts)
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self._inner.embed_query(text)


class World:
    def __init__(self, path: Path, target: CountingEmbedder | None = None) -> None:
        self.clock = FixedClock()
        self.pacer = FakePacer()
        self.records = SqliteRecordStore(path / "memory.db")
        self.target = target or CountingEmbedder()
        self.drifts: list[tuple[str, str, str]] = []
        self.routing = VectorRouting(
            SqliteMigrationStore(path / "migrations.db"),
            LocalIndexCatalog(path, LocalSearchIndex(path / "index")),
            HashingEmbedder(384),
            lambda spec: self.target if spec == "counting" else build_embedder_spec(spec),
            self.clock,
            cache=SqliteEmbeddingCache(path / "cache.db"),
            on_drift=lambda *args: self.drifts.append(args),
        )
        self.memory = MemoryService(
            store=self.records,
            index=self.routing.index,
            embedder=HashingEmbedder(384),
            clock=self.clock,
            read_embedder=self.routing.read_embedder,
        )
        self.migration = MigrationService(self.records, self.routing, self.pacer, rng=random.Random(1))

    def remember(self, count: int, start: int = 0) -> list[str]:
        return [
            self.memory.remember(
                TENANT,
                RememberInput(content=f"fact {i}: the {i}th service uses port {8000 + i}", namespace=NS),
                actor="t",
            ).record.id
            for i in range(start, start + count)
        ]

    def recall_similarities(self, query: str) -> list[float]:
        result = self.memory.recall(TENANT, RecallInput(query=query, namespaces=(NS,), mode="vector"))
        return [item.fused.similarity for item in result.results]


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def test_the_lifecycle_moves_only_along_the_state_machine_with_an_audit_trail(world: World) -> None:
    world.remember(5)
    with pytest.raises(NotFound):
        world.migration.switch(TENANT, actor="t")  # nothing planned
    planned = world.migration.plan(TENANT, "counting", actor="ops", budget=Budget(page_size=2, batch_size=2))
    assert planned.state is MigrationState.PLANNED and planned.target.index == "e1"
    with pytest.raises(Conflict):
        world.migration.plan(TENANT, "counting", actor="ops")  # one open migration per tenant
    with pytest.raises(Conflict):
        world.migration.archive(TENANT, actor="ops")  # archive only after switch
    started = world.migration.start(TENANT, actor="ops")
    assert started.state is MigrationState.BACKFILLING
    done = world.migration.run_backfill(TENANT, started.id)
    assert done.state is MigrationState.VERIFYING and done.verification and done.verification.passed
    switched = world.migration.switch(TENANT, actor="ops")
    archived = world.migration.archive(TENANT, actor="ops")
    assert [e.to_state for e in archived.history] == [
        MigrationState.PLANNED,
        MigrationState.DUAL_WRITE,
        MigrationState.BACKFILLING,
        MigrationState.VERIFYING,
        MigrationState.SWITCHED,
        MigrationState.ARCHIVED,
    ]
    assert all(e.actor in ("ops", "backfill") for e in archived.history)
    assert switched.version < archived.version
    with pytest.raises(Conflict):
        world.migration.rollback(TENANT, actor="ops")  # no rollback after archive


def test_two_transitions_from_the_same_version_one_wins(world: World) -> None:
    world.remember(1)
    planned = world.migration.plan(TENANT, "counting", actor="a")
    store = world.routing.store
    first = planned.moved(MigrationState.DUAL_WRITE, at=world.clock.now(), actor="a")
    second = planned.moved(MigrationState.ROLLED_BACK, at=world.clock.now(), actor="b")
    store.save(first, expected_version=planned.version, expected_state=planned.state)
    with pytest.raises(ConcurrentModification):
        store.save(second, expected_version=planned.version, expected_state=planned.state)
    assert store.latest(TENANT).state is MigrationState.DUAL_WRITE


def test_the_drift_guard_refuses_a_query_of_another_fingerprint_and_counts_it(world: World) -> None:
    world.remember(2)
    other = HashingEmbedder(128)
    with pytest.raises(EmbedderDrift) as refused:
        world.routing.index.query_vector(
            TENANT, other.identity, other.embed_query("port"), k=3, where=IndexFilter(namespaces=(NS,))
        )
    assert refused.value.details["index_embedder"] == HashingEmbedder(384).identity.key
    assert world.routing.drift_refusals == 1
    assert world.drifts == [(TENANT, HashingEmbedder(384).identity.key, other.identity.key)]


def test_dual_write_reaches_both_indexes_and_reads_stay_on_the_old_one_until_switch(world: World) -> None:
    world.remember(3)
    world.migration.plan(TENANT, "counting", actor="t")
    world.migration.start(TENANT, actor="t", launch=False)
    new_id = world.remember(1, start=10)[0]
    catalog = world.routing.catalog
    assert catalog.count(TENANT, "e1") == 1  # only the dual-written record so far
    assert catalog.count(TENANT, "") == 4
    assert world.target.embedded == ["fact 10: the 10th service uses port 8010"]
    old_query = HashingEmbedder(384).embed_query("service port")
    hits = world.routing.index.query_vector(
        TENANT, HashingEmbedder(384).identity, old_query, k=10, where=IndexFilter(namespaces=(NS,))
    )
    assert new_id in {h.record_id for h in hits}


def test_a_failed_dual_write_dead_letters_the_record_and_the_request_succeeds(tmp_path: Path) -> None:
    world = World(tmp_path, CountingEmbedder(poison="poisoned"))
    world.remember(2)
    migration = world.migration.plan(TENANT, "counting", actor="t")
    world.migration.start(TENANT, actor="t", launch=False)
    result = world.memory.remember(TENANT, RememberInput(content="a poisoned fact", namespace=NS), actor="t")
    assert result.record.id
    letters = world.routing.store.dead_letters(TENANT, migration.id)
    assert [letter.record_id for letter in letters] == [result.record.id]


def test_the_backfill_resumes_from_its_checkpoint_and_never_embeds_a_text_twice(tmp_path: Path) -> None:
    world = World(tmp_path)
    world.remember(25)
    migration = world.migration.plan(TENANT, "counting", actor="t", budget=Budget(page_size=10, batch_size=5))
    world.migration.start(TENANT, actor="t", launch=False)
    world.migration.run_page(TENANT, migration.id)
    # The process dies after writing page 2 but before its checkpoint: page 2 runs again after restart.
    before = world.routing.store.latest(TENANT)
    world.migration.run_page(TENANT, migration.id)
    world.routing.store.save(
        before.bumped(world.clock.now()),
        expected_version=world.routing.store.latest(TENANT).version,
        expected_state=MigrationState.BACKFILLING,
    )
    restarted = World(tmp_path, world.target)
    done = restarted.migration.run_backfill(TENANT, migration.id)
    assert done.state is MigrationState.VERIFYING
    assert sorted(world.target.embedded) == sorted(set(world.target.embedded))  # embedded twice: 0
    assert len(world.target.embedded) == 25
    assert restarted.routing.catalog.count(TENANT, "e1") == 25  # lost: 0
    assert done.progress.cache_hits == 10  # the re-run page came from the cache
    assert restarted.migration.status(TENANT).coverage == 1.0


def test_throttles_are_retried_with_backoff_and_the_pace_holds_the_budget(tmp_path: Path) -> None:
    world = World(tmp_path, CountingEmbedder(fail=0.3))
    world.remember(40)
    budget = Budget(rpm=60, tpm=1_000_000, page_size=20, batch_size=1, max_attempts=10)
    migration = world.migration.plan(TENANT, "counting", actor="t", budget=budget)
    world.migration.start(TENANT, actor="t", launch=False)
    done = world.migration.run_backfill(TENANT, migration.id)
    assert done.progress.embed_retries > 0
    assert done.progress.written == 40 and done.progress.dead_lettered == 0
    # 60 rpm = one request a second: N requests take at least N-1 simulated seconds.
    assert world.pacer.now >= done.progress.embed_requests - 1  # budget shared by the pages (one burst)
    assert done.verification and done.verification.passed


def test_records_that_keep_failing_are_dead_lettered_block_the_switch_and_can_be_retried(
    tmp_path: Path,
) -> None:
    target = CountingEmbedder(poison="7th")
    world = World(tmp_path, target)
    world.remember(10)
    migration = world.migration.plan(TENANT, "counting", actor="t", budget=Budget(max_attempts=2))
    world.migration.start(TENANT, actor="t", launch=False)
    done = world.migration.run_backfill(TENANT, migration.id)
    assert done.state is MigrationState.VERIFYING
    assert done.verification and not done.verification.passed
    assert any("dead-lettered" in reason for reason in done.verification.reasons)
    with pytest.raises(Conflict):
        world.migration.switch(TENANT, actor="t")
    target.poison = ""
    retried = world.migration.retry(TENANT, actor="t")
    assert retried.verification and retried.verification.passed
    assert world.migration.switch(TENANT, actor="t").state is MigrationState.SWITCHED


def test_switch_and_rollback_flip_what_recall_compares_with(world: World) -> None:
    world.remember(6)
    old = world.recall_similarities("which service uses port 8003")
    migration = world.migration.plan(TENANT, "hashing@128", actor="t")
    world.migration.start(TENANT, actor="t", launch=False)
    world.migration.run_backfill(TENANT, migration.id)
    assert world.recall_similarities("which service uses port 8003") == old
    world.migration.switch(TENANT, actor="t")
    new = world.recall_similarities("which service uses port 8003")
    assert new != old
    world.migration.rollback(TENANT, actor="t")
    assert world.recall_similarities("which service uses port 8003") == old
    assert world.routing.catalog.count(TENANT, "e1") == 0  # the target index was dropped


def test_archive_deletes_nothing_when_the_export_is_not_verified(world: World, monkeypatch) -> None:
    world.remember(4)
    migration = world.migration.plan(TENANT, "counting", actor="t")
    world.migration.start(TENANT, actor="t", launch=False)
    world.migration.run_backfill(TENANT, migration.id)
    world.migration.switch(TENANT, actor="t")
    catalog = world.routing.catalog
    real_export = catalog.export
    monkeypatch.setattr(
        catalog, "export", lambda *a: real_export(*a).model_copy(update={"verified_count": 3})
    )
    with pytest.raises(Conflict, match="not verified"):
        world.migration.archive(TENANT, actor="t")
    assert (
        catalog.count(TENANT, "") == 4 and world.routing.store.latest(TENANT).state is MigrationState.SWITCHED
    )
    monkeypatch.setattr(catalog, "export", real_export)
    archived = world.migration.archive(TENANT, actor="t")
    assert isinstance(archived.archive, ArchiveReceipt) and archived.archive.verified_count == 4
    assert catalog.count(TENANT, "") == 0
    assert (Path(archived.archive.manifest)).exists()


def test_the_token_buckets_pace_requests_and_tokens() -> None:
    pacer = FakePacer()
    limiter = RateLimiter(rpm=120, tpm=1200, pacer=pacer)
    for _ in range(11):
        limiter.acquire(10)
    # 120 rpm: one request every 60/119 s after the first (rpm - 1 a minute plus the bucket's one request)
    assert pacer.now == pytest.approx(10 * 60 / 119)
    bucket = TokenBucket(rate=10.0, capacity=10.0)
    assert bucket.take(10, 0.0) == 0.0
    assert bucket.take(20, 0.0) == pytest.approx(2.0)  # a large request waits for its tokens


class ReversedEmbedder:
    """Another model with the same dimensions as the default (hashing@384 reversed): only the fingerprint tells
    their vectors apart."""

    def __init__(self) -> None:
        self._inner = HashingEmbedder(384)

    @property
    def identity(self) -> EmbedderIdentity:
        return EmbedderIdentity(name="reversed-hashing", dimensions=384)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [list(reversed(v)) for v in self._inner.embed_documents(texts)]

    def embed_query(self, text: str) -> list[float]:
        return list(reversed(self._inner.embed_query(text)))


class SwitchWhileEmbedding:
    """The default model; once armed, its next embedding runs `during` first (a read switch landing between the
    service's embedding of a memory and its write to the index)."""

    def __init__(self) -> None:
        self._inner = HashingEmbedder(384)
        self.during: Callable[[], object] | None = None

    @property
    def identity(self) -> EmbedderIdentity:
        return self._inner.identity

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        during, self.during = self.during, None
        if during is not None:
            during()
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self._inner.embed_query(text)


def test_a_switch_between_embedding_and_indexing_files_each_vector_under_its_own_model(
    tmp_path: Path,
) -> None:
    clock = FixedClock()
    default = SwitchWhileEmbedding()
    routing = VectorRouting(
        SqliteMigrationStore(tmp_path / "migrations.db"),
        LocalIndexCatalog(tmp_path, LocalSearchIndex(tmp_path / "index")),
        default,
        lambda spec: ReversedEmbedder() if spec == "reversed" else build_embedder_spec(spec),
        clock,
        cache=SqliteEmbeddingCache(tmp_path / "cache.db"),
    )
    memory = MemoryService(
        store=SqliteRecordStore(tmp_path / "memory.db"),
        index=routing.index,
        embedder=default,
        clock=clock,
        read_embedder=routing.read_embedder,
    )
    migration = MigrationService(memory._store, routing, FakePacer(), rng=random.Random(1))
    memory.remember(
        TENANT, RememberInput(content="the billing service uses port 8001", namespace=NS), actor="t"
    )
    planned = migration.plan(TENANT, "reversed", actor="t")
    migration.start(TENANT, actor="t", launch=False)
    migration.run_backfill(TENANT, planned.id)
    # Given the read switch lands while the next memory is being embedded with the old model
    default.during = lambda: migration.switch(TENANT, actor="t")
    text = "the search service uses port 8002"
    # Then the old model's vector is never compared with the new index: a clear 409 to retry, nothing stored
    with pytest.raises(EmbedderDrift, match="retry"):
        memory.remember(TENANT, RememberInput(content=text, namespace=NS), actor="t")
    assert sum(memory.counts(TENANT, NS).by_status.values()) == 1
    # And the retry files the new model's vector in the new index (now read), not the old one's under its name
    added = memory.remember(TENANT, RememberInput(content=text, namespace=NS), actor="t").record
    reversed_query = ReversedEmbedder().embed_query(text)
    hits = routing.index.query_vector(
        TENANT, ReversedEmbedder().identity, reversed_query, k=5, where=IndexFilter(namespaces=(NS,))
    )
    by_id = {hit.record_id: hit.score for hit in hits}
    assert by_id.get(added.id, 0.0) > 0.9, by_id
