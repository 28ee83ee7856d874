"""The tenants a deployment is created with (an index and schedules each)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from agent_memory.domain.records import is_valid_tenant

from .base import ConfigModel, check_time_zone


class TenantConfig(ConfigModel):
    """A tenant known at deploy time: scheduled jobs cover it, and CloudFormation creates its index."""

    id: str
    display_name: Annotated[str, Field(min_length=1, max_length=100)]
    time_zone: str = "UTC"
    create_index: bool = True
    """False for a tenant onboarded with `python -m infra.onboard` (its index exists outside CloudFormation):
    listed here only so scheduled jobs include it."""

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not is_valid_tenant(value):
            raise ValueError(
                f"tenant id {value!r} is invalid: 3-40 characters of a-z, 0-9 and '-', "
                "starting and ending with a letter or digit"
            )
        return value

    @field_validator("time_zone")
    @classmethod
    def _time_zone(cls, value: str) -> str:
        return check_time_zone(value)
