"""/v1 memory-file routes: MEMORY.md / USER.md entries (capped), the daily log."""

from __future__ import annotations

from datetime import date
from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from ...domain.errors import NotFound, ValidationFailed
from ...domain.files.memory_files import FileView
from ...domain.identity import Scope
from ..context import current
from ..models import DailyAppend, DailyOut, FileEntryAdd, FileEntryRemove, FileEntryReplace, FileKind, FileOut

router = Router()

_KINDS: dict[str, FileKind] = {"memory": "memory", "user": "user"}


def _kind(kind: str) -> FileKind:
    if kind not in _KINDS:
        raise NotFound(f"no memory file kind {kind!r}; use one of: {', '.join(_KINDS)}")
    return _KINDS[kind]


def _out(view: FileView) -> FileOut:
    return FileOut(
        kind=view.kind, path=view.path, entries=view.entries, text=view.text, used=view.used, limit=view.limit
    )


@router.get("/files/<kind>", summary="Read MEMORY.md (kind=memory) or USER.md (kind=user)", tags=["files"])
def read_file(kind: str, namespace: Annotated[str, Query(max_length=520)]) -> FileOut:
    ctx = current()
    ctx.allow(Scope.READ, namespace)
    return _out(ctx.services.files.read(ctx.principal.tenant, namespace, _kind(kind)))


@router.post("/files/<kind>/entries", summary="Add an entry (refused over the cap)", tags=["files"])
def add_entry(kind: str, body: FileEntryAdd) -> FileOut:
    ctx = current()
    ctx.allow(Scope.WRITE, body.namespace)
    return _out(ctx.services.files.add(ctx.principal.tenant, body.namespace, _kind(kind), body.content))


@router.post(
    "/files/<kind>/entries/replace", summary="Replace the one entry containing `match`", tags=["files"]
)
def replace_entry(kind: str, body: FileEntryReplace) -> FileOut:
    ctx = current()
    ctx.allow(Scope.WRITE, body.namespace)
    return _out(
        ctx.services.files.replace(
            ctx.principal.tenant, body.namespace, _kind(kind), body.match, body.content
        )
    )


@router.post(
    "/files/<kind>/entries/remove", summary="Remove the one entry containing `match`", tags=["files"]
)
def remove_entry(kind: str, body: FileEntryRemove) -> FileOut:
    ctx = current()
    ctx.allow(Scope.WRITE, body.namespace)
    return _out(ctx.services.files.remove(ctx.principal.tenant, body.namespace, _kind(kind), body.match))


@router.post("/daily-log", summary="Append a line to today's memory/YYYY-MM-DD.md", tags=["files"])
def append_daily(body: DailyAppend) -> DailyOut:
    ctx = current()
    ctx.allow(Scope.WRITE, body.namespace)
    path = ctx.services.files.append_daily(ctx.principal.tenant, body.namespace, body.text)
    day = path.rsplit("/", 1)[-1].removesuffix(".md")
    text = ctx.services.files.read_daily(ctx.principal.tenant, body.namespace, date.fromisoformat(day))
    return DailyOut(path=path, text=text or "")


@router.get("/daily-log", summary="Read one day's log", tags=["files"])
def read_daily(
    namespace: Annotated[str, Query(max_length=520)],
    day: Annotated[str, Query(alias="date", pattern=r"^\d{4}-\d{2}-\d{2}$")],
) -> DailyOut:
    ctx = current()
    ctx.allow(Scope.READ, namespace)
    try:
        when = date.fromisoformat(day)
    except ValueError as error:
        raise ValidationFailed(f"date must be a real calendar date YYYY-MM-DD: {error}") from error
    text = ctx.services.files.read_daily(ctx.principal.tenant, namespace, when)
    if text is None:
        raise NotFound(f"no daily log for {day} in {namespace}")
    return DailyOut(path=f"memory/{day}.md", text=text)
