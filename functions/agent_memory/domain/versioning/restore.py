"""Restoring a namespace to a snapshot (`VersioningService.restore_snapshot`) through the memory service's own
transitions: archived memories the snapshot held current are restored, corrected or superseded ones get a
correction of their current successor back to the snapshot's words, memories current now but not then are
archived, and MEMORY.md and USER.md get the snapshot's text. Nothing is overwritten without a new version; the
service takes a snapshot of the state left behind first."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import Conflict
from ..interop import bundle as bundles
from ..memory.service import MemoryService
from ..ports import FileStore, RecordStore
from ..records import MemoryRecord, Status
from . import diff as diffs
from .importing import LIVE_STATUSES


@dataclass
class RestoreReport:
    snapshot: str
    namespace: str
    dry_run: bool
    safety_snapshot: str | None = None
    """The snapshot of the state the restore left (none on a dry run)."""
    actions: list[dict[str, Any]] = field(default_factory=list)
    """One per record or file touched: `unarchived`, `corrected`, `archived`, `unchanged`, `file_restored`,
    or `skipped` (with the reason)."""

    def counts(self) -> dict[str, int]:
        return dict(Counter(action["action"] for action in self.actions))


class SnapshotRestorer:
    """Moves a namespace's records and entry files back to a snapshot's, step by step, reporting each."""

    def __init__(
        self,
        memory: MemoryService,
        store: RecordStore,
        files: FileStore,
        file_refusal: Callable[[bundles.BundleFile], str | None],
    ) -> None:
        self._memory = memory
        self._store = store
        self._files = files
        self._file_refusal = file_refusal

    def restore(
        self,
        tenant: str,
        namespace: str,
        snapshot: bundles.Bundle,
        records: Iterable[MemoryRecord],
        report: RestoreReport,
        *,
        actor: str,
    ) -> None:
        """Restore `snapshot` over the namespace's current `records`, appending every action to `report`
        (nothing is written on a dry run)."""
        dry_run = report.dry_run
        reason = f"restore to snapshot {report.snapshot}"
        current = {record.id: record for record in records}
        kept: set[str] = set()
        for entry in snapshot.records:
            wanted = entry.load(tenant)
            if wanted.status not in LIVE_STATUSES:
                continue
            try:
                action = self._restore_record(tenant, wanted, current, kept, actor, reason, dry_run)
            except Conflict as error:  # moved on meanwhile (or two snapshot records share one successor)
                action = {"action": "skipped", "reason": error.message}
            report.actions.append({"id": wanted.id, **action})
        for record in current.values():
            if record.status is Status.ACTIVE and record.id not in kept:
                try:
                    if not dry_run:
                        self._memory.archive(tenant, record.id, actor=actor, reason=reason)
                    report.actions.append({"id": record.id, "action": "archived"})
                except Conflict as error:
                    report.actions.append({"id": record.id, "action": "skipped", "reason": error.message})
        self._restore_files(tenant, namespace, snapshot, report, dry_run)

    def _restore_record(
        self,
        tenant: str,
        wanted: MemoryRecord,
        current: dict[str, MemoryRecord],
        kept: set[str],
        actor: str,
        reason: str,
        dry_run: bool,
    ) -> dict[str, Any]:
        now = current.get(wanted.id)
        if now is None:
            # Records are never deleted, except by an erasure: what was erased is not brought back.
            return {"action": "skipped", "reason": "no longer stored (erased); not recreated"}
        head = now
        seen = {head.id}
        while head.superseded_by and head.superseded_by not in seen:  # follow corrections and supersessions
            following = current.get(head.superseded_by) or self._store.get(tenant, head.superseded_by)
            if following is None:
                break
            seen.add(following.id)
            head = following
        kept.add(head.id)
        if head.status is Status.PENDING or head.status is Status.QUARANTINED:
            return {"action": "skipped", "reason": f"{head.id} is {head.status.value}; resolve it first"}
        if head.status is Status.ACTIVE and head.content_hash == wanted.content_hash:
            return (
                {"action": "unchanged"}
                if head.id == wanted.id
                else {"action": "unchanged", "current": head.id}
            )
        if head.status is not Status.ACTIVE:
            if head.superseded_by:
                return {
                    "action": "skipped",
                    "reason": f"{head.id} is {head.status.value} and cannot be restored",
                }
            if not dry_run:
                head = self._memory.restore(tenant, head.id, actor=actor, reason=reason)
            if head.content_hash == wanted.content_hash:
                return {"action": "unarchived", "current": head.id}
        if dry_run:
            return {"action": "corrected", "current": head.id}
        _, corrected = self._memory.correct(tenant, head.id, wanted.content, actor=actor, reason=reason)
        kept.add(corrected.id)
        return {"action": "corrected", "current": corrected.id, "from": head.id}

    def _restore_files(
        self, tenant: str, namespace: str, snapshot: bundles.Bundle, report: RestoreReport, dry_run: bool
    ) -> None:
        wanted = {item.path: item for item in snapshot.files if item.namespace == namespace}
        for path in diffs.ENTRY_FILES:  # entry files absent from the snapshot were empty then
            wanted.setdefault(path, bundles.BundleFile(namespace=namespace, path=path, text=""))
        for path, item in sorted(wanted.items()):
            now = self._files.read(tenant, namespace, path)
            if (now or "") == item.text:
                continue
            if path not in diffs.ENTRY_FILES:
                # Daily logs are append-only and skills keep their own versions and change log: replacing
                # their text would rewrite history (restore a skill's version with the skills API instead).
                reason = "only MEMORY.md and USER.md are restored; this file keeps its own history"
                report.actions.append({"file": path, "action": "skipped", "reason": reason})
                continue
            refusal = self._file_refusal(item) if item.text else None
            if refusal is not None:
                report.actions.append({"file": path, "action": "skipped", "reason": refusal})
                continue
            if not dry_run:
                self._files.update(tenant, namespace, path, _replace_with(item.text))
            report.actions.append({"file": path, "action": "file_restored"})


def _replace_with(text: str) -> Callable[[str | None], str]:
    def change(_current: str | None) -> str:
        return text

    return change
