"""What the CDK app needs to deploy one workflow, declared beside its definition in `<name>_asl.py`: the
state machine's definition, the function that runs its tasks, its per-tenant schedules, its alarm and who
starts it. `infra/constructs/workflow.py` builds any of them; the runtime half of the declaration (the ARN
variable, the host) is `agent_memory.settings.workflows`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from agent_memory.settings.workflows import Workflow

from ..config import DeploymentConfig, TenantConfig


class Definition(Protocol):
    def __call__(
        self, function_arn: str, /, *, partition: str, config: DeploymentConfig, task_timeout_seconds: int
    ) -> str:
        """The state machine's ASL (JSON) with `function_arn` as every task's target."""
        ...


class ScheduleSettings(Protocol):
    @property
    def expression(self) -> str: ...

    @property
    def enabled(self) -> bool: ...


@dataclass(frozen=True)
class Schedules:
    """One EventBridge schedule per configured tenant, retried then dead-lettered."""

    config: Callable[[DeploymentConfig], ScheduleSettings]
    retry_attempts: int
    max_event_age_hours: int
    what: str
    """Names the schedules in their dead-letter queue's cdk-nag acknowledgment."""
    role_description: str
    description: Callable[[TenantConfig], str]
    input: Callable[[TenantConfig], Mapping[str, Any]]


@dataclass(frozen=True)
class FailedAlarm:
    construct_id: str
    description: str


@dataclass(frozen=True)
class WorkflowSpec:
    runtime: Workflow
    construct_id: str
    definition: Definition
    distributed_map: bool = False
    """Each item a child execution (workflows/_asl.py paged_sweep): the role may start its own executions."""
    schedules: Schedules | None = None
    alarm: FailedAlarm | None = None
    start_sid: str | None = None
    """The statement id of the start grant of the functions that start it (the runtime's ARN variable)."""
    started_on_demand: Callable[[DeploymentConfig], bool] = lambda config: True
    """Whether the API function may start it in this deployment (it gets the grant and the ARN)."""
