"""State transitions of a memory record: which states correct, archive, restore and conflict resolution may
leave, the next versions they write, and keeping the search index in line with the store's decision.

Every transition is committed with `RecordWrite(next, version, status)`: the store applies it only if the
record still has the version *and* status it was read with (SQLite: one guarded UPDATE in a `BEGIN IMMEDIATE`
transaction; DynamoDB: a ConditionExpression in one TransactWriteItems with the successor's creation). So of
concurrent transitions of one record exactly one commits; the others are refused with 409 that says what
happened (e.g. "memory X was already corrected by Y; correct Y instead")."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TypeVar

from .. import retry
from ..errors import ConcurrentModification, Conflict, ValidationFailed
from ..ports import RecordStore, SearchIndex
from ..records import MemoryRecord, Source, Status

_ATTEMPTS = 3
R = TypeVar("R")


def run(
    record: MemoryRecord,
    require: Callable[[MemoryRecord], None],
    apply: Callable[[MemoryRecord], R],
    reread: Callable[[MemoryRecord], MemoryRecord],
) -> R:
    """Run a state transition of one record: `require` raises `Conflict` unless the record is in a state the
    transition may leave; `apply` commits it guarded by the version and status it read. When another request
    changed the record first, the record is read again and checked again, so a loser learns why (e.g.
    "already corrected by Y") rather than only "changed"; if it may still proceed, it is retried."""
    current = [record]

    def once() -> R:
        require(current[0])
        try:
            return apply(current[0])
        except ConcurrentModification:
            current[0] = reread(current[0])
            raise

    return retry.on_conflict(once, attempts=_ATTEMPTS)


# --------------------------------------------------------------------------- which states a transition leaves


def _moved_on(record: MemoryRecord, verb: str) -> Conflict | None:
    """The refusal for a record that was corrected or superseded: its successor is the one to act on."""
    if not record.superseded_by:
        return None
    how = "corrected" if record.status is Status.ARCHIVED else record.status.value
    return Conflict(
        f"memory {record.id} was already {how} by {record.superseded_by}; {verb} {record.superseded_by} instead",
        memory_id=record.id,
        status=record.status.value,
        superseded_by=record.superseded_by,
    )


def _refusal(record: MemoryRecord, message: str) -> Conflict:
    return Conflict(message, memory_id=record.id, status=record.status.value)


def require_correctable(record: MemoryRecord) -> None:
    """Correct leaves a current record: active, or pending in a conflict group."""
    if record.status in (Status.ACTIVE, Status.PENDING):
        return
    if (moved := _moved_on(record, "correct")) is not None:
        raise moved
    if record.status is Status.QUARANTINED:
        raise _refusal(
            record, f"memory {record.id} is quarantined; release it with restore before correcting it"
        )
    raise _refusal(record, f"memory {record.id} is {record.status.value}; restore it before correcting it")


REJECTED_FROM_QUARANTINE = "rejected from quarantine"
"""Start of the `status_reason` of a quarantined memory a person archived (rejected). It was never indexed,
so it cannot be restored as an ordinary archived memory: it stays out (remember it again if it is safe)."""


def was_rejected(record: MemoryRecord) -> bool:
    return record.status is Status.ARCHIVED and record.status_reason.startswith(REJECTED_FROM_QUARANTINE)


def require_archivable(record: MemoryRecord) -> None:
    """Archive leaves an active record, or a quarantined one (a person rejects it: see `with_status`)."""
    if record.status in (Status.ACTIVE, Status.QUARANTINED):
        return
    if (moved := _moved_on(record, "archive")) is not None:
        raise moved
    if record.status is Status.ARCHIVED:
        raise _refusal(record, f"memory {record.id} is already archived")
    raise _refusal(
        record, f"memory {record.id} is {record.status.value}; only active memories can be archived"
    )


def require_restorable(record: MemoryRecord) -> None:
    """Restore leaves an archived record that was not corrected, or a quarantined one."""
    if (moved := _moved_on(record, "correct or archive")) is not None:
        raise moved  # an outdated version is never brought back beside its successor
    if was_rejected(record):
        raise _refusal(
            record,
            f"memory {record.id} was {REJECTED_FROM_QUARANTINE} and is never restored; remember its content "
            "again if it is safe",
        )
    if record.status in (Status.ARCHIVED, Status.QUARANTINED):
        return
    if record.status is Status.ACTIVE:
        raise _refusal(record, f"memory {record.id} is already active")
    raise _refusal(
        record,
        f"memory {record.id} is {record.status.value}; only archived or quarantined memories can be restored",
    )


# --------------------------------------------------------------------------- next versions


def retired(
    old: MemoryRecord, status: Status, successor: str, reason: str, now: datetime, *, valid_to: datetime
) -> MemoryRecord:
    """The next version of a record that a newer one replaces (supersede, correct, conflict resolution): it
    stops being true at `valid_to` and current at `now`, links to its successor, and is never deleted."""
    result = old.model_copy(deep=True)
    result.status = status
    result.status_reason = reason
    result.valid_to = valid_to
    result.expired_at = now
    result.superseded_by = successor
    result.conflict_group = None
    result.updated_at = now
    result.version = old.version + 1
    return result


def with_status(record: MemoryRecord, status: Status, reason: str, now: datetime) -> MemoryRecord:
    """The next version of a record archived, restored or released."""
    changed = record.model_copy(deep=True)
    changed.status = status
    changed.status_reason = reason
    if record.status is Status.QUARANTINED and status is Status.ARCHIVED:
        changed.status_reason = (
            f"{REJECTED_FROM_QUARANTINE}: {reason}" if reason else REJECTED_FROM_QUARANTINE
        )
    changed.updated_at = now
    if status is Status.ACTIVE:
        changed.last_access_at = now  # a restored memory starts a new decay period
    changed.version = record.version + 1
    return changed


def correction(
    old: MemoryRecord, fresh: MemoryRecord, *, actor: str, reason: str, now: datetime, min_score: float
) -> tuple[MemoryRecord, MemoryRecord]:
    """(old retired as archived, its corrected successor) from `fresh`, a new record of the corrected text:
    the successor keeps the old weight and metadata and links back by `corrected_from` and `supersedes`."""
    fresh.score = max(old.score, min_score)
    fresh.half_life_hours = old.half_life_hours
    fresh.metadata = dict(old.metadata)
    fresh.corrected_from = old.id
    fresh.supersedes = old.id
    fresh.source = Source(kind=old.source.kind, ref=f"correction of {old.id}", actor=actor)
    fresh.sources = [fresh.source]
    why = f"corrected by {fresh.id}" + (f": {reason}" if reason else "")
    return retired(old, Status.ARCHIVED, fresh.id, why, now, valid_to=now), fresh


def resolution(
    group: str, members: Sequence[MemoryRecord], keep: Sequence[str], reason: str, now: datetime
) -> list[MemoryRecord]:
    """The next version of every member of an open conflict group: the kept ones active again, the others
    superseded by the newest kept one. Raises `ValidationFailed` unless `keep` names members only."""
    member_ids = {record.id for record in members}
    unknown = [record_id for record_id in keep if record_id not in member_ids]
    if unknown or not keep:
        raise ValidationFailed(
            f"keep must name one or more members of {group}: {sorted(member_ids)}", unknown=unknown
        )
    kept = sorted((r for r in members if r.id in keep), key=lambda r: (r.created_at, r.id))
    winner = kept[-1]
    first_loser = next((r.id for r in members if r.id not in keep), None)
    resolved: list[MemoryRecord] = []
    for record in members:
        if record.id in keep:
            changed = record.model_copy(deep=True)
            changed.conflict_group = None
            changed.updated_at = now
            changed.version = record.version + 1
            changed.status = Status.ACTIVE
            changed.status_reason = f"kept when resolving {group}" + (f": {reason}" if reason else "")
            if record.id == winner.id and changed.supersedes is None and first_loser:
                changed.supersedes = first_loser  # so history can walk from the winner to the loser
        else:
            changed = retired(
                record,
                Status.SUPERSEDED,
                winner.id,
                f"superseded by {winner.id} when resolving {group}",
                now,
                valid_to=now,
            )
        resolved.append(changed)
    return resolved


# --------------------------------------------------------------------------- the index follows the store


def settle_index(
    store: RecordStore,
    index: SearchIndex,
    tenant: str,
    written: dict[str, Status],
    *,
    rounds: retry.Retry | None = None,
) -> None:
    """Make the index's status of records just committed (and written to the index) follow the store. Index
    writes happen after the commit, so two requests that commit A then B can reach the index as B then A;
    re-reading the store after our index write and re-applying what it holds closes that window (a commit
    after our read does its own index write after it).

    Each round (`retry.CONCURRENT_WRITE`: a few, a short full-jitter pause between them) reads the store and
    re-applies what changed. When the store still differs from what the last round wrote (other writers kept
    changing the records), it ends with one `ConcurrentModification` (409) that says the change itself is
    committed and how the index catches up; never silently."""
    expected = dict(written)
    run = (rounds or retry.Retry(retry.CONCURRENT_WRITE)).attempts()
    for _ in run:
        stale = _stale_statuses(store, tenant, expected)
        if not stale:
            return
        for status, ids in stale.items():
            index.set_status(tenant, ids, status)
    behind = sorted(i for ids in _stale_statuses(store, tenant, expected).values() for i in ids)
    if behind:
        attempts = run.exhausted.attempts if run.exhausted else 0
        raise ConcurrentModification(
            f"the change is committed, but other requests kept changing {', '.join(behind)} while the search "
            f"index was brought in line ({attempts} rounds): recall may show an older status until their own "
            "writes settle or the namespace is reindexed; read the memory again to see where it stands",
            record_ids=behind,
            rounds=attempts,
        )


def _stale_statuses(store: RecordStore, tenant: str, expected: dict[str, Status]) -> dict[Status, list[str]]:
    """The records whose stored status differs from `expected`, by their stored status (`expected` is updated to
    it; quarantined ones are left out: the index never holds them as such)."""
    stale: dict[Status, list[str]] = {}
    for record in store.get_many(tenant, list(expected)):
        if record.status is not expected[record.id] and record.status is not Status.QUARANTINED:
            stale.setdefault(record.status, []).append(record.id)
            expected[record.id] = record.status
    return stale
