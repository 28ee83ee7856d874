"""Lambda entry points of the dreaming state machine (`workflows/dreaming_asl.py`).

One function can serve every task (`handler` dispatches on the payload's `task`), or each task can be its own
function (`list_targets`, `light`, `rem`, `deep`, `record_failure`). Payloads:

- list_targets `{"input": {"tenants"?: [...], "time_zone"?: "Europe/Berlin", "day"?: "YYYY-MM-DD"},
  "execution": "<execution name>", "cursor"?: n, "day"?: "YYYY-MM-DD" | null}` → `{"day", "targets": [{"tenant",
  "namespace", "day", "run_id"}], "next_cursor": m | null}`: one page of at most `PAGE_TARGETS` targets and
  `TARGETS_MAX_BYTES` bytes (the state machine hands the first page's day back with every later page, so one
  execution sweeps one day).
  Tenants: the input's (`tenants` or `tenant`), else AGENT_MEMORY_DREAMING_TENANTS, else AGENT_MEMORY_TENANTS
  (comma-separated, shared with the other jobs). The sweep day is today in the given time zone
  (the scheduler starts one execution per tenant at 03:00 local time). Namespaces: configuration ∪ memory-file
  directories ∪ namespaces with short-term records. The run id is derived from the execution name, so a
  retried task re-enters its own lease.
- light `{"target": {...}}` → `{"handle": {...}, "light": {...}}`; rem/deep `{"handle": {...}}`;
  record_failure `{"target": {..., "error": {"Error", "Cause"}}}` (never raises: a failure to record a failure
  is logged and returned).

Domain errors propagate with their class name as the Step Functions error (`UpstreamUnavailable` is retried,
`SweepInProgress` goes to RecordFailure). The service is the function's `wiring/process.py` `WORKER.dreaming`
(`wiring.aws.build_worker`, shared with the curator and purge tasks), built on the first task (see
`configure` for tests).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import import_module
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from . import initialization, request_scoped

with initialization():  # the service's own modules: see initialization()
    from ..domain.dreaming.ledger import SweepHandle
    from ..domain.dreaming.sweep import DreamingService
    from ..domain.errors import DomainError, ValidationFailed
    from ..domain.records import is_valid_tenant
    from ..settings.dreaming import DreamingSettings, get_dreaming_settings
    from ..settings.handlers import get_handler_settings
    from ..settings.workflows import hosted_by
    from ..wiring import process
    from ._runtime import Lazy, powertools, targets_input, targets_page
    from .paging import PAGE_TARGETS
    from .payloads import (
        LightEvent,
        ListTargetsEvent,
        RecordFailureEvent,
        SweepHandleEvent,
        SweepInput,
        TaskError,
        parse,
    )

logger, tracer, metrics = powertools("dreaming")

ServiceFactory = Callable[[str], DreamingService]
"""tenant → the dreaming service for it. The AWS services are shared by all tenants: their record store and
vector index pick STS credentials scoped to the call's tenant, so IAM confines each sweep to its tenant."""


_settings = Lazy(get_dreaming_settings)


def _default_factory(tenant: str) -> DreamingService:
    return process.WORKER().dreaming


_factory: ServiceFactory = _default_factory
_services: dict[str, DreamingService] = {}


def configure(factory: ServiceFactory | None, settings: DreamingSettings | None = None) -> None:
    """Replace how services and settings are built (tests, other runtimes); `configure(None)` restores the
    defaults (the worker graph's dreaming service and the environment)."""
    global _factory
    _factory = factory or _default_factory
    _settings.set(settings)
    _services.clear()
    process.WORKER.set(None)


def _service(tenant: str) -> DreamingService:
    if not is_valid_tenant(tenant):
        raise ValidationFailed(f"invalid tenant id {tenant!r}")
    service = _services.get(tenant)
    if service is None:
        service = _services[tenant] = _factory(tenant)
    return service


# --------------------------------------------------------------------------- tasks


TARGETS_MAX_BYTES = 250_000
"""What one page of ListTargets' output may take: it joins the execution state (ResultPath `$.listed`), which
Step Functions caps at 262,144 bytes; the rest is margin for the state around it. A page of 1,000 targets of
realistic names takes about 150,000 bytes; longer names make a page shorter (`targets_page`)."""


def list_targets_task(event: dict[str, Any]) -> dict[str, Any]:
    settings = _settings()
    # Like the other scheduled jobs: the schedule's input names the tenant(s); configuration is the fallback.
    body, tenants, only = targets_input(
        event,
        settings.tenants or get_handler_settings().tenants,
        what="sweep",
        tenants_variable="AGENT_MEMORY_DREAMING_TENANTS",
    )
    # Every page of one execution sweeps the same day: the first page's, handed back by the state machine.
    envelope = parse(ListTargetsEvent, event, "list_targets")
    day = envelope.day or parse(SweepInput, body, "list_targets").sweep_day()
    execution = envelope.execution or f"manual-{datetime.now(UTC):%Y%m%dT%H%M%S}"
    targets: list[dict[str, str]] = []
    for tenant in tenants:
        # An on-demand start may name the namespaces to sweep; otherwise every namespace of the tenant.
        namespaces = only or _service(tenant).namespaces(tenant, settings.namespaces.get(tenant, ()))
        for namespace in namespaces:
            targets.append(
                {
                    "tenant": tenant,
                    "namespace": namespace,
                    "day": day.isoformat(),
                    "run_id": _run_id(execution, tenant, namespace),
                }
            )
    page = targets_page(
        event,
        targets,
        max_total=settings.max_targets,
        page_size=PAGE_TARGETS,
        max_bytes=TARGETS_MAX_BYTES,
        what="namespaces (AGENT_MEMORY_DREAMING_MAX_TARGETS)",
    )
    result = {"day": day.isoformat(), "targets": page.targets, "next_cursor": page.next_cursor}
    logger.info(
        "dreaming targets",
        extra={
            "tenants": len(tenants),
            "targets": len(targets),
            "page_targets": len(page.targets),
            "next_cursor": page.next_cursor,
            "day": day.isoformat(),
        },
    )
    return result


