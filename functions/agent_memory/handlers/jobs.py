"""Scheduled jobs (EventBridge Scheduler → Lambda): the forgetting job archives decayed memories of each
configured tenant. Archived memories stay restorable; nothing is deleted.

The same nightly run then completes the record store's namespace-tree index a bounded step at a time
(`domain/memory/index_upkeep.py`): at most `tree_index_records` records per tenant (the input's, default
`RECORDS_PER_RUN`; 0 skips it), and no new step in the last `TIME_MARGIN_MS` of the invocation. A dry run
changes nothing, so it skips the backfill too."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from . import initialization, request_scoped

with initialization():  # the service's own modules: see initialization()
    from ..domain.errors import ValidationFailed
    from ..domain.memory.index_upkeep import RECORDS_PER_RUN, IndexUpkeep
    from ..settings.handlers import get_handler_settings
    from ..wiring import process
    from ._runtime import powertools, tenants_of

logger, tracer, metrics = powertools()
graph = process.JOBS
"""The decay job's services (`wiring.aws.build_jobs`), built by the first run."""
TIME_MARGIN_MS = 60_000
"""The time a backfill step may take at most (1,000 records, about 2,000 requests) plus the log and reply."""


@request_scoped
@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def archive_decayed_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """The schedule's input names the tenant(s) (`tenants` or `tenant`); AGENT_MEMORY_TENANTS is the fallback.
    An invalid tenant id refuses the whole run (ValidationFailed) before anything is archived."""
    tenants = tenants_of(event, get_handler_settings().tenants)
    tree_records = _tree_records(event)
    services = graph()
    dry_run = bool(event.get("dry_run", False))
    summary: dict[str, Any] = {}
    for tenant in tenants:
        report = services.memory.archive_decayed(
            tenant, event.get("namespace"), actor="job:archive-decayed", dry_run=dry_run
        )
        summary[tenant] = {"examined": report.examined, "archived": len(report.archived)}
        metrics.add_metric(name="MemoriesArchivedByDecay", unit=MetricUnit.Count, value=len(report.archived))
        logger.info("decay job done", extra={"tenant": tenant, **summary[tenant], "dry_run": dry_run})
    result: dict[str, Any] = {"dry_run": dry_run, "tenants": summary}
    if services.upkeep.needed and tenants and not dry_run:
        result["tree_index"] = _complete_tree_index(services.upkeep, tenants, tree_records, context)
    return result


def _tree_records(event: dict[str, Any]) -> int:
    value = event.get("tree_index_records", RECORDS_PER_RUN)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationFailed(
            f"tree_index_records must be a whole number of records (0 skips the tree-index backfill), "
            f"not {value!r}"
        )
    return value


def _complete_tree_index(
    upkeep: IndexUpkeep, tenants: list[str], max_records: int, context: LambdaContext
) -> dict[str, Any]:
    remaining = getattr(context, "get_remaining_time_in_millis", None)

    def has_time() -> bool:
        return remaining is None or remaining() > TIME_MARGIN_MS

    done = upkeep.run(tenants, max_records=max_records, has_time=has_time)
    for tenant, step in done.items():
        logger.info("tree index backfill", extra={"tenant": tenant, **step.to_json()})
        metrics.add_metric(name="TreeIndexRecordsBackfilled", unit=MetricUnit.Count, value=step.updated)
    left = [tenant for tenant in tenants if tenant not in done or not done[tenant].complete]
    if left:
        logger.info("tree index incomplete", extra={"tenants": left})
    return {tenant: step.to_json() for tenant, step in done.items()}
