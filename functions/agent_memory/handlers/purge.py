"""The purge workflow's task (`workflows/purge_asl.py`), run by the dreaming function (`handlers/dreaming.py`
dispatches `purge_step` here): `{"tenant", "plan_id"}` → `{"state", "done", "remaining"}` after one step of
the plan (or its verification). The service is the dreaming function's `wiring/process.py` `WORKER.erasure`,
built on first use and shared with the dreaming and curator tasks (`configure` replaces it in tests)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import initialization

with initialization():
    from ..domain.erasure.service import ErasureService
    from ..wiring import process
    from ._runtime import Lazy
    from .payloads import PurgeStepEvent, parse

_service = Lazy(lambda: process.WORKER().erasure)


def configure(factory: Callable[[], ErasureService] | None) -> None:
    """Use `factory()` as the service (tests); `configure(None)` restores the worker graph's."""
    _service.set(factory() if factory else None)


def purge_step(event: dict[str, Any]) -> dict[str, Any]:
    step = parse(PurgeStepEvent, event, "purge_step")
    plan = _service().run_step(step.tenant, step.plan_id)
    remaining = plan.verification.remaining if plan.verification is not None else None
    return {"state": plan.state.value, "done": list(plan.done), "remaining": remaining}


TASKS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {"purge_step": purge_step}
