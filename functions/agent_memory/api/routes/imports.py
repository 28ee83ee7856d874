"""/v1/imports: import another agent tool's memory from an uploaded archive (admin scope; domain/interop).

The archive (zip or tar.gz of an OpenClaw workspace, a Hermes home, a Claude Code project or `~/.claude`, Mem0
JSON exports or JSONL chat logs) travels base64-encoded in the JSON body. A Lambda function takes at most 6 MB
per synchronous request (API Gateway 10 MB), and base64 adds a third: the archive may be at most
`MAX_ARCHIVE_BYTES` (4 MiB) once decoded, refused with 413 above that. Larger sources: `agent-memory import`
on the machine that holds them. The import is accepted as a job (202, GET /v1/jobs/{id}): locally the job
worker process runs it, in AWS the job function (not the API function, whose requests API Gateway stops at
29 s). A dry run stays synchronous, as does an import on a runtime that wires no jobs."""

from __future__ import annotations

import base64
import binascii
import re
from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler.api_gateway import Response, Router
from aws_lambda_powertools.event_handler.openapi.params import Query
from pydantic import Field

from ...domain.errors import Misconfigured, NotFound, TooLarge, ValidationFailed
from ...domain.identity import Principal, Scope
from ...domain.interop.model import ImportReport, ItemOutcome
from ...domain.interop.service import ImportService, Progress, render_markdown
from ...domain.jobs.service import Progress as JobProgress
from ...domain.model import Model
from ..context import RequestContext, current
from ..jobs import JobFence, JobOrder
from ..models import Strict
from .jobs import JobResponse, accepted, accepted_response, jobs_of

if TYPE_CHECKING:
    from ...domain.jobs.service import Work
    from ..context import Services

router = Router()

MAX_ARCHIVE_BYTES = 4 * 1024 * 1024
_MAX_BASE64_CHARS = (MAX_ARCHIVE_BYTES + 2) // 3 * 4
MAX_IMPORT_BODY_BYTES = _MAX_BASE64_CHARS + 64 * 1024
"""The request body an upload of MAX_ARCHIVE_BYTES needs (base64 plus the JSON around it): the local server
lets this route's body grow to it, above its general `max_body_bytes`, so the documented 4 MiB holds there too."""
_FORMATS = "auto|openclaw|hermes|claude-code|mem0|jsonl"
_ID = re.compile(r"imp_[a-f0-9]{1,40}")


class ImportRequest(Strict):
    namespace: Annotated[str, Field(min_length=1, max_length=520)]
    archive: Annotated[str, Field(min_length=1)]
    """The zip or tar.gz archive, base64-encoded (standard alphabet). At most 4 MiB once decoded (413 above)."""
    format: Annotated[str, Field(pattern=f"^(?:{_FORMATS})$")] = "auto"
    dry_run: bool = False
    """Inventory only: list what the archive holds and write nothing (the report is not stored)."""
    name: Annotated[str, Field(max_length=200)] = "upload"
    """How the source is named in the report (e.g. the archive's file name)."""


class ImportResponse(Model):
    report: ImportReport
    markdown: str


class ImportItems(Model):
    items: list[ItemOutcome]
    """What each source item became (ordered by source ref): decision, record id, reason when not written."""
    total: int
    """Items matching the filter."""
    next_offset: int | None = None


def _service(ctx: RequestContext) -> ImportService:
    service = ctx.services.imports
    if service is None:
        raise Misconfigured("imports are not available on this runtime (not wired in wiring/)")
    return service


def _decode(text: str) -> bytes:
    if len(text) > _MAX_BASE64_CHARS:
        raise TooLarge(
            f"the archive is about {len(text) * 3 // 4:,} bytes; an upload may be {MAX_ARCHIVE_BYTES:,} bytes "
            "(Lambda's 6 MB request limit, after base64). Import larger sources with `agent-memory import`, or "
            "split the archive",
            limit=MAX_ARCHIVE_BYTES,
        )
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValidationFailed("`archive` is not valid base64 (standard alphabet, with padding)") from None


