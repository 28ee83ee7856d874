"""/v1/admin/dream: run the dreaming sweep on demand (admin scope), or explain it with a dry run.

The sweep runs synchronously in the request: fine locally and for namespaces of ordinary size; API Gateway
answers 504 after 29 s, so large deployments rely on the scheduled Step Functions sweep."""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query
from pydantic import Field

from ...domain.errors import Forbidden, NotConfigured
from ...domain.identity import Scope
from ...domain.model import Model
from ..context import RequestContext, current
from ..models import Namespace, Strict

if TYPE_CHECKING:  # the sweep's code is loaded on the first dream request, not on every cold start
    from ...domain.dreaming.report import DreamReport
    from ...domain.dreaming.sweep import DreamingService

router = Router()


class DreamRequest(Strict):
    namespace: Namespace | None = Field(
        None, description="One namespace; omitted: every namespace of the tenant"
    )
    dry_run: bool = Field(False, description="Explain every decision without writing anything")
    day: date | None = Field(None, description="Sweep day (default: today, UTC)")
    force: bool = Field(
        False, description="Run again although the day's sweep completed (nothing is promoted twice)"
    )
    explain: Annotated[int, Field(ge=0, le=1000, description="Candidates explained per namespace")] = 50


class GateOut(Model):
    value: float | None = Field(None, description="None only in run.json audits written before 2026-12")
    threshold: float | None = None
    passed: bool


class CandidateOut(Model):
    key: str
    text: str
    type: str
    kind: str
    decision: str = Field(description="promoted | blocked | deferred | excluded | already_promoted | failed")
    reason: str
    total: float
    base: float
    reinforcement: float
    workload: float
    signals: dict[str, float]
    gates: dict[str, GateOut]
    evidence: dict[str, Any]
    provenance: dict[str, list[str]]
    memory_md: str | None = None
    record_id: str | None = None


class DreamRun(Model):
    namespace: str
    day: str
    run_id: str
    dry_run: bool
    status: str = Field(description="completed | already_done")
    summary: dict[str, Any]
    workload: dict[str, Any]
    themes: list[dict[str, Any]]
    candidates: list[CandidateOut]


class DreamResponse(Model):
    runs: list[DreamRun]


@router.post("/admin/dream", summary="Run or explain the dreaming sweep (admin scope)", tags=["admin"])
def dream(body: DreamRequest) -> DreamResponse:
    ctx = current()
    ctx.allow(Scope.ADMIN, *([body.namespace] if body.namespace else []))
    if body.namespace is None and not ctx.principal.allows_all:
        raise Forbidden("this API key is limited to some namespaces: name one in `namespace`")
    service = _service(ctx)
    tenant = ctx.principal.tenant
    namespaces = [body.namespace] if body.namespace else service.namespaces(tenant)
    runs = [
        _run_out(
            service.run(tenant, namespace, day=body.day, dry_run=body.dry_run, force=body.force), body.explain
        )
        for namespace in namespaces
    ]
    return DreamResponse(runs=runs)


class DreamStartRequest(Strict):
    namespaces: Annotated[list[Namespace], Field(max_length=100)] = Field(
        default_factory=list, description="Namespaces to sweep; all of the tenant's when empty"
    )


class DreamStarted(Model):
    execution: str
    namespaces: list[str]


class DreamRunRecord(Model):
    namespace: str
    day: str
    run_id: str
    status: str = Field(description="completed | compacted (an older day: its summary only)")
    finished_at: str | None = None
    compacted: bool = Field(description="True for a day compacted by `.dreams/` retention: no candidates")
    reruns: list[str] = Field(description="Audits of forced re-runs of the day, beside the first run's")
    summary: dict[str, Any]
    workload: dict[str, Any] = Field(default_factory=dict)
    themes: list[dict[str, Any]] = Field(default_factory=list)
    candidates: list[CandidateOut] = Field(
        default_factory=list, description="The run's explained candidates (run.json's cap), promoted first"
    )


class DreamRunsResponse(Model):
    runs: list[DreamRunRecord]


@router.get(
    "/admin/dream/runs",
    summary="The last dreaming runs of a namespace, newest first: what each promoted and held back, with "
    "the six signals and the gates of every candidate (admin scope)",
    tags=["admin"],
)
def dream_runs(
    namespace: Annotated[str, Query(max_length=520)],
    limit: Annotated[int, Query(ge=1, le=30)] = 5,
) -> DreamRunsResponse:
    ctx = current()
    ctx.allow(Scope.ADMIN, namespace)
    from ...domain.dreaming.ledger import recent_runs

    runs = []
    for run in recent_runs(ctx.services.files, ctx.principal.tenant, namespace, limit):
        for candidate in run.get("candidates", []):
            gates = candidate.get("gates", {})  # older audits kept only whether each gate passed
            candidate["gates"] = {k: g if isinstance(g, dict) else {"passed": g} for k, g in gates.items()}
        runs.append(
            DreamRunRecord.model_validate({k: v for k, v in run.items() if k in DreamRunRecord.model_fields})
        )
    return DreamRunsResponse(runs=runs)


@router.post(
    "/admin/dream/start",
    summary="Start the dreaming sweep now, asynchronously: the Step Functions workflow in AWS, a job of the "
    "job worker process locally (admin scope)",
    tags=["admin"],
    status_code=202,
    response_description="The sweep was started and runs on; `execution` identifies it",
)
def start_dream(body: DreamStartRequest) -> DreamStarted:
    ctx = current()
    ctx.allow(Scope.ADMIN, *body.namespaces)
    if not body.namespaces and not ctx.principal.allows_all:
        raise Forbidden("this API key is limited to some namespaces: name them in `namespaces`")
    launcher = ctx.services.dream_launcher
    if launcher is None:
        raise NotConfigured(
            "this deployment runs dreaming synchronously: use POST /v1/admin/dream or `agent-memory dream` "
            "(in AWS, enable schedules.dreaming.on_demand in cdk.json)"
        )
    execution = launcher.start(ctx.principal.tenant, body.namespaces)
    return DreamStarted(execution=execution, namespaces=body.namespaces)


def _service(ctx: RequestContext) -> DreamingService:
    service = getattr(ctx.services, "dreaming", None)
    from ...domain.dreaming.sweep import DreamingService

    if not isinstance(service, DreamingService):
        raise NotConfigured("dreaming is not configured on this deployment")
    return service


def _run_out(report: DreamReport, explain: int) -> DreamRun:
    candidates = []
    for outcome in report.outcomes[:explain]:
        candidate = outcome.as_dict()
        candidate["gates"] = {gate.name: gate.as_dict() for gate in outcome.gates}  # values and thresholds
        candidates.append(CandidateOut.model_validate(candidate))
    return DreamRun(
        namespace=report.namespace,
        day=report.day,
        run_id=report.run_id,
        dry_run=report.dry_run,
        status=report.status,
        summary=report.summary,
        workload=report.workload,
        themes=report.themes,
        candidates=candidates,
    )
