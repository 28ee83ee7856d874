"""The search index as the purge sees it: vector and keyword entries of the purged records. Deleted through
the `SearchIndex` port the memory service writes (during an embedding migration that is the routed index,
which deletes from both the read index and the second index `mem-<tenant>.e<n>`). Found by asking the index
itself: keyword (BM25) and vector queries for every purged text, over every status, and (where the runtime
gives an `IndexProbe`) a look-up of every purged id in every index; any hit on a purged id is a remaining
copy."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from ..ports import Embedder, IndexFilter, SearchIndex
from ..records import Status
from .model import EraseScope, StoreFinding

QUERY_K = 50
DELETE_BATCH = 500


class IndexProbe(Protocol):
    """Which of these records still have an entry, asked by id in every index of the tenant (the read index
    and, during an embedding migration, the second one): the exact check the ranked queries cannot give."""

    def present(self, tenant: str, record_ids: Sequence[str]) -> set[str]: ...


class IndexEntries:
    name = "index"

    def __init__(
        self, index: SearchIndex, embedder_of: Callable[[str], Embedder], probe: IndexProbe | None = None
    ) -> None:
        self._index = index
        self._embedder_of = embedder_of
        self._probe = probe

    def _hits(self, scope: EraseScope) -> set[str]:
        if not scope.namespaces:
            return set()
        where = IndexFilter(namespaces=scope.namespaces, statuses=tuple(Status))
        purged = set(scope.record_ids)
        found: set[str] = set()
        embedder = self._embedder_of(scope.tenant)
        for text in scope.needles:
            hits = self._index.query_keyword(scope.tenant, text, k=QUERY_K, where=where)
            hits += self._index.query_vector(
                scope.tenant, embedder.identity, embedder.embed_query(text), k=QUERY_K, where=where
            )
            found.update(hit.record_id for hit in hits if hit.record_id in purged)
        return found

    def find(self, scope: EraseScope) -> StoreFinding:
        found = self._hits(scope)
        if self._probe is not None:
            found |= self._probe.present(scope.tenant, scope.record_ids)
        remaining = sorted(found)
        return StoreFinding(store=self.name, items=len(remaining), refs=remaining)

    def planned(self, scope: EraseScope) -> StoreFinding:
        """What the plan shows: one entry per purged record (a record's vector and keyword entry)."""
        return StoreFinding(store=self.name, items=len(scope.record_ids), refs=list(scope.record_ids))

    def erase(self, scope: EraseScope, *, actor: str, reason: str, plan_id: str) -> int:
        ids = list(scope.record_ids)
        for start in range(0, len(ids), DELETE_BATCH):
            self._index.delete(scope.tenant, ids[start : start + DELETE_BATCH])
        return len(ids)
