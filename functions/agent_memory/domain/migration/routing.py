"""Which index and model serve a tenant's reads and writes during an embedding migration, and the drift guard.

`VectorRouting.index` is the `SearchIndex` the memory service writes and queries; `read_embedder(tenant)` is
the model it embeds with. Both follow the tenant's latest migration (read from the store on every call, so a
switch or rollback is one atomic write that every process sees at its next request):

| state                                  | reads (queries)  | writes                  |
|----------------------------------------|------------------|-------------------------|
| none, planned, rolled_back             | source           | source                  |
| dual_write, backfilling, verifying     | source           | source + target         |
| switched                               | target           | target + source         |
| archived                               | target           | target                  |

A query is never compared with vectors of another fingerprint: `query_vector` with a vector of a model other
than the read index's raises `EmbedderDrift` (409) and calls the drift meter. Writes to the index that is not
being read are best effort for the request: a failure is logged and the record goes to the migration's
dead-letter list, from which `migrate retry` re-embeds it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import EmbedderDrift
from ..ports import Clock, Embedder, Hit, IndexEntry, IndexFilter, SearchIndex, Vector
from ..records import EmbedderIdentity, Status
from .model import READS_TARGET, WRITES_SOURCE, WRITES_TARGET, DeadLetter, IndexBinding, Migration, text_hash
from .ports import DriftMeter, EmbeddingCache, IndexCatalog, MigrationStore

logger = logging.getLogger(__name__)


class CachingEmbedder:
    """An embedder that looks document vectors up by (fingerprint, text hash) before asking the model, and
    stores what the model returns. Serves duplicate writes, merges and repeated or resumed backfills. Queries
    are not cached (some models embed queries differently from documents)."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache, tenant: str) -> None:
        self._inner = inner
        self._cache = cache
        self._tenant = tenant
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def identity(self) -> EmbedderIdentity:
        return self._inner.identity

    def embed_query(self, text: str) -> Vector:
        return self._inner.embed_query(text)

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        vectors, _ = self.embed_counted(texts)
        return vectors

    def lookup(self, texts: Sequence[str]) -> dict[str, Vector]:
        """Cached vectors of `texts` by text hash (a backfill asks first, then paces only the misses)."""
        found = self._cache.get_many(
            self._tenant, self.identity.key, list(dict.fromkeys(text_hash(t) for t in texts))
        )
        with self._lock:
            self.hits += sum(1 for text in texts if text_hash(text) in found)
        return found

    def compute(self, texts: Sequence[str]) -> dict[str, Vector]:
        """Embed `texts` with the model (no look-up) and cache the vectors."""
        vectors = self._inner.embed_documents(list(texts))
        fresh = {text_hash(text): vector for text, vector in zip(texts, vectors, strict=True)}
        self._cache.put_many(self._tenant, self.identity.key, fresh)
        with self._lock:
            self.misses += len(texts)
        return fresh

    def embed_counted(self, texts: Sequence[str]) -> tuple[list[Vector], int]:
        """The vectors of `texts` and how many of them the model computed (the rest came from the cache)."""
        if not texts:
            return [], 0
        fingerprint = self.identity.key
        keys = [text_hash(text) for text in texts]
        found = self._cache.get_many(self._tenant, fingerprint, list(dict.fromkeys(keys)))
        missing = list(dict.fromkeys(text for text, key in zip(texts, keys, strict=True) if key not in found))
        if missing:
            computed = self._inner.embed_documents(missing)
            fresh = {text_hash(text): vector for text, vector in zip(missing, computed, strict=True)}
            self._cache.put_many(self._tenant, fingerprint, fresh)
            found.update(fresh)
        with self._lock:
            self.hits += len(texts) - len(missing)
            self.misses += len(missing)
        return [found[key] for key in keys], len(missing)


@dataclass(frozen=True)
class Target:
    index_name: str
    index: SearchIndex
    embedder: Embedder

    @property
    def fingerprint(self) -> str:
        return self.embedder.identity.key


@dataclass(frozen=True)
class Routes:
    read: Target
    writes: tuple[Target, ...]
    migration: Migration | None


