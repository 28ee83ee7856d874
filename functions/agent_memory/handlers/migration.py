"""Lambda entry point of the embedding backfill state machine (`workflows/migration_asl.py`).

`run_pages` `{"tenant", "migration_id"}` → `{"state", "pages", "records_seen", "dead_letters"}`: runs backfill
pages from the migration's checkpoint until the migration leaves `backfilling` (the last page verifies) or the
invocation's time is nearly spent (a page is never started with less than `RESERVE_MS` left), and emits the
`MigrationRecordsBackfilled` and `MigrationDeadLetters` metrics (the stack alarms on the latter). The service is
`wiring/process.py` `BACKFILL` (`wiring.aws.build_backfill`), built on the first call (`configure` replaces it
in tests)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from . import initialization, request_scoped

with initialization():
    from ..domain.errors import ValidationFailed
    from ..domain.migration.model import MigrationState
    from ..domain.migration.service import MigrationService
    from ..wiring import process
    from ._runtime import powertools
    from .payloads import RunPagesEvent, parse

logger, tracer, metrics = powertools("migration")

RESERVE_MS = 180_000
"""Time kept free at the end of an invocation: one page (500 records at the slowest budget) fits in it."""


_service = process.BACKFILL


def configure(factory: Callable[[], MigrationService] | None) -> None:
    """Use `factory()` as the service (tests); `configure(None)` restores `wiring.aws.build_backfill`."""
    _service.set(factory() if factory else None)


def run_pages(event: dict[str, Any], remaining_ms: Callable[[], int]) -> dict[str, Any]:
    request = parse(RunPagesEvent, event, "run_pages")
    tenant, migration_id = request.tenant, request.migration_id
    service = _service()
    before = service.get(tenant)
    migration, pages = before, 0
    while migration.state is MigrationState.BACKFILLING and (pages == 0 or remaining_ms() > RESERVE_MS):
        migration = service.run_page_retrying(tenant, migration_id)
        pages += 1
    dead = service.routing.store.count_dead_letters(tenant, migration_id)
    written = migration.progress.written - before.progress.written
    metrics.add_metric(name="MigrationRecordsBackfilled", unit=MetricUnit.Count, value=max(0, written))
    metrics.add_metric(name="MigrationDeadLetters", unit=MetricUnit.Count, value=dead)
    logger.info(
        "backfill pages run",
        extra={"tenant": tenant, "migration": migration_id, "pages": pages, "state": migration.state.value},
    )
    return {
        "state": migration.state.value,
        "pages": pages,
        "records_seen": migration.progress.records_seen,
        "dead_letters": dead,
    }


@request_scoped
@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    task = event.get("task") if isinstance(event, dict) else None
    if task != "run_pages":
        raise ValidationFailed(f"unknown migration task {task!r}; expected run_pages")
    return run_pages(event, context.get_remaining_time_in_millis)
