"""The skills curator's tasks, run by the dreaming function (`handlers/dreaming.py` dispatches them) for the
curator state machine (`workflows/curator_asl.py`), started weekly per tenant by EventBridge Scheduler.

- curator_targets `{"input": {"tenants"?: [...], "namespaces"?: [...]}, "cursor"?: n}` → `{"targets": [{"tenant",
  "namespace"}], "next_cursor": m | null, "day": null}` (one page of at most `PAGE_TARGETS`). Tenants: the input's, else AGENT_MEMORY_CURATOR_TENANTS, else AGENT_MEMORY_TENANTS.
  Namespaces: the input's, else every namespace of the tenant holding a skill.
- curate `{"target": {"tenant", "namespace", "dry_run"?}}` → `{"summary": {...}}` (a real run is idempotent per
  day: a retried task returns the recorded run).

Domain errors propagate with their class name as the Step Functions error. The service is the dreaming
function's `wiring/process.py` `WORKER.curator`, built lazily (`configure` replaces it in tests).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..domain.skills.curator import CuratorService
from ..settings.handlers import get_handler_settings
from ..settings.skills import get_curator_settings
from ..wiring import process
from ._runtime import Lazy, targets_input, targets_page
from .paging import MAX_SWEEP_TARGETS, PAGE_TARGETS
from .payloads import CurateEvent, parse

TARGETS_MAX = MAX_SWEEP_TARGETS
"""Namespaces per execution at most; each page of `PAGE_TARGETS` runs as one Distributed Map."""
PAGE_MAX_BYTES = 250_000
"""A page's JSON at most, within Step Functions' 256 KiB state limit."""


_service: Lazy[CuratorService] = Lazy(lambda: process.WORKER().curator)


def configure(service: CuratorService | None) -> None:
    """Use `service` (tests); `configure(None)` restores the default (the worker graph's curator)."""
    _service.set(service)


def curator_targets_task(event: dict[str, Any]) -> dict[str, Any]:
    _, tenants, only = targets_input(
        event,
        get_curator_settings().tenants or get_handler_settings().tenants,
        what="curate",
        tenants_variable="AGENT_MEMORY_CURATOR_TENANTS",
    )
    targets = [
        {"tenant": tenant, "namespace": namespace}
        for tenant in tenants
        for namespace in (only or _service().namespaces(tenant))
    ]
    page = targets_page(
        event,
        targets,
        max_total=TARGETS_MAX,
        page_size=PAGE_TARGETS,
        max_bytes=PAGE_MAX_BYTES,
        what="namespaces",
    )
    # `day` is the dreaming sweep's field of the shared paged-sweep states; the curator has none.
    return {"targets": page.targets, "next_cursor": page.next_cursor, "day": None}


def curate_task(event: dict[str, Any]) -> dict[str, Any]:
    target = parse(CurateEvent, event, "curate").target
    report = _service().run(target.tenant, target.namespace, dry_run=target.dry_run)
    return {
        "summary": {**report.summary, "status": report.status, "run_id": report.run_id, "day": report.day}
    }


TASKS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "curator_targets": curator_targets_task,
    "curate": curate_task,
}
