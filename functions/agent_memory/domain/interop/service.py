"""The import pipeline (DESIGN "migration path"): inventory → translate → merge → validate, plus rollback.

- **Inventory** (`formats.inventory`): every file, entry, note, turn, memory and skill the layout finds. A dry
  run stops here and writes nothing (not even the report).
- **Translate**: items go through the memory service's public write path in batches (`remember_batch`), so the
  write discipline decides: classification, the safety scan (credentials refused, injections refused or
  quarantined), exact and near-duplicate merge, supersession, conflict groups. Chat turns and log lines that
  the classifier finds transient (a temporary note, or small talk with no durable cue) are skipped, not stored
  as long-term memory. Lines of a dated log (OpenClaw's `memory/YYYY-MM-DD.md`) are episodes valid from their
  date, however old: age alone never drops an item. Only an item past its own expiry date (Mem0's
  `expiration_date`) is skipped as expired. An item that cannot be read (a Mem0 memory without text, a JSONL
  line that is not JSON) is rejected on its own; the rest of its file imports. Every item not written is
  listed in the report with its source ref, place and reason. Curated entries (MEMORY.md, USER.md,
  CLAUDE.md) also become memory-file entries through `MemoryFilesService.add` (its cap and duplicate rules
  apply); SKILL.md files become skills with provenance `imported`.
- **Merge** is the service's own: items are written oldest first (by their source time), so a newer statement
  supersedes an older one (archived and linked), and an uncertain contradiction opens a conflict group.
  Provenance: the record's `source` (`kind=import`, `ref=<format>:<path>:<line or message id>`) and metadata
  (`import_id`, `import_path`, `import_line` or `import_message_id`, `import_session`).
- **Validate**: the report counts each decision (they add up to the items found), lists rejections with their
  reasons, lists the skipped items with theirs, recalls a sample of the imported preferences by a paraphrased
  query (hit rate), and recalls an expired source item to confirm it stayed out.

Idempotent: each item's ref (path + content hash, or message id) is stored with what it became; a re-run
skips refs already imported into the namespace. Rollback archives every record the import created (change
log: `archive`, reason naming the import), removes the memory-file entries it added, archives the skills it
created, releases its refs, and writes again (as new versions) the records that existed before the import and
that it superseded. Records the import only merged into existed before it and stay as they are.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime

from ..errors import Conflict, NotFound
from ..files.memory_files import MemoryFilesService
from ..memory import limits
from ..memory.service import Decision, MemoryService, RememberInput
from ..ports import Clock
from ..records import MemoryRecord, Status
from ..skills.service import SkillsService
from .checks import paraphrase, run_checks
from .formats import detect, inventory
from .model import ImportReport, ImportState, Inventory, ItemKind, ItemOutcome, RollbackSummary, SourceItem
from .ports import ImportStore, SourceTree
from .report import inventory_view, render_markdown
from .translate import Translation

__all__ = ["BATCH", "ImportService", "paraphrase", "render_markdown"]

BATCH = 50

Progress = Callable[[int, int], None]


class ImportService:
    def __init__(
        self,
        memory: MemoryService,
        files: MemoryFilesService,
        skills: SkillsService | None,
        store: ImportStore,
        clock: Clock,
        new_id: Callable[[], str] | None = None,
    ) -> None:
        self.memory = memory
        self.files = files
        self.skills = skills
        self.store = store
        self._clock = clock
        self._new_id = new_id or (lambda: "imp_" + uuid.uuid4().hex[:20])

    def now(self) -> datetime:
        return self._clock.now()

    # ------------------------------------------------------------------ inventory

    def inventory(self, tree: SourceTree, fmt: str = "auto") -> Inventory:
        return inventory(tree, detect(tree) if fmt == "auto" else fmt)

    # ------------------------------------------------------------------ run

    def run(
        self,
        tenant: str,
        tree: SourceTree,
        namespace: str,
        *,
        fmt: str = "auto",
        actor: str,
        dry_run: bool = False,
        progress: Progress | None = None,
        allowed: Callable[[str], bool] | None = None,
    ) -> ImportReport:
        """Import `tree` into `namespace` (Mem0 items into sub-namespaces of it). `allowed` is the caller's
        namespace check: an item bound for a namespace outside it is rejected, never written."""
        limits.check_namespace(namespace)
        found = self.inventory(tree, fmt)
        now = self._clock.now()
        report = ImportReport(
            id=self._new_id(),
            tenant=tenant,
            namespace=namespace,
            format=found.format,
            source=tree.label,
            dry_run=dry_run,
            state=ImportState.DRY_RUN if dry_run else ImportState.RUNNING,
            actor=actor,
            started_at=now,
            inventory=inventory_view(found),
        )
        items = sorted(found.items, key=_chronological)
        seen = self._seen(tenant, namespace, [item.ref for item in items])
        if dry_run:
            report.decisions.skipped_seen = len(seen & {item.ref for item in items})
            report.finished_at = now
            return report
        self.store.save(report)
        run = Translation(self, tenant, namespace, report, actor, allowed or (lambda _namespace: True))
        try:
            for start in range(0, len(items), BATCH):
                run.batch(items[start : start + BATCH], seen)
                if progress is not None:
                    progress(min(start + BATCH, len(items)), len(items))
            run_checks(run)
        except Exception as error:
            report.state = ImportState.FAILED
            report.error = f"{type(error).__name__}: {error}"[:500]
            report.finished_at = self._clock.now()
            self.store.save(report)
            raise
        report.state = ImportState.COMPLETED
        report.finished_at = self._clock.now()
        elapsed = (report.finished_at - report.started_at).total_seconds()
        report.items_per_second = round(len(items) / elapsed, 1) if elapsed > 0 and items else None
        self.store.save(report)
        return report

    def active_records(self, tenant: str, record_ids: Sequence[str]) -> list[MemoryRecord]:
        """The active records among `record_ids`."""
        found = []
        for record_id in record_ids:
            try:
                record = self.memory.get(tenant, record_id)
            except NotFound:
                continue
            if record.status is Status.ACTIVE:
                found.append(record)
        return found

    def _seen(self, tenant: str, namespace: str, refs: Sequence[str]) -> set[str]:
        seen: set[str] = set()
        for start in range(0, len(refs), 100):
            seen |= self.store.seen(tenant, namespace, refs[start : start + 100])
        return seen

    # ------------------------------------------------------------------ report and rollback

    def report(self, tenant: str, import_id: str) -> ImportReport:
        report = self.store.get(tenant, import_id)
        if report is None:
            raise NotFound(f"no import with id {import_id!r}")
        return report

    def rollback(self, tenant: str, import_id: str, *, actor: str, force: bool = False) -> ImportReport:
        """Undo an import as a unit: archive what it created, remove the file entries and skills it added,
        release its refs, and write again the pre-existing records it superseded. Refused (409) when the import is
        already rolled back, or still running unless `force` (an import whose process died stays `running`)."""
        report = self.report(tenant, import_id)
        if report.state is ImportState.ROLLED_BACK:
            raise Conflict(f"import {import_id} is already rolled back", import_id=import_id)
        if report.state is ImportState.RUNNING and not force:
            raise Conflict(
                f"import {import_id} is still running; roll it back once it ended (or force it if its process "
                "died)",
                import_id=import_id,
            )
        reason = f"rollback of import {import_id}"
        archived = files_removed = skills_archived = left = 0
        outcomes = self.store.outcomes(tenant, import_id)
        for outcome in outcomes:
            if outcome.record_id and outcome.created:
                archived += self._retire(tenant, outcome.record_id, actor, reason)
            elif outcome.record_id:
                left += 1
            if outcome.file_entry and outcome.file_kind:
                try:
                    self.files.remove(
                        tenant, outcome.namespace, outcome.file_kind, outcome.file_entry, exact=True
                    )
                    files_removed += 1
                except NotFound:
                    pass  # edited or removed meanwhile: nothing of the import's left to remove
            if outcome.skill and self.skills is not None:
                try:
                    self.skills.archive(tenant, outcome.namespace, outcome.skill, actor=actor, note=reason)
                    skills_archived += 1
                except (NotFound, Conflict):
                    pass
        created = {o.record_id for o in outcomes if o.created and o.record_id}
        reinstated = 0
        for outcome in outcomes:
            if outcome.superseded and outcome.superseded not in created:
                reinstated += self._reinstate(tenant, outcome, import_id, actor)
        self.store.release(tenant, report.namespace, [o.ref for o in outcomes])
        report.state = ImportState.ROLLED_BACK
        report.rollback = RollbackSummary(
            at=self._clock.now(),
            actor=actor,
            archived=archived,
            files_removed=files_removed,
            skills_archived=skills_archived,
            left_in_place=left,
            reinstated=reinstated,
        )
        self.store.save(report)
        return report

    def _reinstate(self, tenant: str, outcome: ItemOutcome, import_id: str, actor: str) -> int:
        """A record that existed before the import and that the import superseded is written again (a new
        version through the write discipline: superseded versions are never brought back in place)."""
        assert outcome.superseded is not None
        try:
            old = self.memory.get(tenant, outcome.superseded)
        except NotFound:
            return 0
        if old.status is not Status.SUPERSEDED or old.superseded_by != outcome.record_id:
            return 0  # moved on since the import: leave it
        metadata = {**old.metadata, "reinstated_from": old.id, "rollback_of": import_id}
        if len(metadata) > self.memory.policy.max_metadata_keys:
            metadata = {"reinstated_from": old.id, "rollback_of": import_id}
        result = self.memory.remember(
            tenant,
            RememberInput(
                content=old.content,
                namespace=old.namespace,
                type=old.type,
                metadata=metadata,
                source=old.source,
            ),
            actor=actor,
        )
        return 1 if result.decision in (Decision.ADDED, Decision.MERGED, Decision.REACTIVATED) else 0

    def _retire(self, tenant: str, record_id: str, actor: str, reason: str) -> int:
        try:
            record = self.memory.get(tenant, record_id)
        except NotFound:
            return 0
        if record.status is Status.ACTIVE:
            self.memory.archive(tenant, record_id, actor=actor, reason=reason)
            return 1
        if record.status is Status.PENDING and record.conflict_group:
            group = self.memory.conflicts(tenant, record.namespace)
            members = next((g.records for g in group if g.group == record.conflict_group), [])
            keep = [m.id for m in members if m.id != record_id]
            if keep:
                self.memory.resolve_conflict(
                    tenant, record.conflict_group, keep=keep, actor=actor, reason=reason
                )
                return 1
        return 0  # superseded, archived or quarantined already: out of recall


def _chronological(item: SourceItem) -> tuple[int, datetime]:
    """Oldest first (undated before dated); a skill's files after every skill, so their skill exists."""
    if item.kind is ItemKind.SKILL_FILE:
        return (2, datetime.min)
    return (0, datetime.min) if item.timestamp is None else (1, item.timestamp.replace(tzinfo=None))
