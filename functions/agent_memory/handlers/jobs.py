"""Scheduled jobs (EventBridge Scheduler → Lambda): the forgetting job archives decayed memories of each
configured tenant. Archived memories stay restorable; nothing is deleted."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from ..domain.records import is_valid_tenant
from ._runtime import TRACED_LIBRARIES, LazyServices

logger = Logger()
tracer = Tracer(patch_modules=TRACED_LIBRARIES)
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "AgentMemory"))
services = LazyServices()


def _tenants(event: dict[str, Any]) -> list[str]:
    """The schedule's input names the tenant(s); AGENT_MEMORY_TENANTS (comma-separated) is the fallback."""
    raw = event.get("tenants") or ([event["tenant"]] if event.get("tenant") else None)
    tenants = raw or [t for t in os.environ.get("AGENT_MEMORY_TENANTS", "").split(",") if t]
    invalid = [t for t in tenants if not is_valid_tenant(t)]
    if invalid:
        raise ValueError(f"invalid tenant ids in the job input: {invalid}")
    return tenants


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def archive_decayed_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    memory = services().memory
    dry_run = bool(event.get("dry_run", False))
    summary: dict[str, Any] = {}
    for tenant in _tenants(event):
        report = memory.archive_decayed(
            tenant, event.get("namespace"), actor="job:archive-decayed", dry_run=dry_run
        )
        summary[tenant] = {"examined": report.examined, "archived": len(report.archived)}
        metrics.add_metric(name="MemoriesArchivedByDecay", unit=MetricUnit.Count, value=len(report.archived))
        logger.info("decay job done", extra={"tenant": tenant, **summary[tenant], "dry_run": dry_run})
    return {"dry_run": dry_run, "tenants": summary}
