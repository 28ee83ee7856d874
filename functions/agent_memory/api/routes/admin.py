"""/v1 stats and maintenance routes."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from ...domain.errors import Forbidden
from ...domain.identity import Scope
from ..context import RequestContext, current
from ..models import DecayRequest, DecayResponse, RecallLatencyOut, StatsResponse

router = Router()


@router.get("/stats", summary="Counts by status/tier/type and memory-file usage against caps", tags=["admin"])
def stats(namespace: Annotated[str, Query(max_length=520)]) -> StatsResponse:
    ctx = current()
    ctx.allow(Scope.READ, namespace)
    counts = ctx.services.memory.counts(ctx.principal.tenant, namespace)
    usage = ctx.services.files.usage(ctx.principal.tenant, namespace)
    return StatsResponse(
        namespace=namespace,
        by_status=counts.by_status,
        by_tier=counts.by_tier,
        by_type=counts.by_type,
        files=usage,
        recall_latency=_recall_latency(ctx, namespace),
    )


def _recall_latency(ctx: RequestContext, namespace: str) -> RecallLatencyOut | None:
    window = ctx.services.recall_latency
    summary = window.summary(ctx.principal.tenant, namespace) if window is not None else None
    return RecallLatencyOut.model_validate(summary) if summary is not None else None


@router.post("/admin/archive-decayed", summary="Run the forgetting job (admin scope)", tags=["admin"])
def archive_decayed(body: DecayRequest) -> DecayResponse:
    ctx = current()
    ctx.allow(Scope.ADMIN, *([body.namespace] if body.namespace else []))
    if body.namespace is None and not ctx.principal.allows_all:
        raise Forbidden("this API key is limited to some namespaces: name one in `namespace`")
    report = ctx.services.memory.archive_decayed(
        ctx.principal.tenant, body.namespace, actor=ctx.principal.actor, dry_run=body.dry_run
    )
    return DecayResponse(dry_run=report.dry_run, examined=report.examined, archived=report.archived)
