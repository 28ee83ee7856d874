"""Namespaces as a tree: `/me` is the parent of `/me/users/u-1` (a segment boundary, never a string prefix:
`/mean` is not below `/me`). Export, snapshots, diff and listing take a parent and include the namespaces below
it; the caller's key decides which of them it may see (`visible`), so a parent never widens a key."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from ..errors import Conflict, ValidationFailed
from ..interop import bundle as bundles
from ..records import is_valid_namespace
from . import diff as diffs
from .ports import SnapshotMeta
from .service import RestoreReport, VersioningService


def within(parent: str, namespace: str) -> bool:
    """`namespace` is `parent` or below it."""
    return namespace == parent or namespace.startswith(parent.rstrip("/") + "/")


def subtree(
    parent: str,
    known: Iterable[str],
    *,
    include_children: bool = True,
    visible: Callable[[str], bool] | None = None,
) -> list[str]:
    """`parent` and, with `include_children`, every namespace of `known` below it; only those `visible`
    allows (the parent included), sorted."""
    chosen = {parent}
    if include_children:
        chosen.update(namespace for namespace in known if within(parent, namespace))
    return sorted(namespace for namespace in chosen if visible is None or visible(namespace))


def children(parent: str, known: Iterable[str]) -> list[str]:
    """The namespaces of `known` strictly below `parent`, sorted."""
    return sorted({namespace for namespace in known if namespace != parent and within(parent, namespace)})


def pattern_reaches(pattern: str, parent: str) -> bool:
    """A key namespace pattern (`*`, `/a/*`, `/a`) grants `parent` or something below it."""
    if pattern == "*":
        return True
    if pattern.endswith("/*"):  # strictly below base: the parent itself is under it, or base is in the tree
        base = pattern[:-2]
        return (parent != base and within(base, parent)) or within(parent, base)
    return within(parent, pattern)


def tree_selectors(patterns: Iterable[str], parent: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What of `parent`'s tree the key patterns grant, as a record query takes it (`RecordQuery.namespaces`,
    `.namespaces_below`): the exact namespaces, and those whose whole subtree (strictly below) is granted. A
    `/me/a/*` key listing `/me` gets `((), ("/me/a",))`: never `/me` itself nor `/me/b`."""
    exact: dict[str, None] = {}
    below: dict[str, None] = {}
    for pattern in patterns:
        if pattern == "*" or (
            pattern.endswith("/*") and within(pattern[:-2], parent) and pattern[:-2] != parent
        ):
            return (parent,), (parent,)
        if pattern.endswith("/*"):
            base = pattern[:-2]
            if within(parent, base):  # the parent itself, or a namespace below it
                below[base] = None
        elif within(parent, pattern):
            exact[pattern] = None
    return tuple(exact), tuple(below)


# --------------------------------------------------------------------------- over the versioning service


@dataclass(frozen=True)
class Scope:
    """What a tree operation covers: the namespaces (the parent first when the key may use it, then the
    children that hold data), and whether the parent itself holds data (None: not looked up)."""

    parent: str
    namespaces: list[str]
    include_children: bool
    parent_holds_data: bool | None = None


