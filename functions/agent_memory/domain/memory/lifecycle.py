"""State changes a caller asks for: update governance fields, correct (a new version, the old one archived
and linked), archive, restore, release from quarantine. Each is one atomic commit guarded by the version and
status it was read with."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import ConcurrentModification, Conflict, UnsafeContent, ValidationFailed
from ..ports import RecordWrite, Vector
from ..records import ChangeOperation, MemoryRecord, MemoryType, Metadata, Status, Tier, content_hash
from . import limits, transitions
from .inputs import RememberInput
from .parts import MemoryParts
from .writer import Writer

R = TypeVar("R")


class Lifecycle:
    def __init__(self, parts: MemoryParts, writer: Writer) -> None:
        self.parts = parts
        self.writer = writer

    def get(self, tenant: str, record_id: str) -> MemoryRecord:
        return self.parts.get(tenant, record_id)

    def update(
        self,
        tenant: str,
        record_id: str,
        *,
        actor: str,
        expected_version: int | None = None,
        score: float | None = None,
        half_life_hours: float | None = None,
        metadata: Metadata | None = None,
        type: MemoryType | None = None,
        tier: Tier | None = None,
    ) -> MemoryRecord:
        """Change a record's governance fields. Content changes go through `correct` so the old wording
        keeps its history."""
        if metadata is not None:
            limits.check_metadata(metadata, self.parts.policy)
            self.parts.require_clean("update", metadata=metadata)
        record = self.get(tenant, record_id)
        if expected_version is not None and record.version != expected_version:
            raise ConcurrentModification(
                f"memory {record_id} is at version {record.version}, not {expected_version}; "
                "read it again and retry",
                current_version=record.version,
            )
        if record.status in (Status.SUPERSEDED, Status.QUARANTINED):
            raise Conflict(f"memory {record_id} is {record.status.value}; it cannot be updated")
        updated = record.model_copy(deep=True)
        changes: dict[str, Any] = {
            "score": score,
            "half_life_hours": half_life_hours,
            "metadata": metadata,
            "type": type,
            "tier": tier,
        }
        given = {name: value for name, value in changes.items() if value is not None}
        if not given:
            raise ValidationFailed(
                f"nothing to change: send at least one of {', '.join(changes)} (content changes go through "
                "POST /v1/memories/{id}/correct)",
                fields=list(changes),
            )
        if all(getattr(record, name) == value for name, value in given.items()):
            return record  # a no-op: no new version, no change-log entry
        for name, value in given.items():
            setattr(updated, name, value)
        updated.updated_at = self.parts.now()
        updated.version = record.version + 1
        self.parts.commit(
            [RecordWrite(updated, record.version)],
            [self.parts.change(updated, ChangeOperation.UPDATE, actor, before=record.public_dict())],
        )
        if type is not None and type != record.type:
            vector = self.parts.embed(tenant, [updated.content])[0]
            self.parts.index_record(tenant, updated, vector)
        return updated

    def correct(
        self, tenant: str, record_id: str, content: str, *, actor: str, reason: str = ""
    ) -> tuple[MemoryRecord, MemoryRecord]:
        """Replace a record's content: the old record is archived (kept, linked), a corrected record is
        created with provenance to it. Returns (old, new).

        Only a current memory (active, or pending in a conflict group) can be corrected, and only once: the
        successor's creation and the predecessor's retirement are one atomic commit guarded by the
        predecessor's version and status, so of concurrent corrections (or a correction racing an archive)
        exactly one succeeds and every other one gets 409 naming the memory to use instead."""
        old = self.get(tenant, record_id)
        transitions.require_correctable(old)
        item = RememberInput(content=content, namespace=old.namespace, type=old.type, tier=old.tier)
        self.parts.validate(item)
        found = self.parts.first_finding(item)
        if found is not None:
            raise UnsafeContent(
                f"correction refused by the safety scan: field 'content' (rule '{found.finding.rule}'): "
                f"{found.finding.detail}",
                rule=found.finding.rule,
                field="content",
            )
        self.parts.require_clean("correction", reason=reason)
        if content_hash(content) == old.content_hash:
            raise Conflict("the correction is identical to the current content")
        vector = self.parts.embed(tenant, [item.content])[0]
        self.parts.ensure_tenant(tenant)

        def apply(current: MemoryRecord) -> tuple[MemoryRecord, MemoryRecord]:
            return self._correct_once(current, item, vector, actor, reason)

        return self._transition(old, transitions.require_correctable, apply)

    def _correct_once(
        self, old: MemoryRecord, item: RememberInput, vector: Vector, actor: str, reason: str
    ) -> tuple[MemoryRecord, MemoryRecord]:
        now = self.parts.now()
        fresh = self.writer.new_record(old.tenant, item, now)
        retired, corrected = transitions.correction(
            old, fresh, actor=actor, reason=reason, now=now, min_score=self.parts.policy.preference_score
        )
        self.parts.commit(
            [RecordWrite(corrected, None), RecordWrite(retired, old.version, old.status)],
            [
                self.parts.change(corrected, ChangeOperation.CREATE, actor, reason=reason or "correction"),
                self.parts.change(
                    retired, ChangeOperation.CORRECT, actor, before=old.public_dict(), reason=reason
                ),
            ],
        )
        # Only the request whose commit won reaches the index: a loser leaves no entry for its successor.
        self.parts.index_record(old.tenant, corrected, vector)
        self.parts.index.set_status(old.tenant, [old.id], Status.ARCHIVED)
        self.parts.settle(old.tenant, {corrected.id: Status.ACTIVE, old.id: Status.ARCHIVED})
        return retired, corrected

    def archive(self, tenant: str, record_id: str, *, actor: str, reason: str = "") -> MemoryRecord:
        """Active → archived, atomically (409 when the record is no longer active, e.g. already archived
        or corrected by another request)."""
        self.parts.require_clean("archive", reason=reason)

        def apply(record: MemoryRecord) -> MemoryRecord:
            return self.set_status(record, Status.ARCHIVED, ChangeOperation.ARCHIVE, actor, reason)

        return self._transition(self.get(tenant, record_id), transitions.require_archivable, apply)

    def restore(self, tenant: str, record_id: str, *, actor: str, reason: str = "") -> MemoryRecord:
        """Archived (not corrected) or quarantined → active, atomically (409 in any other state, e.g. when
        the record is already active)."""
        self.parts.require_clean("restore", reason=reason)

        def apply(record: MemoryRecord) -> MemoryRecord:
            if record.status is Status.QUARANTINED:
                return self._release(record, actor, reason)
            return self.set_status(record, Status.ACTIVE, ChangeOperation.RESTORE, actor, reason)

        return self._transition(self.get(tenant, record_id), transitions.require_restorable, apply)

    def _transition(
        self,
        record: MemoryRecord,
        require: Callable[[MemoryRecord], None],
        apply: Callable[[MemoryRecord], R],
    ) -> R:
        return transitions.run(record, require, apply, lambda stale: self.get(stale.tenant, stale.id))

    def _release(self, record: MemoryRecord, actor: str, reason: str) -> MemoryRecord:
        """A person vouches for a quarantined memory: it becomes active and searchable (it was never
        indexed while quarantined)."""
        vector = self.parts.embed(record.tenant, [record.content])[0]
        self.parts.ensure_tenant(record.tenant)
        released = self.set_status(
            record, Status.ACTIVE, ChangeOperation.RESTORE, actor, reason or "released from quarantine"
        )
        self.parts.index_record(record.tenant, released, vector)
        self.parts.settle(record.tenant, {released.id: Status.ACTIVE})
        return released

    def set_status(
        self, record: MemoryRecord, status: Status, operation: ChangeOperation, actor: str, reason: str
    ) -> MemoryRecord:
        """Commit the record's next version with `status`, guarded by the version and status it was read
        with (`ConcurrentModification` if either moved), then bring the index in line."""
        changed = transitions.with_status(record, status, reason, self.parts.now())
        self.parts.commit(
            [RecordWrite(changed, record.version, record.status)],
            [self.parts.change(changed, operation, actor, before=record.public_dict(), reason=reason)],
        )
        if record.status is not Status.QUARANTINED:  # a quarantined record has no index entry yet
            self.parts.index.set_status(record.tenant, [record.id], status)
            self.parts.settle(record.tenant, {record.id: status})
        return changed
