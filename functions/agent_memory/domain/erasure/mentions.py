"""Records the purge keeps that mention a purged text: their context (an import stores a neighbouring entry
there), metadata, source refs or status reason. The record is not about the purge (its content does not name
it), so it stays; the mentioning strings become `[purged]` (a new version, through the record store's
optimistic write) and its keyword-index entry is written again without them. A record whose content names a
purged text is not rewritten here: its content is what it is about (purge it by id or subject); the
verification reports it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..ports import Embedder, IndexEntry, RecordQuery, RecordStore, RecordWrite, SearchIndex
from ..records import MemoryRecord
from .model import EraseScope, StoreFinding, redact_texts

PAGE = 200
_KEPT = (
    "id",
    "tenant",
    "namespace",
    "content",
    "content_hash",
    "supersedes",
    "superseded_by",
    "corrected_from",
)


class RecordMentions:
    name = "mentions"

    def __init__(
        self, records: RecordStore, index: SearchIndex, embedder_of: Callable[[str], Embedder]
    ) -> None:
        self._records = records
        self._index = index
        self._embedder_of = embedder_of

    def _mentioning(self, scope: EraseScope) -> list[tuple[MemoryRecord, dict[str, Any]]]:
        """(record, its redacted fields) of every kept record of the scope's namespaces that mentions it."""
        if scope.whole_tenant:
            return []
        purged = set(scope.record_ids)
        found = []
        for namespace in scope.namespaces:
            if scope.in_scope_namespace(namespace):
                continue  # erased whole
            for record in self._all(scope.tenant, namespace):
                if record.id in purged or scope.names(record.content):
                    continue
                data = record.model_dump(mode="json")
                free = {k: v for k, v in data.items() if k not in _KEPT}
                redacted, count = redact_texts(free, scope)
                if count:
                    found.append((record, redacted))
        return found

    def _all(self, tenant: str, namespace: str) -> list[MemoryRecord]:
        return all_records(self._records, tenant, namespace)

    def find(self, scope: EraseScope) -> StoreFinding:
        found = self._mentioning(scope)
        return StoreFinding(store=self.name, items=len(found), refs=[r.id for r, _ in found])

    def erase(self, scope: EraseScope, *, actor: str, reason: str, plan_id: str) -> int:
        found = self._mentioning(scope)
        for record, redacted in found:
            updated = MemoryRecord.model_validate(
                record.model_dump(mode="json") | redacted | {"version": record.version + 1}
            )
            self._records.commit([RecordWrite(updated, expected_version=record.version)], [])
            self._reindex(scope.tenant, updated)
        return len(found)

    def _reindex(self, tenant: str, record: MemoryRecord) -> None:
        embedder = self._embedder_of(tenant)
        text = f"{record.content}\n{record.context}" if record.context else record.content
        entry = IndexEntry(
            record_id=record.id,
            namespace=record.namespace,
            type=record.type,
            status=record.status,
            text=text,
            vector=list(embedder.embed_documents([record.content])[0]),
            embedded_text=record.content,
        )
        self._index.upsert(tenant, embedder.identity, [entry])


def all_records(records: RecordStore, tenant: str, namespace: str) -> list[MemoryRecord]:
    """Every record of one namespace, every status, page by page."""
    out: list[MemoryRecord] = []
    cursor: str | None = None
    while True:
        page = records.list(tenant, RecordQuery(namespaces=(namespace,), limit=PAGE, cursor=cursor))
        out.extend(page.items)
        cursor = page.next_cursor
        if not cursor:
            return out
