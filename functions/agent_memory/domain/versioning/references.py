"""References: how often each memory reached a recall (the recall log of the last `recall_window_days`) or a
session (by content hash, counted from the session's frozen snapshot), and the review of heavily reused ones."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..errors import ValidationFailed
from ..memory.service import MemoryService
from ..ports import Clock, RecordStore
from ..records import MemoryRecord, content_hash, is_valid_namespace
from .importing import LIVE_STATUSES
from .ports import ReferenceStore


@dataclass(frozen=True)
class Reuse:
    memory: MemoryRecord
    recalls: int
    sessions: int
    reviewed_at: datetime | None


class References:
    """Counts and reviews the reuse of a tenant's memories."""

    def __init__(
        self,
        memory: MemoryService,
        store: RecordStore,
        references: ReferenceStore,
        clock: Clock,
        *,
        recall_window_days: int = 90,
    ) -> None:
        self._memory = memory
        self._store = store
        self._references = references
        self._clock = clock
        self.recall_window_days = recall_window_days

    def record_session(self, tenant: str, namespace: str, snapshot: str) -> None:
        """Count one session for every entry of its frozen snapshot (by content hash)."""
        hashes = sorted({content_hash(entry) for entry in snapshot_entries(snapshot)})
        if hashes:
            self._references.add_session_uses(tenant, namespace, hashes)

    def reused(self, tenant: str, namespace: str, *, limit: int = 20, min_uses: int = 1) -> list[Reuse]:
        """Current memories of the namespace by how often they were used (recalls in the last
        `recall_window_days` + sessions whose snapshot held them), most used first, at least `min_uses`."""
        check_namespace(namespace)
        since = self._clock.now() - timedelta(days=self.recall_window_days)
        recalls: Counter[str] = Counter()
        for entry in self._store.list_recalls(tenant, namespace, since):
            recalls.update(set(entry.result_ids))
        sessions = self._references.session_uses(tenant, namespace)
        candidates: dict[str, MemoryRecord] = {}
        for record in self._store.get_many(tenant, list(recalls)):
            candidates[record.id] = record
        for digest in sessions:
            for record in self._store.find_by_hash(tenant, namespace, digest):
                candidates[record.id] = record
        scored = []
        for record in candidates.values():
            if record.namespace != namespace or record.status not in LIVE_STATUSES:
                continue
            uses = (recalls.get(record.id, 0), sessions.get(record.content_hash, 0))
            if sum(uses) >= min_uses:
                scored.append((record, *uses))
        scored.sort(key=lambda item: (-(item[1] + item[2]), -item[1], item[0].id))
        top = scored[:limit]
        reviewed = self._references.reviewed(tenant, [record.id for record, _, _ in top])
        return [Reuse(record, r, s, reviewed.get(record.id)) for record, r, s in top]

    def mark_reviewed(self, tenant: str, record_id: str) -> Reuse:
        record = self._memory.get(tenant, record_id)
        now = self._clock.now()
        self._references.mark_reviewed(tenant, record_id, now)
        since = now - timedelta(days=self.recall_window_days)
        recalls = sum(
            1
            for entry in self._store.list_recalls(tenant, record.namespace, since)
            if record.id in entry.result_ids
        )
        sessions = self._references.session_uses(tenant, record.namespace).get(record.content_hash, 0)
        return Reuse(record, recalls, sessions, now)


def snapshot_entries(snapshot: str) -> list[str]:
    """The MEMORY.md and USER.md entries of a session's frozen snapshot text (sessions.render_snapshot)."""
    entries: list[str] = []
    current: list[str] | None = None
    for line in snapshot.split("\n"):
        if line.startswith("## "):
            _flush(entries, current)
            current = [] if line.startswith(("## MEMORY.md", "## USER.md")) else None
        elif current is not None:
            if line == "§":
                _flush(entries, current)
                current = []
            elif not line.startswith("</"):
                current.append(line)
    _flush(entries, current)
    return entries


def _flush(entries: list[str], lines: list[str] | None) -> None:
    if lines is None:
        return
    text = "\n".join(lines).strip()
    if text and text != "(empty)" and not text.startswith("[blocked by safety rule"):
        entries.append(text)
    lines.clear()


def check_namespace(namespace: str) -> None:
    if not is_valid_namespace(namespace):
        raise ValidationFailed(f"invalid namespace {namespace!r}: use a path like /projects/billing")
