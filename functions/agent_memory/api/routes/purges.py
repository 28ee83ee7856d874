"""/v1/admin/purges: erasure (domain/erasure). plan → execute (plan id + reason) → status; admin AND purge
scopes, over the whole tenant (a purge follows a memory's lineage and its text across namespaces).

Answers never carry content: record ids, namespaces, `path:line` references, counts per store, content
hashes, and the verification report."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import Field

from ...domain.erasure.model import (
    PurgeKind,
    PurgePlan,
    PurgeState,
    PurgeTarget,
    Retention,
    StoreFinding,
    Verification,
)
from ...domain.erasure.service import ErasureService
from ...domain.errors import Forbidden, Misconfigured, NotFound
from ...domain.identity import Scope
from ...domain.model import Model
from ...domain.safety import fields as safety_fields
from ...settings.workflows import PURGE
from ..context import current
from ..jobs import JobLauncher
from ..models import Strict

router = Router()
PLAN_ID_PATTERN = r"^purge_[0-9a-f]{32}$"


class PurgeRequest(Strict):
    kind: PurgeKind
    record_id: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    """`memory`: the memory to purge with its lineage."""
    namespace: Annotated[str, Field(min_length=1, max_length=520)] | None = None
    """`namespace`: the namespace to purge."""
    subject: Annotated[str, Field(min_length=3, max_length=500)] | None = None
    """`subject`: an id or a text; every memory whose content, context or metadata names it."""


class ExecuteRequest(Strict):
    reason: Annotated[str, Field(min_length=1, max_length=500)]
    """Why (kept in the tombstone with who and when)."""


class PurgeResponse(Model):
    id: str
    tenant: str
    target: PurgeTarget
    state: PurgeState
    planned_by: str
    planned_at: datetime
    records: int
    """How many records the purge removes."""
    record_ids: list[str]
    """The first 1,000 of them."""
    namespaces: list[str]
    content_hashes: list[str]
    candidates: list[str]
    """Subject purges: records ranked near the subject by hybrid search that do not name it (not purged)."""
    plan: list[StoreFinding]
    """Per store: `items` counts everything, `refs` lists the first 1,000."""
    done: list[str]
    reason: str
    executed_by: str
    executed_at: datetime | None
    completed_at: datetime | None
    verification: Verification | None
    execution: str | None
    """The workflow execution running a purge above the inline limit (AWS)."""
    regrown: int
    """Times execute added records of the target written since the plan (a correction's successor, a write
    to the purged namespace) and ran every step again."""
    retained: list[Retention]
    """What this runtime keeps beyond the purge's reach for a while (backups, object versions, logs) and for
    how many days: erased by expiry (docs/security.md)."""


class PurgeList(Model):
    purges: list[PurgeResponse]


def _service() -> tuple[ErasureService, str, str]:
    ctx = current()
    ctx.principal.require_scope(Scope.ADMIN)
    ctx.principal.require_scope(Scope.PURGE)
    if not ctx.principal.allows_all:
        raise Forbidden("a purge covers the whole tenant: use a key not limited to namespaces")
    service = ctx.services.erasure
    if service is None:
        raise Misconfigured("erasure is not available on this runtime (not wired in wiring/)")
    return service, ctx.principal.tenant, ctx.principal.actor


MAX_REFS = 1000
"""References listed per store and record ids listed in one answer (Lambda answers at most 6 MB); `items` and
`records` always count all of them, and `agent-memory purge status` lists everything."""


def _out(plan: PurgePlan) -> PurgeResponse:
    data = plan.model_dump(exclude={"needles", "record_namespaces", "record_hashes"})
    data["records"] = len(plan.record_ids)
    data["record_ids"] = plan.record_ids[:MAX_REFS]
    for findings in (data["plan"], (data["verification"] or {}).get("stores", [])):
        for finding in findings:
            finding["refs"] = finding["refs"][:MAX_REFS]
    return PurgeResponse.model_validate(data)


def _checked_id(plan_id: str) -> str:
    import re

    if not re.fullmatch(PLAN_ID_PATTERN, plan_id):
        raise NotFound(f"purge plan {plan_id!r} not found", plan_id=plan_id)
    return plan_id


@router.post("/admin/purges", summary="Plan a purge: exactly what would be removed", tags=["erasure"])
def plan(body: PurgeRequest) -> PurgeResponse:
    service, tenant, actor = _service()
    target = PurgeTarget(
        kind=body.kind, record_id=body.record_id, namespace=body.namespace, subject=body.subject
    )
    return _out(service.plan(tenant, target, actor=actor))


@router.get("/admin/purges", summary="Purge plans and tombstones, newest first", tags=["erasure"])
def list_purges() -> PurgeList:
    service, tenant, _ = _service()
    return PurgeList(purges=[_out(p) for p in service.list(tenant)])


@router.get("/admin/purges/<plan_id>", summary="A purge's state, steps and verification", tags=["erasure"])
def status(plan_id: str) -> PurgeResponse:
    service, tenant, _ = _service()
    return _out(service.status(tenant, _checked_id(plan_id)))


@router.post(
    "/admin/purges/<plan_id>/execute",
    summary="Execute a planned purge (idempotent, resumable) and verify it",
    description="The answer is the plan once verified (`completed`, or `incomplete` with what remains). A plan "
    "too large for one call (AWS) runs in the purge workflow, and on the local server every purge runs in the "
    "job worker process (not in the request): the answer then waits up to 120 s for it and may be `executing`, with "
    "its `execution`; GET /v1/admin/purges/{plan_id} shows the steps done until it is `completed`. Writes to "
    "what it erases get 409 `purge_in_progress` meanwhile.",
    tags=["erasure"],
)
def execute(plan_id: str, body: ExecuteRequest) -> PurgeResponse:
    service, tenant, actor = _service()
    # The reason is kept in the purge's audit record, which outlives what it erased: scanned like every note.
    safety_fields.require_clean({"reason": body.reason}, "purge reason")
    jobs = current().services.jobs
    # Local server: the steps run in the job worker process, not in this request (AWS: inline or the workflow)
    background = JobLauncher(jobs, PURGE) if jobs is not None and "purge" in jobs.kinds else None
    plan = service.execute(
        tenant, _checked_id(plan_id), reason=body.reason, actor=actor, background=background
    )
    if plan.state is PurgeState.EXECUTING and background is not None:
        plan = _awaited(service, tenant, plan)
    return _out(plan)


PURGE_WAIT_SECONDS = 120.0
"""Local server: how long an execute waits for its purge job (run by the job worker process, not in the
request) before answering `executing`; GET /v1/admin/purges/{id} then shows when it is done."""


def _awaited(service: ErasureService, tenant: str, plan: PurgePlan) -> PurgePlan:
    """The plan once its job is done (or after PURGE_WAIT_SECONDS); a job that failed answers as the inline
    purge would have: its domain error, or 500 for an unexpected one (the plan stays `executing`: resumable)."""
    from ..jobs import job_failure

    jobs = current().services.jobs
    deadline = time.monotonic() + PURGE_WAIT_SECONDS
    while plan.state is PurgeState.EXECUTING and time.monotonic() < deadline:
        time.sleep(0.05)
        if jobs is not None and plan.execution:
            job_failure(jobs, tenant, "purge", plan.execution)
        plan = service.status(tenant, plan.id)
    return plan
