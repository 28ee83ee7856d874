"""The typed payloads of the workflow tasks (Step Functions → Lambda), parsed with pydantic.

`parse(Model, event, task)` returns the model or raises `ValidationFailed` (the error name Step Functions
sees, never retried) with every field that is wrong, e.g. `invalid light payload: target.day: invalid day
'2026-13-01': use YYYY-MM-DD`. Unknown fields are ignored: the state machines add their own (`task`,
`execution`) and a newer definition may pass more."""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Annotated, Any, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from ..domain.errors import ValidationFailed
from ..domain.records import is_valid_namespace, is_valid_tenant


def _tenant(value: str) -> str:
    if not is_valid_tenant(value):
        raise ValueError(f"invalid tenant id {value!r}")
    return value


def _namespace(value: str) -> str:
    if not is_valid_namespace(value):
        raise ValueError(f"invalid namespace {value!r}: a path like /projects/billing")
    return value


def _day(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError:
            raise ValueError(f"invalid day {value!r}: use YYYY-MM-DD") from None
    return value


def _time_zone(value: Any) -> Any:
    name = value or "UTC"
    try:
        ZoneInfo(str(name))
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r} (an IANA name such as Europe/Berlin)") from None
    return str(name)


Tenant = Annotated[str, AfterValidator(_tenant)]
Namespace = Annotated[str, AfterValidator(_namespace)]
Day = Annotated[date, BeforeValidator(_day)]
Text = Annotated[str, Field(min_length=1)]


class Payload(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, strict=False)


class ListTargetsEvent(Payload):
    """ListTargets' envelope; the tenants and namespaces of its `input` are read by `_runtime.targets_input`
    (shared with the curator)."""

    day: Day | None = None
    """The first page's day, handed back with every later page so one execution sweeps one day."""
    execution: str | None = None


class SweepInput(Payload):
    """The execution input's choice of day: `day`, else today in `time_zone` (the scheduler's local 03:00)."""

    day: Day | None = None
    time_zone: Annotated[str, BeforeValidator(_time_zone)] = "UTC"

    def sweep_day(self) -> date:
        return self.day or datetime.now(ZoneInfo(self.time_zone)).date()


class SweepTarget(Payload):
    """One namespace of a dreaming sweep (a ListTargets item)."""

    tenant: Tenant
    namespace: Text
    day: Day
    run_id: Text


class LightEvent(Payload):
    target: SweepTarget


class SweepHandleEvent(Payload):
    """REM and Deep: the previous task's handle (domain/dreaming/ledger.py `SweepHandle`)."""

    handle: dict[str, Any]


class TaskError(Payload):
    """Step Functions' error output (`Catch` with `ResultPath`)."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    error: str = Field("Unknown", alias="Error")
    cause: str = Field("", alias="Cause")


class FailedTarget(SweepTarget):
    error: TaskError = Field(default_factory=lambda: TaskError.model_validate({}))


class RecordFailureEvent(Payload):
    target: FailedTarget


class CuratorTarget(Payload):
    tenant: Tenant
    namespace: Namespace
    dry_run: bool = False


class CurateEvent(Payload):
    target: CuratorTarget


class PurgeStepEvent(Payload):
    tenant: Tenant
    plan_id: Annotated[str, Field(pattern=r"^purge_[0-9a-f]{32}$")]


class RunPagesEvent(Payload):
    tenant: Tenant
    migration_id: Annotated[str, Field(pattern=r"^mig_")]


M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], event: Any, task: str) -> M:
    """`event` as `model`, or ValidationFailed naming each wrong field and what it needs."""
    if not isinstance(event, dict):
        raise ValidationFailed(f"invalid {task} payload: a JSON object is needed, got {type(event).__name__}")
    try:
        return model.model_validate(event)
    except ValidationError as error:
        problems = [_problem(item) for item in error.errors(include_url=False)]
        raise ValidationFailed(f"invalid {task} payload: {'; '.join(problems)}", task=task) from None


def _problem(item: Any) -> str:
    where = ".".join(str(part) for part in item["loc"]) or "payload"
    message = re.sub(r"^(Value|Assertion) error, ", "", str(item["msg"]))
    return f"{where}: {message}"
