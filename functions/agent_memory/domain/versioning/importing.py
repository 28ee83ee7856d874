"""Bundle import (`VersioningService.import_bundle`): records under their own ids with their change logs, and
the memory files, never over what is stored. An id or a file that exists with other content is a conflict,
reported and left as it is; content the safety scan refuses is rejected. The file checks are shared with a
restore, which writes files of a snapshot the same way (`file_refusal`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import Conflict, DomainError
from ..files.memory_files import validate_file_path
from ..interop import bundle as bundles
from ..memory.policy import FileCaps
from ..memory.service import MemoryService
from ..ports import FileStore, RecordStore, RecordWrite
from ..records import MemoryRecord, Status, content_hash
from ..safety import fields as safety_fields
from . import diff as diffs

Scanner = Callable[[str], str | None]
"""Text → the first blocking safety rule it trips, or None (`domain.safety.first_rule`)."""

CHANGES_PER_COMMIT = 40
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


class BundleImporter:
    """Writes a bundle into a tenant's record store and file store, and judges what may be written."""

    def __init__(
        self, memory: MemoryService, store: RecordStore, files: FileStore, *, caps: FileCaps, scan: Scanner
    ) -> None:
        self._memory = memory
        self._store = store
        self._files = files
        self._caps = caps
        self._scan = scan

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
                self._store.commit([RecordWrite(record, None)], changes[:CHANGES_PER_COMMIT])
                for start in range(CHANGES_PER_COMMIT, len(changes), CHANGES_PER_COMMIT):
                    self._store.commit([], changes[start : start + CHANGES_PER_COMMIT])
                touched.add(record.namespace)
            report.created.append(record.id)
        for item in bundle.files:
            self._import_file(tenant, item, report, dry_run)
        for namespace in sorted(touched):
            self._memory.reindex(tenant, namespace)
        return report

    def file_refusal(self, item: bundles.BundleFile) -> str | None:
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
        refusal = self.file_refusal(item)
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
