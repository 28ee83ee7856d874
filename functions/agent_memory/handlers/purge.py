"""The purge workflow's task (`workflows/purge_asl.py`), run by the dreaming function (`handlers/dreaming.py`
dispatches `purge_step` here): `{"tenant", "plan_id"}` → `{"state", "done", "remaining"}` after one step of
the plan (or its verification). The service is the dreaming function's `wiring/process.py` `WORKER.erasure`,
built on first use and shared with the dreaming and curator tasks (`configure` replaces it in tests)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from . import initialization

with initialization():
    from ..domain.erasure.service import ErasureService
    from ..domain.errors import ValidationFailed
    from ..domain.records import is_valid_tenant
    from ..wiring import process
    from ._runtime import Lazy

_service = Lazy(lambda: process.WORKER().erasure)


def configure(factory: Callable[[], ErasureService] | None) -> None:
    """Use `factory()` as the service (tests); `configure(None)` restores the worker graph's."""
    _service.set(factory() if factory else None)


def purge_step(event: dict[str, Any]) -> dict[str, Any]:
    tenant, plan_id = event.get("tenant"), event.get("plan_id")
    if not isinstance(tenant, str) or not is_valid_tenant(tenant):
        raise ValidationFailed(f"invalid tenant id {tenant!r}")
    if not isinstance(plan_id, str) or not re.fullmatch(r"purge_[0-9a-f]{32}", plan_id):
        raise ValidationFailed(f"invalid purge plan id {plan_id!r}")
    plan = _service().run_step(tenant, plan_id)
    remaining = plan.verification.remaining if plan.verification is not None else None
    return {"state": plan.state.value, "done": list(plan.done), "remaining": remaining}


PURGE_TASKS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {"purge_step": purge_step}
