"""Repair of stored records that no longer load (`agent-memory repair`).

Stores skip a record that fails to validate as a `MemoryRecord` on every read (and log it), so one bad row,
e.g. a null in a numeric or metadata field written by an older version, never takes its namespace down. This
module puts such records right, and never deletes one:

- **fixed**: the stored JSON is kept and only what breaks the model is changed: a metadata value that is not
  a finite scalar is removed; a field with a default (score, half_life_hours, access_count, …) that is null,
  non-finite or out of range goes back to its default; an unknown field is dropped; a missing date-time is
  taken from the record's creation time. Naive date-times load as UTC and need no repair.
- **quarantined**: a record that cannot be salvaged (its JSON is not an object, its content is missing) is
  rewritten as a `quarantined` placeholder: never recalled, listed for a person to look at.

Either way the version goes up by one (a concurrent writer loses cleanly) and a `repair` change-log entry
holds the record exactly as it was stored (`before`) and what each change was (`reason`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import ValidationError

from ..errors import ConcurrentModification
from ..ports import RecordStore, RecordWrite, UnreadableRecord
from ..records import (
    ChangeEntry,
    ChangeOperation,
    MemoryRecord,
    MemoryType,
    Status,
    content_hash,
    describe_invalid,
)

PLACEHOLDER = "(unreadable memory: the stored record is kept in the change log entry of its repair)"
_TIMES = ("created_at", "updated_at", "last_access_at", "valid_from", "recorded_at")
_MAX_ROUNDS = 20


@dataclass(frozen=True)
class RepairOutcome:
    record_id: str
    namespace: str
    action: Literal["fixed", "quarantined", "changed_meanwhile"]
    problem: str
    """Why the stored record failed to load."""
    changes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RepairReport:
    dry_run: bool
    outcomes: list[RepairOutcome]

    def as_dict(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for outcome in self.outcomes:
            counts[outcome.action] = counts.get(outcome.action, 0) + 1
        return {
            "dry_run": self.dry_run,
            "found": len(self.outcomes),
            "counts": counts,
            "records": [outcome.__dict__ for outcome in self.outcomes],
        }


def repair_records(
    store: RecordStore,
    tenant: str,
    *,
    namespace: str | None,
    now: datetime,
    actor: str,
    dry_run: bool = False,
) -> RepairReport:
    """Find the tenant's (or namespace's) unreadable records and fix or quarantine each, one commit per
    record. A dry run reports the same outcomes without writing."""
    outcomes = []
    for bad in store.unreadable(tenant, namespace):
        record, changes = salvage(bad, now)
        action: Literal["fixed", "quarantined", "changed_meanwhile"] = "fixed"
        if record is None:
            record, action = quarantine_placeholder(bad, now), "quarantined"
        if not dry_run:
            entry = ChangeEntry(
                tenant=tenant,
                namespace=record.namespace,
                record_id=record.id,
                operation=ChangeOperation.REPAIR,
                actor=actor,
                at=now,
                reason=f"repair ({action}): " + "; ".join(changes or [bad.error]),
                before=_stored(bad),
                after=record.public_dict(),
            )
            try:
                store.commit([RecordWrite(record, bad.version)], [entry])
            except ConcurrentModification:
                action = "changed_meanwhile"  # rewritten since it was read: the next run looks again
        outcomes.append(RepairOutcome(bad.record_id, bad.namespace, action, bad.error, changes))
    return RepairReport(dry_run=dry_run, outcomes=outcomes)


def salvage(bad: UnreadableRecord, now: datetime) -> tuple[MemoryRecord | None, list[str]]:
    """The record with the least change that makes it valid, and what was changed; (None, why) when only a
    quarantine placeholder can stand in for it."""
    try:
        data = json.loads(bad.body)  # Python's json reads NaN / Infinity, so they can be named and removed
    except ValueError:
        return None, ["the stored body is not JSON"]
    if not isinstance(data, dict):
        return None, ["the stored body is not a JSON object"]
    data = {**data, "id": bad.record_id, "tenant": bad.tenant, "namespace": bad.namespace}
    data["version"] = bad.version + 1
    changes = _clean_metadata(data)
    fields = MemoryRecord.model_fields
    for _ in range(_MAX_ROUNDS):
        try:
            return MemoryRecord.model_validate(data), changes
        except ValidationError as error:
            progressed = False
            for problem in error.errors(include_input=False, include_url=False):
                name = str(problem["loc"][0]) if problem["loc"] else ""
                why = problem["msg"]
                if name in data and name not in fields:
                    del data[name]
                    changes.append(f"{name}: unknown field removed")
                elif name == "status":  # unknown state: held back from recall until a person looks
                    data["status"] = Status.QUARANTINED.value
                    changes.append(f"status: {why}; set to quarantined")
                elif name in data and not fields[name].is_required():
                    del data[name]
                    default = fields[name].get_default(call_default_factory=True)
                    changes.append(f"{name}: {why}; reset to the default {default!r}")
                elif name in _TIMES:
                    data[name] = _created(bad, now).isoformat()
                    changes.append(f"{name}: {why}; set to the creation time")
                elif name == "type" and data.get("type") != bad.type:
                    data["type"] = bad.type
                    changes.append(f"type: {why}; taken from the index column ({bad.type})")
                else:
                    continue
                progressed = True
            if not progressed:
                return None, [*changes, f"cannot be salvaged: {describe_invalid(error)}"]
    return None, [*changes, "cannot be salvaged"]


def quarantine_placeholder(bad: UnreadableRecord, now: datetime) -> MemoryRecord:
    try:
        data = json.loads(bad.body)
    except ValueError:
        data = None
    content = data.get("content") if isinstance(data, dict) else None
    if not isinstance(content, str) or not content.strip():
        content = PLACEHOLDER
    created = _created(bad, now)
    return MemoryRecord(
        id=bad.record_id,
        tenant=bad.tenant,
        namespace=bad.namespace,
        type=MemoryType(bad.type) if bad.type in {t.value for t in MemoryType} else MemoryType.EPISODE,
        content=content,
        content_hash=content_hash(content),
        created_at=created,
        updated_at=now,
        last_access_at=created,
        valid_from=created,
        recorded_at=created,
        status=Status.QUARANTINED,
        status_reason=f"repair: the stored record could not be read ({bad.error[:200]})",
        version=bad.version + 1,
    )


def _clean_metadata(data: dict[str, Any]) -> list[str]:
    """Remove metadata values that are not finite scalars (keys are kept when they are fine)."""
    if "metadata" not in data:
        return []
    metadata = data["metadata"]
    if not isinstance(metadata, dict):
        data["metadata"] = {}
        return [f"metadata: {type(metadata).__name__} instead of an object; reset to {{}}"]
    kept, changes = {}, []
    for key, value in metadata.items():
        if isinstance(value, float) and not math.isfinite(value):
            changes.append(f"metadata.{key}: non-finite number; removed")
        elif isinstance(value, str | int | float | bool):
            kept[key] = value
        else:
            what = "null" if value is None else type(value).__name__
            changes.append(f"metadata.{key}: {what} is not a scalar value; removed")
    data["metadata"] = kept
    return changes


def _created(bad: UnreadableRecord, now: datetime) -> datetime:
    try:
        return datetime.strptime(bad.created_at, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return now


def _stored(bad: UnreadableRecord) -> dict[str, Any]:
    """The record exactly as stored, for the change log: its JSON object, or its text when it is not one."""
    try:
        data = json.loads(bad.body)
    except ValueError:
        data = None
    return data if isinstance(data, dict) else {"stored_body": bad.body}
