"""The write discipline's outcomes as atomic commits: add, merge, supersede, store as history, link, hold for
review. Each writes the new record and every existing record it changes in one commit with their change-log
entries, guarded by the versions read (`ConcurrentModification` when another request moved one)."""

from __future__ import annotations

import json
import uuid
from datetime import datetime

from ..ports import RecordWrite, Vector
from ..records import ChangeOperation, MemoryRecord, Metadata, Status, metadata_size
from . import transitions
from .inputs import Decision, RememberInput, RememberResult
from .parts import MemoryParts
from .policy import MemoryPolicy

MERGED_WORDING_CHARS = 500
"""Longest newer wording quoted in a merge's change-log reason (the merged text itself is at most 4,000)."""


MERGED_SUFFIX = ".merged"
"""A metadata key `<key>.merged` lists the values merged writes gave `<key>` beside the kept one."""


def merged_metadata(kept: Metadata, incoming: Metadata, policy: MemoryPolicy) -> Metadata:
    """The metadata of a merge: the existing record's values stay (its provenance: `import_line`, `import_path`
    …); a key the new write adds is added; a key it gives another value keeps both, the other values listed in
    `<key>.merged` ("10, 42"). Within the policy's metadata limits: what would not fit stays in the change log
    (the merge entry's `before` and reason)."""
    out = dict(kept)
    for key, value in incoming.items():
        if key not in out:
            candidate = {**out, key: value}
        elif out[key] == value:
            continue
        else:
            listed = str(out.get(key + MERGED_SUFFIX, ""))
            values = [v for v in listed.split(", ") if v]
            if str(value) in values:
                continue
            candidate = {**out, key + MERGED_SUFFIX: ", ".join([*values, str(value)])}
        if (
            len(candidate) <= policy.max_metadata_keys
            and metadata_size(candidate) <= policy.max_metadata_bytes
        ):
            out = candidate
    return out


class WriteOps:
    def __init__(self, parts: MemoryParts) -> None:
        self.parts = parts

    def add(
        self, record: MemoryRecord, vector: Vector, actor: str, reason: str = "new memory"
    ) -> RememberResult:
        self.parts.create(record, vector, actor, reason="" if reason == "new memory" else reason)
        return RememberResult(Decision.ADDED, reason, record)

    def merge(
        self, existing: MemoryRecord, item: RememberInput, actor: str, now: datetime, *, reason: str
    ) -> RememberResult:
        """Fold a write that says the same thing into `existing`. The newer wording stays reachable: the change
        entry's reason quotes it whenever it differs from the stored content."""
        merged = existing.model_copy(deep=True)
        reactivated = merged.status is Status.ARCHIVED
        policy = self.parts.policy
        merged.score = min(policy.merge_score_cap, merged.score + policy.merge_score_step)
        if item.source not in merged.sources:
            merged.sources = [*merged.sources, item.source]
        merged.merged_count += 1
        merged.metadata = merged_metadata(merged.metadata, item.metadata, policy)
        merged.updated_at = now
        merged.last_access_at = now
        if reactivated:
            merged.status = Status.ACTIVE
            merged.status_reason = "reactivated by a matching write"
        merged.version = existing.version + 1
        operation = ChangeOperation.REACTIVATE if reactivated else ChangeOperation.MERGE
        wording = item.content.strip()
        note = reason
        if wording != existing.content:
            note = f"{reason}; merged wording: {wording[:MERGED_WORDING_CHARS]}"
        if item.metadata and merged.metadata != {**existing.metadata, **item.metadata}:
            note = (
                f"{note}; merged metadata: {json.dumps(item.metadata, sort_keys=True)[:MERGED_WORDING_CHARS]}"
            )
        self.parts.commit(
            [RecordWrite(merged, existing.version)],
            [self.parts.change(merged, operation, actor, before=existing.public_dict(), reason=note)],
        )
        if reactivated:
            self.parts.index.set_status(merged.tenant, [merged.id], Status.ACTIVE)
        decision = Decision.REACTIVATED if reactivated else Decision.MERGED
        return RememberResult(decision, reason, merged, related=[existing])

    def supersede(
        self,
        record: MemoryRecord,
        vector: Vector,
        olds: list[MemoryRecord],
        actor: str,
        now: datetime,
        reason: str,
    ) -> RememberResult:
        """The new record replaces every one of `olds`: their validity ends where the new one's starts."""
        changed = [
            (
                old,
                transitions.retired(
                    old, Status.SUPERSEDED, record.id, reason, now, valid_to=record.valid_from
                ),
            )
            for old in olds
        ]
        record.supersedes = olds[0].id
        self.parts.add_beside(record, vector, changed, ChangeOperation.SUPERSEDE, actor, reason)
        return RememberResult(Decision.SUPERSEDED, reason, record, related=[after for _, after in changed])

    def outdated(
        self,
        record: MemoryRecord,
        vector: Vector,
        newer: MemoryRecord,
        actor: str,
        now: datetime,
        reason: str,
    ) -> RememberResult:
        """An older value arriving late (an old note imported today): kept as history, already superseded by
        the newer one, valid until the newer one's `valid_from`. Nothing current changes."""
        record.status = Status.SUPERSEDED
        record.superseded_by = newer.id
        record.valid_to = max(newer.valid_from, record.valid_from)
        record.expired_at = now
        record.status_reason = reason
        self.parts.create(record, vector, actor, reason=reason)
        return RememberResult(Decision.OUTDATED, reason, record, related=[newer])

    def link(
        self, record: MemoryRecord, vector: Vector, old: MemoryRecord, actor: str, now: datetime, reason: str
    ) -> RememberResult:
        """Weak evidence of an update: both stay current; the new one records what it possibly supersedes and
        the old one what possibly supersedes it (recall ranks the newer first and marks the older)."""
        linked = old.model_copy(deep=True)
        linked.possibly_superseded_by = record.id
        linked.updated_at = now
        linked.version = old.version + 1
        record.possibly_supersedes = old.id
        self.parts.add_beside(record, vector, [(old, linked)], ChangeOperation.UPDATE, actor, reason)
        return RememberResult(Decision.LINKED, reason, record, related=[linked])

    def conflict(
        self, record: MemoryRecord, vector: Vector, old: MemoryRecord, actor: str, now: datetime, reason: str
    ) -> RememberResult:
        """Two values for the same moment: both held as pending in one conflict group for a person to resolve."""
        group = f"cfg_{uuid.uuid4().hex[:16]}"
        held = old.model_copy(deep=True)
        held.status = Status.PENDING
        held.conflict_group = group
        held.status_reason = f"in conflict with {record.id}: {reason}"
        held.updated_at = now
        held.version = old.version + 1
        record.status = Status.PENDING
        record.conflict_group = group
        record.status_reason = f"in conflict with {old.id}: {reason}"
        self.parts.add_beside(record, vector, [(old, held)], ChangeOperation.CONFLICT, actor, reason)
        return RememberResult(
            Decision.PENDING,
            f"irreconcilable, both held as pending in conflict group {group}: {reason}",
            record,
            related=[held],
        )

    def archive_beside(
        self,
        record: MemoryRecord,
        vector: Vector,
        target: MemoryRecord,
        actor: str,
        now: datetime,
        reason: str,
    ) -> RememberResult:
        """Add `record` and archive `target` (never delete it) in one commit: the write judge's DELETE."""
        archived = transitions.with_status(target, Status.ARCHIVED, reason, now)
        self.parts.add_beside(record, vector, [(target, archived)], ChangeOperation.ARCHIVE, actor, reason)
        return RememberResult(Decision.ADDED, reason, record, related=[archived])
