"""/v1 export, bundle import, snapshots, diff, restore, and the review of heavily reused memories.

Scopes: export, snapshot listing, diff and the reuse listing need `read` (an export shows nothing a read key
cannot already page through with GET /v1/memories and history: it is the same data in one answer); taking
and restoring snapshots and marking a memory reviewed need `write` (restore acts through correct/archive/
restore, which a write key may call one by one); importing a bundle needs `admin` (it creates records with
their own ids and history, outside the write discipline)."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Annotated, Any, TypeVar

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from pydantic import AfterValidator, ConfigDict, Field

from ...domain.errors import Misconfigured, NotFound, TooLarge, ValidationFailed
from ...domain.identity import Scope
from ...domain.interop import bundle as bundles
from ...domain.model import Model
from ...domain.records import MemoryRecord
from ...domain.versioning.diff import Diff
from ...domain.versioning.ports import SNAPSHOT_NAME_PATTERN, SnapshotMeta
from ...domain.versioning.service import Reuse, VersioningService
from ...domain.versioning.tree import Scope as TreeScope
from ...domain.versioning.tree import TreeVersioning, pattern_reaches
from ..context import RequestContext, current
from ..models import Namespace, Strict

router = Router()
M = TypeVar("M", bound=Model)

EXPORT_MAX_BYTES = 5_000_000
"""The largest export one response carries: Lambda answers at most 6 MB, and JSON escaping adds to the bytes
of the records and files. Larger exports go through the CLI (`agent-memory export`)."""
MAX_IMPORT_MEMBERS = 10_000

SnapshotName = Annotated[str, Field(pattern=SNAPSHOT_NAME_PATTERN, examples=["before-cleanup"])]
IncludeChildren = Annotated[
    bool,
    Query(
        description="Include the namespaces below `namespace` (/me covers /me/users/u-1, ...), those this key "
        "may use; false: the namespace alone"
    ),
]


def _zoned(value: datetime) -> datetime:
    if value.utcoffset() is None:
        raise ValueError("a date-time needs a time zone: add 'Z' (UTC) or a UTC offset")
    return value


ZonedDatetime = Annotated[datetime, AfterValidator(_zoned)]


class InlineBundle(Strict):
    """An export bundle in its JSON form: the manifest and every other member as text."""

    manifest: dict[str, Any]
    members: dict[str, str] = Field(max_length=MAX_IMPORT_MEMBERS)


class ImportBundleRequest(Strict):
    bundle: InlineBundle
    dry_run: bool = False


class ImportBundleResponse(Model):
    namespaces: list[str]
    dry_run: bool
    counts: dict[str, int]
    created: list[str]
    unchanged: list[str]
    conflicts: list[dict[str, str]]
    rejected: list[dict[str, str]]
    files_written: list[str]
    files_unchanged: list[str]
    file_conflicts: list[dict[str, str]]


class SnapshotRequest(Strict):
    namespace: Namespace
    name: SnapshotName
    note: Annotated[str, Field(max_length=500)] = ""
    include_children: bool = Field(
        True,
        description="Also snapshot each namespace below `namespace` that holds data (one snapshot of this name "
        "per namespace)",
    )


class SnapshotTaken(SnapshotMeta):
    """The snapshot of `namespace`, and those taken of the namespaces below it."""

    children: list[SnapshotMeta] = Field(
        default_factory=list, description="The snapshots of this name taken of the namespaces below it"
    )
    empty_reason: str | None = Field(
        None, description="Set when the snapshots hold nothing: why, and which namespaces hold data"
    )


class SnapshotList(Model):
    items: list[SnapshotMeta]


class SnapshotDetail(Model):
    snapshot: SnapshotMeta
    records: list[dict[str, Any]]
    """Each record of the snapshot as it was then (tenant-free), with its links."""
    files: list[str]


class RecordChange(Model):
    id: str
    kind: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    changes: list[dict[str, Any]]


class FileChange(Model):
    namespace: str
    path: str
    kind: str
    entries_added: list[str]
    entries_removed: list[str]
    before_chars: int
    after_chars: int


class DiffResponse(Model):
    namespace: str
    namespaces: list[str] = Field(description="The namespaces compared: `namespace` and those below it")
    from_: str = Field(alias="from", serialization_alias="from")
    to: str | None
    counts: dict[str, int]
    records: list[RecordChange]
    files: list[FileChange] | None

    model_config = ConfigDict(populate_by_name=True)


class RestoreRequest(Strict):
    namespace: Namespace
    dry_run: bool = False
    include_children: bool = Field(
        True,
        description="Also restore each namespace below `namespace` that has a snapshot of this name (a tree "
        "snapshot); those without one (created after it) are listed in `untouched`",
    )


class RestoreResponse(Model):
    snapshot: str
    namespace: str
    dry_run: bool
    safety_snapshot: str | None
    counts: dict[str, int]
    actions: list[dict[str, Any]]
    children: list[RestoreResponse] = Field(
        default_factory=list, description="The restores of the namespaces below it"
    )
    untouched: list[str] = Field(
        default_factory=list,
        description="Namespaces below it without a snapshot of this name, left as they are",
    )


class ReusedItem(Model):
    memory: MemoryRecord
    recalls: int
    sessions: int
    reviewed_at: datetime | None


class ReusedList(Model):
    items: list[ReusedItem]


def _service(ctx: RequestContext) -> VersioningService:
    if ctx.services.versioning is None:  # pragma: no cover - both runtimes wire it
        raise Misconfigured("export and snapshots are not configured on this deployment")
    return ctx.services.versioning


def tree_scope(ctx: RequestContext, scope: Scope, namespace: str, include_children: bool) -> TreeScope:
    """The namespaces a tree operation covers for this key: `namespace` and (with `include_children`) the
    namespaces below it, only those the key may use. A parent the key may not use itself is accepted when the
    key may use something below it (a `/me/a/*` key exporting `/me` gets `/me/a/...`, never `/me/b`)."""
    ctx.principal.require_scope(scope)
    reaches = include_children and any(pattern_reaches(p, namespace) for p in ctx.principal.namespaces)
    if not reaches:
        ctx.allow(scope, namespace)
    return TreeVersioning(_service(ctx)).scope(
        ctx.principal.tenant, namespace, include_children=include_children, visible=ctx.principal.allows
    )


def _diff(scope: TreeScope, source: str, target: str | None, diff: Diff) -> DiffResponse:
    return DiffResponse.model_validate(
        {
            "namespace": scope.parent,
            "namespaces": scope.namespaces,
            "from": source,
            "to": target,
            "counts": diff.counts(),
            "records": [
                {"id": r.id, "kind": r.kind, "before": r.before, "after": r.after, "changes": r.changes}
                for r in diff.records
            ],
            "files": None if diff.files is None else [f.__dict__ for f in diff.files],
        }
    )


def _fits(answer: M, what: str) -> M:
    """Refuse (413) an answer over what one API response carries, pointing to the CLI."""
    size = len(answer.model_dump_json())
    if size > EXPORT_MAX_BYTES:
        raise TooLarge(
            f"the {what} is {size:,} bytes as JSON, over the {EXPORT_MAX_BYTES:,} one API response carries: use "
            "the CLI where the data lives (`agent-memory export`, `agent-memory snapshot diff`)",
            limit=EXPORT_MAX_BYTES,
        )
    return answer


def _reused(item: Reuse) -> ReusedItem:
    return ReusedItem(
        memory=item.memory, recalls=item.recalls, sessions=item.sessions, reviewed_at=item.reviewed_at
    )


# --------------------------------------------------------------------------- export and import


@router.get(
    "/export",
    summary="Export a namespace as a bundle (records with provenance, history and links + the memory files). "
    f"Over {EXPORT_MAX_BYTES:,} bytes: 413, use `agent-memory export`",
    tags=["versioning"],
)
def export(
    namespace: Annotated[str, Query(max_length=520)], include_children: IncludeChildren = True
) -> InlineBundle:
    ctx = current()
    scope = tree_scope(ctx, Scope.READ, namespace, include_children)
    tree = TreeVersioning(_service(ctx))
    if not scope.namespaces:
        raise NotFound(
            tree.empty_note(ctx.principal.tenant, scope, ctx.principal.allows), namespace=namespace
        )
    bundle = tree.export(ctx.principal.tenant, scope, max_bytes=EXPORT_MAX_BYTES)
    source = {**bundle.source, "namespace": namespace, "include_children": include_children}
    if not (bundle.records or bundle.files):
        source["note"] = tree.empty_note(ctx.principal.tenant, scope, ctx.principal.allows)
    bundle = dataclasses.replace(bundle, source=source)
    return _fits(InlineBundle.model_validate(bundles.to_inline(bundle)), "export")


@router.post(
    "/export/import",
    summary="Import an export bundle (admin): records keep their ids and history; an id that exists with other "
    "content is reported as a conflict, never overwritten",
    tags=["versioning"],
)
def import_bundle(body: ImportBundleRequest) -> ImportBundleResponse:
    ctx = current()
    bundle = bundles.from_inline(body.bundle.model_dump())
    ctx.allow(Scope.ADMIN, *bundle.namespaces)
    report = _service(ctx).import_bundle(
        ctx.principal.tenant, bundle, actor=ctx.principal.actor, dry_run=body.dry_run
    )
    return ImportBundleResponse(counts=report.counts(), **report.__dict__)


# --------------------------------------------------------------------------- snapshots


@router.post(
    "/snapshots",
    summary="Take a named snapshot of a namespace (records + memory files) and, unless include_children is "
    "false, of each namespace below it that holds data (one snapshot of this name per namespace)",
    tags=["versioning"],
    status_code=201,
    response_description="The snapshots were taken",
)
def create_snapshot(body: SnapshotRequest) -> SnapshotTaken:
    ctx = current()
    ctx.allow(Scope.WRITE, body.namespace)  # the parent's snapshot is the one named in every later call
    scope = tree_scope(ctx, Scope.WRITE, body.namespace, body.include_children)
    tree = TreeVersioning(_service(ctx))
    parent, *children = tree.create_snapshot(
        ctx.principal.tenant, scope, body.name, actor=ctx.principal.actor, note=body.note
    )
    empty = not any(meta.counts.get("records") or meta.counts.get("files") for meta in (parent, *children))
    reason = tree.empty_note(ctx.principal.tenant, scope, ctx.principal.allows) if empty else None
    return SnapshotTaken(**parent.model_dump(), children=children, empty_reason=reason)


@router.get(
    "/snapshots",
    summary="The snapshots of a namespace and of the namespaces below it, oldest first",
    tags=["versioning"],
)
def list_snapshots(
    namespace: Annotated[str, Query(max_length=520)], include_children: IncludeChildren = True
) -> SnapshotList:
    ctx = current()
    scope = tree_scope(ctx, Scope.READ, namespace, include_children)
    return SnapshotList(items=TreeVersioning(_service(ctx)).list_snapshots(ctx.principal.tenant, scope))


@router.get("/snapshots/<snapshot>", summary="One snapshot: its records and files", tags=["versioning"])
def get_snapshot(
    snapshot: Annotated[str, Path(max_length=64)], namespace: Annotated[str, Query(max_length=520)]
) -> SnapshotDetail:
    ctx = current()
    ctx.allow(Scope.READ, namespace)
    meta, bundle = _service(ctx).get_snapshot(ctx.principal.tenant, namespace, snapshot)
    detail = SnapshotDetail(
        snapshot=meta,
        records=[{**r.record, "links": r.links} for r in bundle.records],
        files=[item.path for item in bundle.files],
    )
    return _fits(detail, "snapshot")


@router.get(
    "/snapshots/<snapshot>/diff",
    summary="What changed from this snapshot to snapshot `to` (or to now): records added, changed, archived, "
    "restored with the change-log entries that explain each, and the memory files",
    tags=["versioning"],
)
def diff_snapshot(
    snapshot: Annotated[str, Path(max_length=64)],
    namespace: Annotated[str, Query(max_length=520)],
    to: Annotated[str | None, Query(max_length=64)] = None,
    include_children: IncludeChildren = True,
) -> DiffResponse:
    ctx = current()
    ctx.allow(Scope.READ, namespace)  # the snapshot named is the parent's
    scope = tree_scope(ctx, Scope.READ, namespace, include_children)
    diff = TreeVersioning(_service(ctx)).diff_snapshots(ctx.principal.tenant, scope, snapshot, to)
    return _fits(_diff(scope, snapshot, to, diff), "diff")


@router.post(
    "/snapshots/<snapshot>/restore",
    summary="Restore a namespace to a snapshot as new versions (restore, correct, archive; history kept), after "
    "taking a snapshot of the current state; unless include_children is false, each namespace below it that "
    "has a snapshot of this name too",
    tags=["versioning"],
)
def restore_snapshot(snapshot: Annotated[str, Path(max_length=64)], body: RestoreRequest) -> RestoreResponse:
    ctx = current()
    ctx.allow(Scope.WRITE, body.namespace)  # the snapshot named is the parent's
    scope = tree_scope(ctx, Scope.WRITE, body.namespace, body.include_children)
    reports, untouched = TreeVersioning(_service(ctx)).restore_snapshot(
        ctx.principal.tenant, scope, snapshot, actor=ctx.principal.actor, dry_run=body.dry_run
    )
    parent, *children = [RestoreResponse(counts=r.counts(), **r.__dict__) for r in reports]
    return parent.model_copy(update={"children": children, "untouched": untouched})


@router.get(
    "/diff",
    summary="What changed in a namespace between two points in time (from the change log; `to` defaults to now)",
    tags=["versioning"],
)
def diff_times(
    namespace: Annotated[str, Query(max_length=520)],
    from_: Annotated[datetime, Query(alias="from")],
    to: Annotated[datetime | None, Query()] = None,
    include_children: IncludeChildren = True,
) -> DiffResponse:
    ctx = current()
    scope = tree_scope(ctx, Scope.READ, namespace, include_children)
    for moment in (from_, to):
        if moment is not None and moment.utcoffset() is None:
            raise ValidationFailed("'from' and 'to' need a time zone: add 'Z' (UTC) or a UTC offset")
    diff = TreeVersioning(_service(ctx)).diff_times(ctx.principal.tenant, scope, from_, to)
    return _fits(_diff(scope, from_.isoformat(), to.isoformat() if to else None, diff), "diff")


# --------------------------------------------------------------------------- references


@router.get(
    "/memories/reused",
    summary="Heavily reused memories for review: recalls (recent window) and sessions whose snapshot held them",
    tags=["versioning"],
)
def reused(
    namespace: Annotated[str, Query(max_length=520)],
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    min_uses: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
) -> ReusedList:
    ctx = current()
    ctx.allow(Scope.READ, namespace)
    items = _service(ctx).reused(ctx.principal.tenant, namespace, limit=limit, min_uses=min_uses)
    return ReusedList(items=[_reused(item) for item in items])


@router.post(
    "/memories/<memory_id>/reviewed",
    summary="Mark a memory reviewed (a person checked it; the reuse listing shows when)",
    tags=["versioning"],
)
def mark_reviewed(memory_id: Annotated[str, Path(max_length=200)]) -> ReusedItem:
    ctx = current()
    ctx.principal.require_scope(Scope.WRITE)
    service = _service(ctx)
    record = ctx.services.memory.get(ctx.principal.tenant, memory_id)
    if not ctx.principal.allows(record.namespace):
        raise NotFound(f"no memory with id {memory_id!r}")
    ctx.allow(Scope.WRITE, record.namespace)
    return _reused(service.mark_reviewed(ctx.principal.tenant, memory_id))
