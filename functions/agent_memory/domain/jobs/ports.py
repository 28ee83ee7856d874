"""Ports of the jobs wing: where job records are kept, and what runs them."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from .model import Job


class JobStore(Protocol):
    def save(self, job: Job, payload: str | None = None) -> None:
        """Insert or update the job; `payload` (what it is to do, JSON) is kept until it finishes."""
        ...

    def claim(self, job: Job, *, lease_expired_at: datetime | None = None) -> bool:
        """Save `job` (now `running`) only if its stored state is still `queued` (or, with `lease_expired_at`,
        `running` under a lease that ended before that moment: its invocation is gone): True when this caller
        got it (another worker, a purge or a restart may have taken it first)."""
        ...

    def get(self, tenant: str, job_id: str) -> Job | None: ...

    def payload(self, tenant: str, job_id: str) -> str | None: ...

    def delete(self, tenant: str, job_id: str) -> None: ...

    def unfinished(self) -> list[Job]:
        """Jobs still `queued` or `running` (after a restart: none of them is running any more)."""
        ...

    def queued(self, tenant: str | None = None) -> list[Job]:
        """Jobs waiting to run, of one tenant or of all, oldest first."""
        ...

    def prune(self, finished_before: datetime) -> int:
        """Forget finished jobs older than this; how many were removed."""
        ...


class JobRunner(Protocol):
    def submit(self, job: Job) -> None:
        """A job was queued (saved `queued` in the store): get a worker to it."""
        ...

    def idle(self) -> bool:
        """Nothing queued and nothing running."""
        ...

    def start(self) -> None:
        """Get the workers ready before the first job (a server at start); idempotent."""
        ...
