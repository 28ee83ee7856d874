"""Ports of the jobs wing: where job records are kept, and what runs them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from .model import Job


class JobStore(Protocol):
    def save(self, job: Job) -> None: ...

    def get(self, tenant: str, job_id: str) -> Job | None: ...

    def delete(self, tenant: str, job_id: str) -> None: ...

    def unfinished(self) -> list[Job]:
        """Jobs still `queued` or `running` (after a restart: none of them is running any more)."""
        ...

    def prune(self, finished_before: datetime) -> int:
        """Forget finished jobs older than this; how many were removed."""
        ...


class JobRunner(Protocol):
    def submit(self, tenant: str, task: Callable[[], None]) -> None:
        """Queue `task` (fairly among tenants); `JobsBusy` when the tenant has too many jobs queued."""
        ...

    def idle(self) -> bool:
        """Nothing queued and nothing running."""
        ...
