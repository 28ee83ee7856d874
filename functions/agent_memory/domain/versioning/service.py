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
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from ..errors import NotFound, TooLarge, ValidationFailed
from ..interop import bundle as bundles
from ..memory.policy import FileCaps
from ..memory.service import MemoryService
from ..ports import Clock, FileStore, RecordQuery, RecordStore
from ..records import ChangeEntry, MemoryRecord, is_valid_namespace
from ..safety import fields as safety_fields
from . import diff as diffs
from .importing import LIVE_STATUSES, BundleImporter, ImportReport, Scanner, exported_path
from .ports import SNAPSHOT_NAME_PATTERN, ReferenceStore, SnapshotMeta, SnapshotStore
from .references import References, Reuse, check_namespace, snapshot_entries
from .restore import RestoreReport, SnapshotRestorer

__all__ = [
    # re-exported: import, restore and references were split out of this module (issue 31)
    "LIVE_STATUSES",
    "ImportReport",
    "RestoreReport",
    "Reuse",
    "VersioningService",
    "exported_path",
    "snapshot_entries",
]


_PAGE = 100


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
        self._clock = clock
        self._file_namespaces = file_namespaces
        self._importer = BundleImporter(memory, store, files, caps=caps, scan=scan)
        self._restorer = SnapshotRestorer(memory, store, files, self._importer.file_refusal)
        self.references = References(memory, store, references, clock, recall_window_days=recall_window_days)

    @property
    def recall_window_days(self) -> int:
        """How far back recalls count as uses (`references.py`)."""
        return self.references.recall_window_days

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
        are rejected (reported, not stored). The imported namespaces are reindexed (`importing.py`)."""
        return self._importer.import_bundle(tenant, bundle, actor=actor, dry_run=dry_run)

    # ------------------------------------------------------------------ snapshots

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
        check_namespace(namespace)
        return self._snapshots.list(tenant, namespace)

    def has_snapshot(self, tenant: str, namespace: str, name: str) -> bool:
        check_namespace(namespace)
        _check_name(name)
        return self._snapshots.get(tenant, namespace, name) is not None

    def get_snapshot(self, tenant: str, namespace: str, name: str) -> tuple[SnapshotMeta, bundles.Bundle]:
        check_namespace(namespace)
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
        check_namespace(namespace)
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
        self._restorer.restore(
            tenant, namespace, snapshot, self._records(tenant, namespace), report, actor=actor
        )
        return report

    # ------------------------------------------------------------------ references

    def record_session(self, tenant: str, namespace: str, snapshot: str) -> None:
        """Count one session for every entry of its frozen snapshot (by content hash)."""
        self.references.record_session(tenant, namespace, snapshot)

    def reused(self, tenant: str, namespace: str, *, limit: int = 20, min_uses: int = 1) -> list[Reuse]:
        """Current memories of the namespace by how often they were used (`references.py`)."""
        return self.references.reused(tenant, namespace, limit=limit, min_uses=min_uses)

    def mark_reviewed(self, tenant: str, record_id: str) -> Reuse:
        return self.references.mark_reviewed(tenant, record_id)


def _state(bundle: bundles.Bundle) -> diffs.RecordState:
    return {entry.id: entry.record for entry in bundle.records}


def _file_map(bundle: bundles.Bundle) -> dict[tuple[str, str], str]:
    return {(item.namespace, item.path): item.text for item in bundle.files}


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not re.fullmatch(SNAPSHOT_NAME_PATTERN, name):
        raise ValidationFailed(
            f"invalid snapshot name {name!r}: 1-64 letters, digits, '.', '_', '-' (starting with a letter or digit)"
        )
