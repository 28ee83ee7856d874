"""Scheduled jobs (EventBridge Scheduler → Lambda): the forgetting job archives decayed memories of each
configured tenant. Archived memories stay restorable; nothing is deleted."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from . import initialization

with initialization():  # the service's own modules: see initialization()
    from ..settings.handlers import get_handler_settings
    from ..wiring import process
    from ._runtime import powertools, tenants_of

logger, tracer, metrics = powertools()
memory = process.JOBS
"""The memory service (`wiring.aws.build_jobs`), built by the first run."""


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def archive_decayed_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """The schedule's input names the tenant(s) (`tenants` or `tenant`); AGENT_MEMORY_TENANTS is the fallback.
    An invalid tenant id refuses the whole run (ValidationFailed) before anything is archived."""
    tenants = tenants_of(event, get_handler_settings().tenants)
    service = memory()
    dry_run = bool(event.get("dry_run", False))
    summary: dict[str, Any] = {}
    for tenant in tenants:
        report = service.archive_decayed(
            tenant, event.get("namespace"), actor="job:archive-decayed", dry_run=dry_run
        )
        summary[tenant] = {"examined": report.examined, "archived": len(report.archived)}
        metrics.add_metric(name="MemoriesArchivedByDecay", unit=MetricUnit.Count, value=len(report.archived))
        logger.info("decay job done", extra={"tenant": tenant, **summary[tenant], "dry_run": dry_run})
    return {"dry_run": dry_run, "tenants": summary}