class VectorRouting:
    def __init__(
        self,
        store: MigrationStore,
        catalog: IndexCatalog,
        default_embedder: Embedder,
        embedders: Callable[[str], Embedder],
        clock: Clock,
        *,
        cache: EmbeddingCache | None = None,
        on_drift: DriftMeter | None = None,
        route_ttl_seconds: float = 0.0,
    ) -> None:
        self.store = store
        self.catalog = catalog
        self.clock = clock
        self._default = default_embedder
        self._factory = embedders
        self._cache = cache
        self._embedders: dict[str, Embedder] = {}
        self._cached: dict[tuple[str, str], CachingEmbedder] = {}
        self._lock = threading.Lock()
        self._on_drift = on_drift
        self.drift_refusals = 0
        self.route_ttl_seconds = route_ttl_seconds
        """How long a process may reuse a tenant's migration state for routing (0: read it on every call).
        AWS uses 1 s: a DynamoDB query per call would cost more than the request; `archive` and `rollback`
        wait this long before deleting an index, so no process still routes to it."""
        self._latest: dict[str, tuple[float, Migration | None]] = {}
        self.index = RoutedIndex(self)

    def embedder(self, spec: str) -> Embedder:
        """The model for a binding's spec ("" = the deployment's configured one), built once per process."""
        with self._lock:
            embedder = self._embedders.get(spec)
            if embedder is None:
                embedder = self._default if not spec else self._factory(spec)
                self._embedders[spec] = embedder
            return embedder

    def tenant_embedder(self, tenant: str, spec: str) -> Embedder:
        """The model for `spec` behind the tenant's embedding cache (when the runtime has one)."""
        inner = self.embedder(spec)
        if self._cache is None:
            return inner
        with self._lock:
            cached = self._cached.get((tenant, spec))
            if cached is None:
                cached = self._cached[(tenant, spec)] = CachingEmbedder(inner, self._cache, tenant)
            return cached

    def target(self, tenant: str, binding: IndexBinding) -> Target:
        embedder = self.tenant_embedder(tenant, binding.embedder)
        if embedder.identity.key != binding.fingerprint:
            raise EmbedderDrift(
                f"index {binding.index or '(original)'} holds vectors of {binding.fingerprint}, but its embedder "
                f"spec {binding.embedder or '(configured)'} now builds {embedder.identity.key}; restore the "
                "embedder configuration the migration was planned with",
                index_embedder=binding.fingerprint,
                given_embedder=embedder.identity.key,
            )
        return Target(binding.index, self.catalog.index(binding.index), embedder)

    def latest(self, tenant: str) -> Migration | None:
        if self.route_ttl_seconds <= 0:
            return self.store.latest(tenant)
        now = self.clock.now().timestamp()
        with self._lock:
            hit = self._latest.get(tenant)
        if hit is not None and now - hit[0] < self.route_ttl_seconds:
            return hit[1]
        migration = self.store.latest(tenant)
        with self._lock:
            self._latest[tenant] = (now, migration)
        return migration

    def forget(self, tenant: str) -> None:
        """Drop this process's cached state of the tenant (the migration service calls it on every save, so
        the process that switched or rolled back routes by the new state at once)."""
        with self._lock:
            self._latest.pop(tenant, None)

    def current_binding(self, tenant: str) -> IndexBinding:
        """The index and model serving the tenant's reads now."""
        migration = self.store.latest(tenant)
        if migration is None:
            return IndexBinding(fingerprint=self.embedder("").identity.key)
        return migration.target if migration.state in READS_TARGET else migration.source

    def routes(self, tenant: str) -> Routes:
        migration = self.latest(tenant)
        if migration is None:
            only = self.target(tenant, IndexBinding(fingerprint=self.embedder("").identity.key))
            return Routes(only, (only,), None)
        source = self.target(tenant, migration.source) if migration.state in WRITES_SOURCE else None
        target = self.target(tenant, migration.target) if migration.state in WRITES_TARGET else None
        if migration.state in READS_TARGET:
            assert target is not None
            return Routes(target, (target, *([source] if source else [])), migration)
        assert source is not None
        return Routes(source, (source, *([target] if target else [])), migration)

    def read_embedder(self, tenant: str) -> Embedder:
        return self.routes(tenant).read.embedder

    def refuse_drift(self, tenant: str, index_fingerprint: str, given: str) -> EmbedderDrift:
        with self._lock:
            self.drift_refusals += 1
        if self._on_drift is not None:
            self._on_drift(tenant, index_fingerprint, given)
        return EmbedderDrift(
            f"tenant {tenant!r} reads vectors of {index_fingerprint}; a vector of {given} cannot be compared with "
            "them (the read index was switched or rolled back during the request): retry",
            tenant=tenant,
            index_embedder=index_fingerprint,
            given_embedder=given,
        )

    def dead_letter(self, routes: Routes, tenant: str, record_ids: Sequence[str], error: Exception) -> None:
        migration = routes.migration
        if migration is None or not record_ids:
            return
        at = self.clock.now()
        letters = [
            DeadLetter(record_id=rid, error=repr(error)[:500], attempts=1, at=at) for rid in record_ids
        ]
        self.store.add_dead_letters(tenant, migration.id, letters)


