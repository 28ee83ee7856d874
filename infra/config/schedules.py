"""When the jobs run: the decay job, the nightly dreaming sweep and the weekly skills curator."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field, field_validator, model_validator

from .base import ConfigModel, check_schedule_expression, check_time_zone


class ScheduleConfig(ConfigModel):
    expression: str
    time_zone: str = "UTC"
    enabled: bool = True

    @field_validator("time_zone")
    @classmethod
    def _time_zone(cls, value: str) -> str:
        return check_time_zone(value)

    @field_validator("expression")
    @classmethod
    def _expression(cls, value: str) -> str:
        return check_schedule_expression(value)


class DreamingScheduleConfig(ConfigModel):
    """The nightly dreaming sweep: one schedule per configured tenant, evaluated in that tenant's
    `time_zone` (so there is no time zone here)."""

    expression: str = "cron(0 3 * * ? *)"
    enabled: bool = True
    max_concurrency: Annotated[int, Field(ge=1, le=40)] = 4
    """Namespaces swept in parallel per execution (the state machine's Map)."""
    model_id: str | None = None
    """Bedrock model (or inference profile) for the LLM extraction strategies of the Light phase; unset:
    the rule-based extractor only. Select the strategy with AGENT_MEMORY_DREAMING_CONFIG's `extractor`."""
    on_demand: bool = False
    """Let `POST /v1/admin/dream/start` start the state machine. Needs the Step Functions interface endpoint
    (added automatically; about $14.60/month in 2 AZs), which is why it is off by default."""

    @model_validator(mode="before")
    @classmethod
    def _no_time_zone(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "time_zone" in data:
            raise ValueError(
                "has no 'time_zone': the sweep runs in each tenant's own time zone (tenants[].time_zone)"
            )
        return data

    @field_validator("expression")
    @classmethod
    def _expression(cls, value: str) -> str:
        return check_schedule_expression(value)


class CuratorScheduleConfig(ConfigModel):
    """The skills curator: one schedule per configured tenant (weekly by default), evaluated in that tenant's
    `time_zone`. Its rules' numbers are AGENT_MEMORY_CURATOR_CONFIG (domain/skills/config.py)."""

    expression: str = "cron(0 4 ? * SUN *)"
    enabled: bool = True
    max_concurrency: Annotated[int, Field(ge=1, le=40)] = 4
    """Namespaces curated in parallel per execution (the state machine's Map)."""
    model_id: str | None = None
    """Bedrock model (or inference profile) for the optional LLM review (merge/improve proposals); unset:
    rule path only. A text model of its own, never the chat model's prompt cache."""

    @field_validator("expression")
    @classmethod
    def _expression(cls, value: str) -> str:
        return check_schedule_expression(value)


class SchedulesConfig(ConfigModel):
    decay: ScheduleConfig = ScheduleConfig(expression="cron(15 3 * * ? *)")
    """The forgetting job (archive records whose strength fell below the threshold)."""
    dreaming: DreamingScheduleConfig = DreamingScheduleConfig()
    """The dreaming sweep (Light -> REM -> Deep consolidation), started per tenant."""
    curator: CuratorScheduleConfig = CuratorScheduleConfig()
    """The skills curator (active -> stale -> archived for agent-written skills), started weekly per tenant."""
