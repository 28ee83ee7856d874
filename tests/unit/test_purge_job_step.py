"""The local purge job (api/jobs.purge_work) repeats a step that lost its plan write to the request noting the
job's id on the plan, instead of failing the purge with 409."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from agent_memory.api.jobs import purge_work
from agent_memory.domain.erasure.model import PurgeState
from agent_memory.domain.errors import ConcurrentModification
from agent_memory.domain.identity import Principal, Scope


class RacedErasure:
    """run_step loses its save `losses` times (another writer bumped the plan), then completes the plan."""

    def __init__(self, losses: int) -> None:
        self.losses, self.calls = losses, 0

    def status(self, tenant: str, plan_id: str) -> Any:
        return SimpleNamespace(id=plan_id, state=PurgeState.EXECUTING)

    def run_step(self, tenant: str, plan_id: str) -> Any:
        self.calls += 1
        if self.calls <= self.losses:
            raise ConcurrentModification(f"purge plan {plan_id} changed meanwhile", plan_id=plan_id)
        return SimpleNamespace(id=plan_id, state=PurgeState.COMPLETED)


def _work(erasure: RacedErasure) -> Any:
    principal = Principal("acme", ("*",), frozenset({Scope.PURGE}), "system-purge")
    services = SimpleNamespace(erasure=erasure)
    return purge_work(services, principal, '{"plan_id": "purge_1"}', fence=None)  # type: ignore[arg-type]


def test_a_step_that_lost_its_write_once_is_repeated_and_the_purge_completes() -> None:
    erasure = RacedErasure(losses=1)
    assert _work(erasure)(lambda done, total: None) == {"plan_id": "purge_1", "state": "completed"}
    assert erasure.calls == 2


def test_a_plan_that_keeps_changing_ends_with_one_clear_error() -> None:
    erasure = RacedErasure(losses=100)
    with pytest.raises(ConcurrentModification, match="execute it again to resume"):
        _work(erasure)(lambda done, total: None)