class RoutedIndex:
    """The `SearchIndex` the memory service sees: reads from the tenant's read index, writes to every index
    the tenant's migration state writes (see the module's table)."""

    def __init__(self, routing: VectorRouting) -> None:
        self._routing = routing

    def _checked(
        self, tenant: str, routes: Routes, identity: EmbedderIdentity, vectors: Sequence[Vector]
    ) -> Target:
        for target in routes.writes:
            if target.fingerprint == identity.key:
                if any(len(vector) != identity.dimensions for vector in vectors):
                    raise self._routing.refuse_drift(
                        tenant, identity.key, f"{len(vectors[0])}-dimension vector"
                    )
                return target
        raise self._routing.refuse_drift(tenant, routes.read.fingerprint, identity.key)

    def ensure_tenant(self, tenant: str, identity: EmbedderIdentity) -> None:
        routes = self._routing.routes(tenant)
        if routes.read.fingerprint != identity.key:
            raise self._routing.refuse_drift(tenant, routes.read.fingerprint, identity.key)
        for target in routes.writes:
            target.index.ensure_tenant(tenant, target.embedder.identity)

    def upsert(self, tenant: str, identity: EmbedderIdentity, entries: Sequence[IndexEntry]) -> None:
        routes = self._routing.routes(tenant)
        given = self._checked(tenant, routes, identity, [entry.vector for entry in entries])
        given.index.upsert(tenant, identity, entries)
        for target in routes.writes:
            if target is given:
                continue
            try:
                vectors = target.embedder.embed_documents([e.embedded_text or e.text for e in entries])
                target.index.upsert(
                    tenant,
                    target.embedder.identity,
                    [_with_vector(entry, vector) for entry, vector in zip(entries, vectors, strict=True)],
                )
            except (
                Exception
            ) as error:  # the request succeeded on the index it reads; the backfill retries this
                logger.warning("dual write to index %r failed: %r", target.index_name, error)
                self._routing.dead_letter(routes, tenant, [entry.record_id for entry in entries], error)

    def _fan_out(self, tenant: str, record_ids: Sequence[str], call: Callable[[SearchIndex], None]) -> None:
        routes = self._routing.routes(tenant)
        call(routes.read.index)
        for target in routes.writes:
            if target is routes.read:
                continue
            try:
                call(target.index)
            except Exception as error:
                logger.warning("index %r update failed: %r", target.index_name, error)
                self._routing.dead_letter(routes, tenant, record_ids, error)

    def set_status(self, tenant: str, record_ids: Sequence[str], status: Status) -> None:
        self._fan_out(tenant, record_ids, lambda index: index.set_status(tenant, record_ids, status))

    def delete(self, tenant: str, record_ids: Sequence[str]) -> None:
        self._fan_out(tenant, record_ids, lambda index: index.delete(tenant, record_ids))

    def query_vector(
        self, tenant: str, identity: EmbedderIdentity, vector: Vector, *, k: int, where: IndexFilter
    ) -> list[Hit]:
        read = self._routing.routes(tenant).read
        if read.fingerprint != identity.key or len(vector) != identity.dimensions:
            raise self._routing.refuse_drift(tenant, read.fingerprint, identity.key)
        return read.index.query_vector(tenant, identity, vector, k=k, where=where)

    def query_keyword(self, tenant: str, text: str, *, k: int, where: IndexFilter) -> list[Hit]:
        return self._routing.routes(tenant).read.index.query_keyword(tenant, text, k=k, where=where)


def _with_vector(entry: IndexEntry, vector: Vector) -> IndexEntry:
    return IndexEntry(
        record_id=entry.record_id,
        namespace=entry.namespace,
        type=entry.type,
        status=entry.status,
        text=entry.text,
        vector=list(vector),
        embedded_text=entry.embedded_text,
    )
