"""Conflict groups: memories held as pending for a person to resolve, listed and resolved atomically."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .. import retry
from ..errors import ConcurrentModification, Conflict, NotFound
from ..ports import RecordQuery, RecordWrite
from ..records import ChangeOperation, MemoryRecord, Status
from . import limits, transitions
from .inputs import ConflictGroup
from .parts import MemoryParts

MAX_RETRIES = 3


class Conflicts:
    def __init__(self, parts: MemoryParts) -> None:
        self.parts = parts

    def conflicts(self, tenant: str, namespace: str) -> list[ConflictGroup]:
        limits.check_namespace(namespace)
        groups: dict[str, list[MemoryRecord]] = {}
        cursor: str | None = None
        while True:
            page = self.parts.store.list(
                tenant,
                RecordQuery(namespaces=(namespace,), statuses=(Status.PENDING,), limit=100, cursor=cursor),
            )
            for record in page.items:
                if record.conflict_group:
                    groups.setdefault(record.conflict_group, []).append(record)
            if not page.next_cursor:
                break
            cursor = page.next_cursor
        return [ConflictGroup(group=group, records=records) for group, records in sorted(groups.items())]

    def resolve_conflict(
        self,
        tenant: str,
        group: str,
        *,
        keep: Sequence[str],
        actor: str,
        reason: str = "",
        visible: Callable[[str], bool] | None = None,
    ) -> list[MemoryRecord]:
        """Keep the named records (active again); every other member is superseded by the newest kept
        one. Keeping all members means "both are true" and simply re-activates them.

        `visible` is the caller's namespace check: a group with a member outside it is answered exactly like
        a group that does not exist (404, nothing about its members). All members are rewritten in one
        atomic commit guarded by each member's version and pending status; when another request resolved or
        changed the group first, this one is refused with 409 and writes nothing."""
        self.parts.require_clean("resolve", reason=reason)
        members = self._open_group(tenant, group, visible)
        read = [members]  # the members as last read: a lost race reads them again

        def once() -> list[MemoryRecord]:
            try:
                return self._commit_resolution(group, read[0], keep, actor, reason)
            except ConcurrentModification:
                try:
                    read[0] = self._open_group(tenant, group, visible)
                except NotFound:
                    raise Conflict(
                        f"conflict group {group} was resolved by another request meanwhile; "
                        "list the conflicts again",
                        group=group,
                    ) from None
                raise

        resolved = retry.on_conflict(once, attempts=MAX_RETRIES)
        kept = [r.id for r in resolved if r.status is Status.ACTIVE]
        losers = [r.id for r in resolved if r.status is Status.SUPERSEDED]
        self.parts.index.set_status(tenant, kept, Status.ACTIVE)
        if losers:
            self.parts.index.set_status(tenant, losers, Status.SUPERSEDED)
        self.parts.settle(tenant, {r.id: r.status for r in resolved})
        return resolved

    def _commit_resolution(
        self, group: str, members: list[MemoryRecord], keep: Sequence[str], actor: str, reason: str
    ) -> list[MemoryRecord]:
        """One atomic commit of the resolution, guarded by each member's version and pending status."""
        resolved = transitions.resolution(group, members, keep, reason, self.parts.now())
        writes = [RecordWrite(r, m.version, Status.PENDING) for r, m in zip(resolved, members, strict=True)]
        entries = [
            self.parts.change(r, ChangeOperation.RESOLVE, actor, before=m.public_dict(), reason=reason)
            for r, m in zip(resolved, members, strict=True)
        ]
        self.parts.commit(writes, entries)
        return resolved

    def _open_group(
        self, tenant: str, group: str, visible: Callable[[str], bool] | None
    ) -> list[MemoryRecord]:
        page = self.parts.store.list(tenant, RecordQuery(conflict_group=group, limit=100))
        members = [r for r in page.items if r.status is Status.PENDING and r.conflict_group == group]
        if not members or (visible is not None and not all(visible(r.namespace) for r in members)):
            raise NotFound(f"no open conflict group {group!r}")
        return members
