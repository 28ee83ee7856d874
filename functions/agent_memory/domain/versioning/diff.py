"""Diff between two states of a namespace (pure): records added / changed / archived / restored, each with the
change-log entries that explain it, and the memory files added / changed / removed (entries of MEMORY.md and
USER.md named).

A state is `{record id: record dict}` (the public JSON of `MemoryRecord`). It comes from a snapshot (its
bundle), from the store (now), or from the change log at a point in time (`state_at`: each record's `after`
in its last change entry at or before that moment)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..files.memory_files import parse_entries
from ..records import ChangeEntry, Status

LIVE = (Status.ACTIVE.value, Status.PENDING.value)
"""States in which a memory is current (recalled, or awaiting a conflict's resolution)."""
ENTRY_FILES = ("MEMORY.md", "USER.md")

RecordState = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class RecordDiff:
    id: str
    kind: str
    """`added` (new and current), `changed` (current in both, another version), `archived` (current before,
    not after; or new and already retired), `restored` (retired before, current after)."""
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    changes: list[dict[str, Any]] = field(default_factory=list)
    """The change-log entries of this record between the two states, oldest first."""


@dataclass(frozen=True)
class FileDiff:
    namespace: str
    path: str
    kind: str
    """`added`, `changed` or `removed`."""
    entries_added: list[str] = field(default_factory=list)
    entries_removed: list[str] = field(default_factory=list)
    before_chars: int = 0
    after_chars: int = 0


@dataclass(frozen=True)
class Diff:
    records: list[RecordDiff]
    files: list[FileDiff] | None
    """None when the two states do not both carry files (a point in time: files keep no history)."""

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {"added": 0, "changed": 0, "archived": 0, "restored": 0}
        for item in self.records:
            counts[item.kind] = counts.get(item.kind, 0) + 1
        return counts


def _live(record: Mapping[str, Any] | None) -> bool:
    return record is not None and record.get("status") in LIVE


def _at(change: Mapping[str, Any]) -> datetime:
    value = change.get("at")
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def state_at(changes: Iterable[ChangeEntry], moment: datetime) -> RecordState:
    """Each record as its last change entry at or before `moment` left it (records created later: absent)."""
    latest: dict[str, ChangeEntry] = {}
    for change in changes:
        if change.at <= moment and change.after is not None:
            known = latest.get(change.record_id)
            if known is None or (change.at, change.id) >= (known.at, known.id):
                latest[change.record_id] = change
    return {record_id: dict(change.after or {}) for record_id, change in latest.items()}


def diff_records(
    before: RecordState,
    after: RecordState,
    changes: Mapping[str, list[dict[str, Any]]],
    since: datetime | None,
    until: datetime | None,
) -> list[RecordDiff]:
    """What differs between two record states; `changes` (record id → change dicts) explain each, filtered to
    since < at ≤ until (either bound open when None)."""
    found: list[RecordDiff] = []
    for record_id in sorted(set(before) | set(after)):
        old, new = before.get(record_id), after.get(record_id)
        if old == new or (old is not None and new is not None and _same_version(old, new)):
            continue
        if old is None:
            kind = "added" if _live(new) else "archived"
        elif new is None:
            continue  # records are never deleted: only a state outside the namespace lacks one
        elif _live(old) and not _live(new):
            kind = "archived"
        elif not _live(old) and _live(new):
            kind = "restored"
        else:
            kind = "changed"
        explaining = [
            change
            for change in changes.get(record_id, [])
            if (since is None or _at(change) > since) and (until is None or _at(change) <= until)
        ]
        explaining.sort(key=lambda change: (_at(change), str(change.get("id", ""))))
        found.append(RecordDiff(id=record_id, kind=kind, before=old, after=new, changes=explaining))
    return found


def _same_version(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """The same stored version (access bookkeeping — last access, access count — is not a change)."""
    ignored = {"last_access_at", "access_count"}
    return {k: v for k, v in old.items() if k not in ignored} == {
        k: v for k, v in new.items() if k not in ignored
    }


def diff_files(before: Mapping[tuple[str, str], str], after: Mapping[tuple[str, str], str]) -> list[FileDiff]:
    """Files keyed by (namespace, path): added, removed, or changed (with the entries added and removed for
    MEMORY.md and USER.md)."""
    found: list[FileDiff] = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        namespace, path = key
        kind = "added" if old is None else "removed" if new is None else "changed"
        added: list[str] = []
        removed: list[str] = []
        if path in ENTRY_FILES:
            old_entries, new_entries = parse_entries(old or ""), parse_entries(new or "")
            added = [entry for entry in new_entries if entry not in old_entries]
            removed = [entry for entry in old_entries if entry not in new_entries]
        found.append(
            FileDiff(
                namespace=namespace,
                path=path,
                kind=kind,
                entries_added=added,
                entries_removed=removed,
                before_chars=len(old or ""),
                after_chars=len(new or ""),
            )
        )
    return found