def _visible(ctx: RequestContext, import_id: str) -> tuple[ImportService, ImportReport]:
    """The caller's tenant's import, answered like a missing one when its namespace is not the key's."""
    ctx.principal.require_scope(Scope.ADMIN)
    service = _service(ctx)
    if not _ID.fullmatch(import_id):
        raise NotFound(f"no import with id {import_id[:60]!r}")
    report = service.report(ctx.principal.tenant, import_id)
    if not ctx.principal.allows(report.namespace):
        raise NotFound(f"no import with id {import_id!r}")
    return service, report


@router.post(
    "/imports",
    summary="Import an uploaded archive of another tool's memory (admin; a job: 202)",
    tags=["imports"],
    responses={
        200: {
            "description": "The import's validation `report` and its `markdown` rendering (a dry run)",
            "content": {"application/json": {"model": ImportResponse}},
        },
        **accepted_response("An import (other than a dry run)"),
    },
)
def create_import(body: ImportRequest) -> Response[ImportResponse | JobResponse]:
    ctx = current()
    ctx.allow(Scope.ADMIN, body.namespace)
    reader = ctx.services.archive_reader
    if reader is None:
        raise Misconfigured("archive uploads are not available on this runtime (no archive reader wired)")
    jobs = jobs_of(ctx)
    if jobs is not None and not body.dry_run:
        # An unreadable archive or an unknown layout: 413/422 now, not in the job.
        _service(ctx).inventory(reader(_decode(body.archive), body.name or "upload"), body.format)
        order = JobOrder.of(ctx.principal, ctx.services.erasure, body.model_dump_json())
        job = jobs.submit(ctx.principal.tenant, ctx.principal.key_id, "import", [body.namespace], order)
        return accepted(job)
    result = _run(ctx.services, ctx.principal, body, None)
    return Response(
        status_code=200, content_type="application/json", body=ImportResponse.model_validate(result)
    )


def _run(
    services: Services, principal: Principal, body: ImportRequest, step: Progress | None
) -> dict[str, Any]:
    reader = services.archive_reader
    service = services.imports
    if reader is None or service is None:
        raise Misconfigured("archive imports are not available on this runtime (not wired in wiring/)")
    report = service.run(
        principal.tenant,
        reader(_decode(body.archive), body.name or "upload"),
        body.namespace,
        fmt=body.format,
        actor=principal.actor,
        dry_run=body.dry_run,
        allowed=principal.allows,
        progress=step,
    )
    return ImportResponse(report=report, markdown=render_markdown(report)).model_dump(mode="json")


def import_work(services: Services, principal: Principal, request: str, fence: JobFence) -> Work:
    """A queued import (api/jobs.py): the purge fence is checked before it starts and between its batches."""
    body = ImportRequest.model_validate_json(request)

    def work(progress: JobProgress) -> dict[str, Any]:
        def step(done: int, total: int) -> None:
            progress(done, total)
            fence.check()  # between the import's batches: stop before writing into a purge

        fence.check()
        return _run(services, principal, body, step)

    return work


@router.get("/imports/<import_id>", summary="An import's validation report (admin)", tags=["imports"])
def get_import(import_id: str) -> ImportResponse:
    _, report = _visible(current(), import_id)
    return ImportResponse(report=report, markdown=render_markdown(report))


@router.get(
    "/imports/<import_id>/items",
    summary="What each item of an import became: decision, record, reason (admin)",
    tags=["imports"],
)
def import_items(
    import_id: str,
    decision: Annotated[str | None, Query(max_length=40, pattern=r"^[a-z_]+$")] = None,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> ImportItems:
    """Every item, not only the report's listed ones (the report lists at most 600 it did not write)."""
    ctx = current()
    service, report = _visible(ctx, import_id)
    outcomes = sorted(service.store.outcomes(ctx.principal.tenant, report.id), key=lambda o: o.ref)
    if decision is not None:
        outcomes = [o for o in outcomes if o.decision == decision]
    page = outcomes[offset : offset + limit]
    more = offset + limit < len(outcomes)
    return ImportItems(items=page, total=len(outcomes), next_offset=offset + limit if more else None)


@router.post(
    "/imports/<import_id>/rollback",
    summary="Roll an import back as a unit: archive what it created (admin)",
    tags=["imports"],
)
def rollback_import(import_id: str) -> ImportResponse:
    ctx = current()
    service, report = _visible(ctx, import_id)
    report = service.rollback(ctx.principal.tenant, report.id, actor=ctx.principal.actor)
    return ImportResponse(report=report, markdown=render_markdown(report))