def light_task(event: dict[str, Any]) -> dict[str, Any]:
    target = parse(LightEvent, event, "light").target
    service = _service(target.tenant)
    handle = service.begin(target.tenant, target.namespace, day=target.day, run_id=target.run_id)
    light = service.light_stage(handle)
    logger.info("light", extra={**handle.to_json(), **light})
    return {"handle": handle.to_json(), "light": light}


def rem_task(event: dict[str, Any]) -> dict[str, Any]:
    handle = SweepHandle.from_json(parse(SweepHandleEvent, event, "rem").handle)
    rem = _service(handle.tenant).rem_stage(handle)
    logger.info("rem", extra={**handle.to_json(), **rem})
    return {"rem": rem}


def deep_task(event: dict[str, Any]) -> dict[str, Any]:
    handle = SweepHandle.from_json(parse(SweepHandleEvent, event, "deep").handle)
    report = _service(handle.tenant).deep_stage(handle)
    summary = {**report.summary, "status": report.status, "run_id": report.run_id}
    metrics.add_metric(name="DreamCandidates", unit=MetricUnit.Count, value=summary.get("candidates", 0))
    metrics.add_metric(name="DreamPromotions", unit=MetricUnit.Count, value=len(summary.get("promoted", [])))
    metrics.flush_metrics()  # only these two tasks emit metrics, so no decorator that warns on the others
    logger.info("deep", extra={**handle.to_json(), "summary": summary})
    return {"summary": summary}


def record_failure_task(event: dict[str, Any]) -> dict[str, Any]:
    raw_target = event.get("target") if isinstance(event, dict) else None
    target: dict[str, Any] = raw_target if isinstance(raw_target, dict) else {}
    raw_error = target.get("error")
    error = TaskError.model_validate(raw_error if isinstance(raw_error, dict) else {})
    error_name, cause = error.error, error.cause
    metrics.add_metric(name="DreamFailures", unit=MetricUnit.Count, value=1)
    metrics.flush_metrics()
    logger.error(
        "dreaming sweep failed",
        extra={"tenant": target.get("tenant"), "namespace": target.get("namespace"), "error": error_name},
    )
    try:
        failed = parse(RecordFailureEvent, event, "record_failure").target
        handle = SweepHandle(
            tenant=failed.tenant,
            namespace=failed.namespace,
            day=failed.day.isoformat(),
            run_id=failed.run_id,
            as_of="",
        )
        recorded = _service(handle.tenant).record_failure(handle, error_name, cause)
    except DomainError as failure:
        logger.exception("could not record the failure")
        return {"recorded": False, "error": error_name, "reason": failure.message}
    return {"recorded": True, "error": error_name, "failed_at": recorded["failed_at"]}


TASKS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "list_targets": list_targets_task,
    "light": light_task,
    "rem": rem_task,
    "deep": deep_task,
    "record_failure": record_failure_task,
    # The task tables of the other workflows this function runs (agent_memory.workflows: the curator and the
    # purge, whose state machines run here because it mounts the files and holds the tenant role).
    **{
        name: task
        for workflow in hosted_by("dreaming")
        for name, task in import_module(f"{__package__}.{workflow.tasks}").TASKS.items()
    },
}


# --------------------------------------------------------------------------- Lambda entry points


@request_scoped
@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """One function for every task: dispatch on `event["task"]`."""
    task = event.get("task") if isinstance(event, dict) else None
    if task not in TASKS:
        raise ValidationFailed(f"unknown dreaming task {task!r}; expected one of {', '.join(TASKS)}")
    return TASKS[task](event)


def _entry(task: str) -> Callable[[dict[str, Any], LambdaContext], dict[str, Any]]:
    @request_scoped
    @logger.inject_lambda_context(clear_state=True)
    @tracer.capture_lambda_handler
    def entry(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        return TASKS[task](event)

    entry.__name__ = task
    return entry


list_targets = _entry("list_targets")
light = _entry("light")
rem = _entry("rem")
deep = _entry("deep")
record_failure = _entry("record_failure")


# --------------------------------------------------------------------------- parsing


def _run_id(execution: str, tenant: str, namespace: str) -> str:
    digest = hashlib.sha256(f"{tenant}{namespace}".encode()).hexdigest()[:12]
    return f"sfn-{execution[-60:]}-{digest}"