class TreeVersioning:
    """Export, snapshots and diff of a namespace and the namespaces below it, over `VersioningService`.

    A snapshot of a tree is one snapshot per namespace, all of the same name: each namespace keeps its own
    (so an erasure of a child finds the child's snapshots where it always looked), and a restore restores
    each part with the namespace's own restore. Children are found among the tenant's namespaces that hold
    records or memory files."""

    def __init__(self, service: VersioningService) -> None:
        self._service = service

    def scope(
        self,
        tenant: str,
        parent: str,
        *,
        include_children: bool = True,
        visible: Callable[[str], bool] | None = None,
    ) -> Scope:
        if not is_valid_namespace(parent):
            raise ValidationFailed(f"invalid namespace {parent!r}: use a path like /projects/billing")
        known = self._service.namespaces(tenant) if include_children else []
        chosen = subtree(parent, known, include_children=include_children, visible=visible)
        held = (parent in known) if include_children else None
        return Scope(
            parent=parent, namespaces=chosen, include_children=include_children, parent_holds_data=held
        )

    def empty_note(self, tenant: str, scope: Scope, visible: Callable[[str], bool] | None = None) -> str:
        """Why a result is empty, naming the namespaces (the key may see) that do hold data."""
        held = [ns for ns in self._service.namespaces(tenant) if visible is None or visible(ns)]
        below = children(scope.parent, held)
        if below and not scope.include_children:
            return (
                f"{scope.parent} itself holds no records or memory files; its child namespaces do: "
                f"{', '.join(below[:20])}{' …' if len(below) > 20 else ''} (leave out --no-children / "
                "include_children=false to include them)"
            )
        where = f"; namespaces that hold data: {', '.join(held[:20])}" if held else ""
        return f"{scope.parent} and the namespaces below it hold no records or memory files{where}"

    @staticmethod
    def exported(scope: Scope) -> list[str]:
        """The namespaces an export of the scope carries: those that hold data (a parent holding nothing is
        left out, so the bundle imports with a key for the children alone), or the parent alone when none
        does."""
        empty_parent = scope.parent_holds_data is False and scope.namespaces[:1] == [scope.parent]
        return scope.namespaces[1:] if empty_parent and len(scope.namespaces) > 1 else scope.namespaces

    def export(self, tenant: str, scope: Scope, *, max_bytes: int | None = None) -> bundles.Bundle:
        if not scope.namespaces:
            raise ValidationFailed(f"no namespace to export under {scope.parent}")
        return self._service.export(tenant, self.exported(scope), max_bytes=max_bytes)

    def create_snapshot(
        self, tenant: str, scope: Scope, name: str, *, actor: str, note: str = ""
    ) -> list[SnapshotMeta]:
        """One snapshot named `name` per namespace of the scope; refused whole (nothing taken) when any of
        them already has a snapshot of that name."""
        taken = [ns for ns in scope.namespaces if self._service.has_snapshot(tenant, ns, name)]
        if taken:
            raise Conflict(
                f"snapshot {name!r} already exists in {', '.join(taken[:10])}; snapshots are immutable: choose "
                "another name",
                snapshot=name,
            )
        return [
            self._service.create_snapshot(tenant, ns, name, actor=actor, note=note) for ns in scope.namespaces
        ]

    def list_snapshots(self, tenant: str, scope: Scope) -> list[SnapshotMeta]:
        found = [meta for ns in scope.namespaces for meta in self._service.list_snapshots(tenant, ns)]
        return sorted(found, key=lambda meta: (meta.created_at, meta.namespace, meta.name))

    def diff_snapshots(self, tenant: str, scope: Scope, source: str, target: str | None) -> diffs.Diff:
        """From snapshot `source` to `target` (None: now) in every namespace of the scope. The parent must
        have `source` (and `target`); a child created after `source` diffs from nothing (all added), a child
        without `target` is left out (it held nothing, or that snapshot was taken without children)."""
        anchor, _ = self._service.get_snapshot(tenant, scope.parent, source)
        if target is not None:
            self._service.get_snapshot(tenant, scope.parent, target)  # NotFound names it
        records: list[diffs.RecordDiff] = []
        files: list[diffs.FileDiff] = []
        for ns in scope.namespaces:
            has_source = self._service.has_snapshot(tenant, ns, source)
            if target is not None and not self._service.has_snapshot(tenant, ns, target):
                continue
            if has_source:
                part = self._service.diff_snapshots(tenant, ns, source, target)
            else:
                part = self._from_nothing(tenant, ns, target, since=anchor.created_at)
            records.extend(part.records)
            files.extend(part.files or [])
        return diffs.Diff(records=records, files=files)

    def _from_nothing(
        self, tenant: str, namespace: str, target: str | None, *, since: datetime
    ) -> diffs.Diff:
        if target is None:
            after, until = self._service.export(tenant, [namespace]), None
        else:
            meta, after = self._service.get_snapshot(tenant, namespace, target)
            until = meta.created_at
        state = {entry.id: entry.record for entry in after.records}
        changes = {entry.id: entry.changes for entry in after.records}
        texts = {(item.namespace, item.path): item.text for item in after.files}
        return diffs.Diff(
            records=diffs.diff_records({}, state, changes, since=since, until=until),
            files=diffs.diff_files({}, texts),
        )

    def restore_snapshot(
        self, tenant: str, scope: Scope, name: str, *, actor: str, dry_run: bool = False
    ) -> tuple[list[RestoreReport], list[str]]:
        """Restore every namespace of the scope that has a snapshot `name` (the parent first, which must have
        it), each as `VersioningService.restore_snapshot` does (its own safety snapshot first). Returns the
        reports and the namespaces left untouched because they have no such snapshot (created after it)."""
        self._service.get_snapshot(tenant, scope.parent, name)  # NotFound names it
        reports: list[RestoreReport] = []
        untouched: list[str] = []
        for ns in scope.namespaces:
            if not self._service.has_snapshot(tenant, ns, name):
                untouched.append(ns)
                continue
            reports.append(self._service.restore_snapshot(tenant, ns, name, actor=actor, dry_run=dry_run))
        return reports, untouched

    def diff_times(self, tenant: str, scope: Scope, since: datetime, until: datetime | None) -> diffs.Diff:
        records: list[diffs.RecordDiff] = []
        for ns in scope.namespaces:
            records.extend(self._service.diff_times(tenant, ns, since, until).records)
        return diffs.Diff(records=records, files=None)
