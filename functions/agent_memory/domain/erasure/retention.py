"""What a purge cannot erase at once on the AWS runtime, and for how long it stays (the windows come from the
deployment's `retention` configuration, infra/config.py `RetentionConfig`, passed to the functions as
`AGENT_MEMORY_ERASURE_RETENTION`). Every purge plan lists them (`PurgePlan.retained`); docs/security.md
explains each."""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field

from ..model import Model
from .model import Retention


class RetentionWindows(Model):
    """The deployment's retention windows, in days (defaults: infra/config.py `RetentionConfig`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    point_in_time_recovery_days: Annotated[int, Field(ge=1, le=35)] = 7
    noncurrent_file_version_days: Annotated[int, Field(ge=1)] = 30
    log_days: Annotated[int, Field(ge=1)] = 30
    access_log_days: Annotated[int, Field(ge=1)] = 90


def aws_retention(windows: RetentionWindows) -> list[Retention]:
    return [
        Retention(
            store="dynamodb_point_in_time_recovery",
            days=windows.point_in_time_recovery_days,
            note="every table's continuous backups keep purged items restorable until the window passes",
        ),
        Retention(
            store="memory_file_versions",
            days=windows.noncurrent_file_version_days,
            note="the versioned memory bucket keeps an overwritten or deleted file's previous version until "
            "its noncurrent-version expiration",
        ),
        Retention(
            store="cloudwatch_logs",
            days=windows.log_days,
            note="function logs hold ids, counts and codes, never content (by design)",
        ),
        Retention(
            store="api_access_logs",
            days=windows.access_log_days,
            note="request paths and ids only (no bodies): a record id in a path stays until expiry",
        ),
    ]
