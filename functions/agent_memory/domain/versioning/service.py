"""`VersioningService`: export and bundle import, named snapshots, diff, restore, and references (how often
each memory reached a recall or a session, and the review of heavily reused ones).

Nothing here overwrites memory. Import creates records under their own ids (an id that exists with other
content is a conflict, reported); restore moves the namespace back through the memory service's own
transitions (restore, correct, archive: new versions, history kept) after taking a snapshot of the state it
leaves; memory files are written only when absent or different, and the pre-restore snapshot holds the text
they had."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..errors import Conflict, DomainError, NotFound, TooLarge, ValidationFailed
from ..files.memory_files import validate_file_path
from ..interop import bundle as bundles
from ..memory.policy import FileCaps
from ..memory.service import MemoryService
from ..ports import Clock, FileStore, RecordQuery, RecordStore, RecordWrite
from ..records import ChangeEntry, MemoryRecord, Status, content_hash, is_valid_namespace
from ..safety import fields as safety_fields
from . import diff as diffs
from .ports import SNAPSHOT_NAME_PATTERN, ReferenceStore, SnapshotMeta, SnapshotStore

Scanner = Callable[[str], str | None]
"""Text → the first blocking safety rule it trips, or None (`domain.safety.first_rule`)."""

_PAGE = 100
_CHANGES_PER_COMMIT = 40
"""Change entries imported per commit (a DynamoDB transaction holds 100 items; a record write takes 2-3)."""
LIVE_STATUSES = (Status.ACTIVE, Status.PENDING)


def exported_path(path: str) -> bool:
    """Memory files an export carries: the entry files, daily logs and skills (not the service's own
    `.dreams/`, `.curator/` state)."""
    return path in diffs.ENTRY_FILES or path.startswith(("memory/", "skills/"))


@dataclass
class ImportReport:
    namespaces: list[str]
    dry_run: bool
    created: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    conflicts: list[dict[str, str]] = field(default_factory=list)
    rejected: list[dict[str, str]] = field(default_factory=list)
    files_written: list[str] = field(default_factory=list)
    files_unchanged: list[str] = field(default_factory=list)
    file_conflicts: list[dict[str, str]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {
            "created": len(self.created),
            "unchanged": len(self.unchanged),
            "conflicts": len(self.conflicts),
            "rejected": len(self.rejected),
            "files_written": len(self.files_written),
            "files_unchanged": len(self.files_unchanged),
            "file_conflicts": len(self.file_conflicts),
        }


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


@dataclass(frozen=True)
class Reuse:
    memory: MemoryRecord
    recalls: int
    sessions: int
    reviewed_at: datetime | None


class VersioningService:
    def __init__(
        self,
        memory: MemoryService,
        store: RecordStore,
        files: FileStore,
        snapshots: SnapshotStore,
        references: ReferenceStore,
        clock: Clock,
        *,
        caps: FileCaps,
        scan: Scanner,
        file_namespaces: Callable[[str], list[str]] | None = None,
        recall_window_days: int = 90,
    ) -> None:
        self._memory = memory
        self._store = store
        self._files = files
        self._snapshots = snapshots
        self._references = references
        self._clock = clock
        self._caps = caps
        self._scan = scan
        self._file_namespaces = file_namespaces
        self.recall_window_days = recall_window_days

    # ------------------------------------------------------------------ export

    def namespaces(self, tenant: str) -> list[str]:
        """Every namespace of the tenant that holds records or memory files."""
        found: set[str] = set()
        cursor: str | None = None
        while True:
            page = self._store.list(tenant, RecordQuery(limit=_PAGE, cursor=cursor))
            found.update(record.namespace for record in page.items)
            if not page.next_cursor:
                break
            cursor = page.next_cursor
        if self._file_namespaces is not None:
            found.update(ns for ns in self._file_namespaces(tenant) if is_valid_namespace(ns))
        return sorted(found)

    def export(
        self, tenant: str, namespaces: Sequence[str] | None = None, *, max_bytes: int | None = None
    ) -> bundles.Bundle:
        """The bundle of these namespaces (all of the tenant's when None): every record in any status with its
        change log and links, and the memory files. `max_bytes`: refuse (`TooLarge`) once the records and
        files read so far pass it, before reading the rest."""
        chosen = sorted(set(namespaces)) if namespaces else self.namespaces(tenant)
        for namespace in chosen:
            if not is_valid_namespace(namespace):
                raise ValidationFailed(f"invalid namespace {namespace!r}: use a path like /projects/billing")
        size = 0

        def count(amount: int) -> None:
            nonlocal size
            size += amount
            if max_bytes is not None and size > max_bytes:
                raise TooLarge(
                    f"the export is over {max_bytes:,} bytes, the most one API response carries: run "
                    "`agent-memory export --namespace N --out bundle.tar.gz` where the data lives, or export "
                    "one namespace at a time",
                    limit=max_bytes,
                )

        records: list[bundles.BundleRecord] = []
        files: list[bundles.BundleFile] = []
        for namespace in chosen:
            found = self._records(tenant, namespace)
            changes = self._changes(tenant, namespace)
            corrected_by = {r.corrected_from: r.id for r in found if r.corrected_from}
            for record in found:
                entry = bundles.record_entry(record, changes.get(record.id, []), corrected_by.get(record.id))
                count(len(json.dumps(entry.record)) + sum(len(json.dumps(c)) for c in entry.changes))
                records.append(entry)
            for path, text in self._file_texts(tenant, namespace).items():
                count(len(text.encode("utf-8")))
                files.append(bundles.BundleFile(namespace=namespace, path=path, text=text))
        return bundles.new_bundle(chosen, records, files, self._clock.now(), {"namespaces": chosen})

    def _records(self, tenant: str, namespace: str) -> list[MemoryRecord]:
        found: list[MemoryRecord] = []
        cursor: str | None = None
        while True:
            page = self._store.list(tenant, RecordQuery(namespaces=(namespace,), limit=_PAGE, cursor=cursor))
            found.extend(page.items)
            if not page.next_cursor:
                return found
            cursor = page.next_cursor

    def _changes(self, tenant: str, namespace: str) -> dict[str, list[ChangeEntry]]:
        by_record: dict[str, list[ChangeEntry]] = defaultdict(list)
        cursor: str | None = None
        while True:
            page = self._store.list_changes(tenant, namespace=namespace, limit=_PAGE, cursor=cursor)
            for change in page.items:
                by_record[change.record_id].append(change)
            if not page.next_cursor:
                break
            cursor = page.next_cursor
        for entries in by_record.values():
            entries.sort(key=lambda change: (change.at, change.id))
        return by_record

    def _file_texts(self, tenant: str, namespace: str) -> dict[str, str]:
        texts: dict[str, str] = {}
        for path in self._files.list(tenant, namespace, ""):
            if exported_path(path):
                text = self._files.read(tenant, namespace, path)
                if text is not None:
                    texts[path] = text
        return texts

    # ------------------------------------------------------------------ import

    def import_bundle(
        self, tenant: str, bundle: bundles.Bundle, *, actor: str, dry_run: bool = False
    ) -> ImportReport:
        """Restore a bundle into the tenant: records under their ids with their change logs, and the memory
        files. An id (or file) that exists with other content is a conflict, reported and left as it is; one
        that exists with the same content is unchanged. Current records whose content the safety scan refuses
        are rejected (reported, not stored). The imported namespaces are reindexed."""
        report = ImportReport(namespaces=list(bundle.namespaces), dry_run=dry_run)
        touched: set[str] = set()
        for entry in bundle.records:
            try:
                record = entry.load(tenant)
                changes = entry.load_changes(tenant)
            except ValueError as error:
                report.rejected.append({"id": entry.id, "reason": f"invalid record: {error}"[:300]})
                continue
            existing = self._store.get(tenant, record.id)
            if existing is not None:
                if (existing.namespace, existing.content_hash, existing.status) == (
                    record.namespace,
                    record.content_hash,
                    record.status,
                ):
                    report.unchanged.append(record.id)
                else:
                    report.conflicts.append(
                        {
                            "id": record.id,
                            "reason": f"exists with other content or state ({existing.status.value})",
                        }
                    )
                continue
            if record.content_hash != content_hash(record.content):
                report.rejected.append({"id": record.id, "reason": "content_hash does not match the content"})
                continue
            refusal = self._record_refusal(record) if record.status in LIVE_STATUSES else None
            if refusal is not None:
                report.rejected.append({"id": record.id, "reason": refusal})
                continue
            if not dry_run:
                self._store.commit([RecordWrite(record, None)], changes[:_CHANGES_PER_COMMIT])
                for start in range(_CHANGES_PER_COMMIT, len(changes), _CHANGES_PER_COMMIT):
                    self._store.commit([], changes[start : start + _CHANGES_PER_COMMIT])
                touched.add(record.namespace)
            report.created.append(record.id)
        for item in bundle.files:
            self._import_file(tenant, item, report, dry_run)
        for namespace in sorted(touched):
            self._memory.reindex(tenant, namespace)
        return report

    def _file_refusal(self, item: bundles.BundleFile) -> str | None:
        try:
            validate_file_path(item.path)
        except DomainError as error:
            return error.message
        if not exported_path(item.path):
            return "not a memory file (MEMORY.md, USER.md, memory/…, skills/…)"
        limit = {
            "MEMORY.md": self._caps.memory_md,
            "USER.md": self._caps.user_md,
        }.get(item.path, self._caps.daily_log if item.path.startswith("memory/") else self._caps.skill_md)
        if len(item.text) > limit:
            return f"{len(item.text)} characters, over the cap of {limit}"
        rule = self._scan(item.text)
        return f"refused by safety rule {rule!r}" if rule else None

    def _import_file(
        self, tenant: str, item: bundles.BundleFile, report: ImportReport, dry_run: bool
    ) -> None:
        name = f"{item.namespace}:{item.path}"
        refusal = self._file_refusal(item)
        if refusal is not None:
            report.file_conflicts.append({"file": name, "reason": refusal})
            return
        current = self._files.read(tenant, item.namespace, item.path)
        if current == item.text:
            report.files_unchanged.append(name)
            return
        if current is not None:
            report.file_conflicts.append({"file": name, "reason": "exists with other text"})
            return
        if not dry_run:

            def create(now: str | None) -> str:
                if now is not None and now != item.text:
                    raise Conflict(f"{name} was written meanwhile")
                return item.text

            try:
                self._files.update(tenant, item.namespace, item.path, create)
            except Conflict as error:
                report.file_conflicts.append({"file": name, "reason": error.message})
                return
        report.files_written.append(name)

    # ------------------------------------------------------------------ snapshots

    def _record_refusal(self, record: MemoryRecord) -> str | None:
        """Why a live record of a bundle may not be imported: its content, or any other text it carries
        (context, metadata, source, status reason), trips the safety scan. A record the write path would only
        quarantine is refused too: an import must not make it active."""
        rule = self._scan(record.content)
        if rule is not None:
            return f"refused by safety rule {rule!r}"
        verdict = safety_fields.decide(
            safety_fields.memory_write_fields(
                content="",
                context=record.context,
                metadata=record.metadata,
                source_ref=record.source.ref,
                reason=record.status_reason,
            )
        )
        first = verdict.first
        return f"refused by safety rule {first.finding.rule!r} in {first.field}" if first else None

    def create_snapshot(
        self, tenant: str, namespace: str, name: str, *, actor: str, note: str = ""
    ) -> SnapshotMeta:
        _check_name(name)
        # The note is listed with the snapshot and carried in its bundle: held to the rule of every write.
        safety_fields.require_clean({"note": note}, "snapshot note")
        bundle = self.export(tenant, [namespace])
        payload = bundles.pack_tar(bundle)
        meta = SnapshotMeta(
            name=name,
            namespace=namespace,
            created_at=self._clock.now(),
            actor=actor[:128],
            note=note[:500],
            counts=bundle.counts(),
            sha256=hashlib.sha256(payload).hexdigest(),
            bytes=len(payload),
        )
        self._snapshots.put(tenant, meta, payload)
        return meta

    def list_snapshots(self, tenant: str, namespace: str) -> list[SnapshotMeta]:
        _check_namespace(namespace)
        return self._snapshots.list(tenant, namespace)

    def has_snapshot(self, tenant: str, namespace: str, name: str) -> bool:
        _check_namespace(namespace)
        _check_name(name)
        return self._snapshots.get(tenant, namespace, name) is not None

    def get_snapshot(self, tenant: str, namespace: str, name: str) -> tuple[SnapshotMeta, bundles.Bundle]:
        _check_namespace(namespace)
        _check_name(name)
        found = self._snapshots.get(tenant, namespace, name)
        if found is None:
            raise NotFound(f"no snapshot {name!r} of namespace {namespace}", snapshot=name)
        meta, payload = found
        if hashlib.sha256(payload).hexdigest() != meta.sha256:
            raise ValidationFailed(f"snapshot {name!r} is damaged: its payload does not match its hash")
        return meta, bundles.unpack_tar(payload)

    # ------------------------------------------------------------------ diff

    def diff_snapshots(self, tenant: str, namespace: str, source: str, target: str | None) -> diffs.Diff:
        """From snapshot `source` to snapshot `target`, or to the current state when `target` is None."""
        before_meta, before = self.get_snapshot(tenant, namespace, source)
        if target is None:
            after = self.export(tenant, [namespace])
            until = None
        else:
            after_meta, after = self.get_snapshot(tenant, namespace, target)
            until = after_meta.created_at
        changes = {r.id: r.changes for r in after.records}
        records = diffs.diff_records(
            _state(before), _state(after), changes, since=before_meta.created_at, until=until
        )
        return diffs.Diff(records=records, files=diffs.diff_files(_file_map(before), _file_map(after)))

    def diff_times(self, tenant: str, namespace: str, since: datetime, until: datetime | None) -> diffs.Diff:
        """Between two points in time, from the change log (files keep no history: `files` is None)."""
        _check_namespace(namespace)
        until = until or self._clock.now()
        if until < since:
            raise ValidationFailed("'to' is before 'from'", since=since.isoformat(), until=until.isoformat())
        all_changes = [change for entries in self._changes(tenant, namespace).values() for change in entries]
        by_record: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for change in all_changes:
            by_record[change.record_id].append(bundles.tenant_free(change.model_dump(mode="json")))
        before = {k: bundles.tenant_free(v) for k, v in diffs.state_at(all_changes, since).items()}
        after = {k: bundles.tenant_free(v) for k, v in diffs.state_at(all_changes, until).items()}
        return diffs.Diff(records=diffs.diff_records(before, after, by_record, since, until), files=None)

    # ------------------------------------------------------------------ restore

    def restore_snapshot(
        self, tenant: str, namespace: str, name: str, *, actor: str, dry_run: bool = False
    ) -> RestoreReport:
        """Bring the namespace back to the snapshot: archived memories it held current are restored, corrected
        or superseded ones get a correction of their current successor back to the snapshot's words, memories
        current now but not then are archived, memory files get the snapshot's text. Every step is one of
        the memory service's transitions (new versions, history kept); a snapshot of the state left behind is
        taken first (`safety_snapshot`)."""
        _, snapshot = self.get_snapshot(tenant, namespace, name)
        report = RestoreReport(snapshot=name, namespace=namespace, dry_run=dry_run)
        if not dry_run:
            stamp = self._clock.now().strftime("%Y%m%dT%H%M%S%f")
            report.safety_snapshot = self.create_snapshot(
                tenant, namespace, f"pre-restore-{stamp}", actor=actor, note=f"taken before restoring {name}"
            ).name
        reason = f"restore to snapshot {name}"
        current = {record.id: record for record in self._records(tenant, namespace)}
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
        return report

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

    # ------------------------------------------------------------------ references

    def record_session(self, tenant: str, namespace: str, snapshot: str) -> None:
        """Count one session for every entry of its frozen snapshot (by content hash)."""
        hashes = sorted({content_hash(entry) for entry in snapshot_entries(snapshot)})
        if hashes:
            self._references.add_session_uses(tenant, namespace, hashes)

    def reused(self, tenant: str, namespace: str, *, limit: int = 20, min_uses: int = 1) -> list[Reuse]:
        """Current memories of the namespace by how often they were used (recalls in the last
        `recall_window_days` + sessions whose snapshot held them), most used first, at least `min_uses`."""
        _check_namespace(namespace)
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


def _replace_with(text: str) -> Callable[[str | None], str]:
    def change(_current: str | None) -> str:
        return text

    return change


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


def _state(bundle: bundles.Bundle) -> diffs.RecordState:
    return {entry.id: entry.record for entry in bundle.records}


def _file_map(bundle: bundles.Bundle) -> dict[tuple[str, str], str]:
    return {(item.namespace, item.path): item.text for item in bundle.files}


def _check_namespace(namespace: str) -> None:
    if not is_valid_namespace(namespace):
        raise ValidationFailed(f"invalid namespace {namespace!r}: use a path like /projects/billing")


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not re.fullmatch(SNAPSHOT_NAME_PATTERN, name):
        raise ValidationFailed(
            f"invalid snapshot name {name!r}: 1-64 letters, digits, '.', '_', '-' (starting with a letter or digit)"
        )
