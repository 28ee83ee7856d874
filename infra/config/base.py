"""What every part of the deployment config shares: the base model (unknown keys refused), the error a bad
value raises, and the checks of time zones, schedule expressions, ids and names."""

from __future__ import annotations

import re
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict

LOG_RETENTION_DAYS = (
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
    2192,
    2557,
    2922,
    3288,
    3653,
)
"""The only retention periods CloudWatch Logs accepts."""

# EventBridge Scheduler expressions: cron with six fields, or rate(<n> <unit>).
CRON_RE = re.compile(r"^cron\(\S+( \S+){5}\)$")
RATE_RE = re.compile(r"^rate\([1-9][0-9]* (minute|minutes|hour|hours|day|days)\)$")
MODEL_ID_RE = re.compile(r"^[a-z0-9][a-z0-9.:_-]{2,127}$")
STACK_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,127}$")
ACCOUNT_RE = re.compile(r"^[0-9]{12}$")
REGION_RE = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9]$")
METADATA_KEY_RE = re.compile(r"^[A-Za-z0-9_-]{1,63}$")
EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class ConfigError(ValueError):
    """The cdk.json context is invalid. The message lists every bad key and what is allowed."""


def check_time_zone(value: str) -> str:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown IANA time zone {value!r} (e.g. 'UTC', 'Europe/Berlin')") from exc
    return value


class ConfigModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def check_schedule_expression(value: str) -> str:
    if not (CRON_RE.match(value) or RATE_RE.match(value)):
        raise ValueError(
            f"{value!r} is not an EventBridge Scheduler expression: use 'cron(m h dom mon dow year)' "
            "with six fields, e.g. 'cron(15 3 * * ? *)', or 'rate(1 day)'"
        )
    return value
