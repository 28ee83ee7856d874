"""JobService: accept long work as a job (202), run it on the runtime's `JobRunner`, keep its progress and its
outcome in the `JobStore`, and show it only to the tenant and API key that submitted it.

The work itself is a callable given by the API layer (a batch's or an import's synchronous path); it gets a
`progress(done, total)` callback, which may also raise (the purge fence) to stop the job between chunks."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from ..errors import DomainError, NotFound, RateLimited
from ..ports import Clock
from .model import FINISHED, Job, JobError, JobKind, JobStatus
from .ports import JobRunner, JobStore

logger = logging.getLogger(__name__)

Progress = Callable[[int, int | None], None]
Work = Callable[[Progress], dict[str, Any]]

RETENTION = timedelta(days=7)
"""Finished jobs are kept this long, then forgotten (what they wrote stays, of course)."""
INTERRUPTED = (
    "the server stopped before this job finished; what it wrote before stays written. Submit it again "
    "(an import skips the items it already imported)"
)


class JobsBusy(RateLimited):
    """The tenant already has as many jobs waiting as the runtime queues (429)."""

    code = "too_many_jobs"


class JobService:
    def __init__(
        self,
        store: JobStore,
        runner: JobRunner,
        clock: Clock,
        *,
        batch_threshold: int = 25,
        new_id: Callable[[], str] | None = None,
    ) -> None:
        self._store = store
        self._runner = runner
        self._clock = clock
        self.batch_threshold = batch_threshold
        """A memory batch of more items than this runs as a job; smaller ones stay synchronous."""
        self._new_id = new_id or (lambda: "job_" + uuid.uuid4().hex[:24])
        self._lock = threading.Lock()

    def recover(self) -> int:
        """On start: jobs left `queued` or `running` by a stopped server are failed (they run nowhere now),
        and finished jobs past `RETENTION` are forgotten. Returns how many were failed."""
        now = self._clock.now()
        stale = self._store.unfinished()
        for job in stale:
            self._finish(job, error=JobError(error="interrupted", message=INTERRUPTED))
        self._store.prune(now - RETENTION)
        return len(stale)

    def submit(
        self,
        tenant: str,
        key_id: str,
        kind: JobKind,
        namespaces: Sequence[str],
        work: Work,
        *,
        total: int | None = None,
    ) -> Job:
        job = Job(
            id=self._new_id(),
            tenant=tenant,
            key_id=key_id,
            kind=kind,
            namespaces=sorted(set(namespaces)),
            created_at=self._clock.now(),
        )
        job.progress.total = total
        self._store.save(job)
        try:
            self._runner.submit(tenant, lambda: self._run(job, work))
        except RateLimited:
            self._store.delete(tenant, job.id)
            raise
        return job

    def idle(self) -> bool:
        """No job queued or running (tests and tools wait for it before they compare state)."""
        return self._runner.idle()

    def get(self, tenant: str, key_id: str, job_id: str) -> Job:
        """The job, for the key that submitted it; any other key (or tenant) gets 404, as for a missing job."""
        job = self._store.get(tenant, job_id)
        if job is None or job.key_id != key_id:
            raise NotFound(f"no job with id {job_id[:60]!r}")
        return job

    def _run(self, job: Job, work: Work) -> None:
        job.status = JobStatus.RUNNING
        job.started_at = self._clock.now()
        self._save(job)

        def progress(done: int, total: int | None) -> None:
            job.progress.done = done
            if total is not None:
                job.progress.total = total
            self._save(job)

        try:
            result = work(progress)
        except DomainError as error:
            self._finish(
                job, error=JobError(error=error.code, message=error.message, details=_plain(error.details))
            )
        except Exception:
            logger.exception("job %s failed", job.id)
            message = "the job failed on an unexpected error; what it wrote before stays written. Retry later"
            self._finish(job, error=JobError(error="internal_error", message=message))
        else:
            self._finish(job, result=result)

    def _finish(
        self, job: Job, *, result: dict[str, Any] | None = None, error: JobError | None = None
    ) -> None:
        job.status = JobStatus.FAILED if error is not None else JobStatus.SUCCEEDED
        job.result, job.error = result, error
        job.finished_at = self._clock.now()
        if error is None and job.progress.total is not None:
            job.progress.done = job.progress.total
        self._save(job)

    def _save(self, job: Job) -> None:
        with self._lock:
            current = self._store.get(job.tenant, job.id)
            if current is not None and current.status in FINISHED and job.status not in FINISHED:
                return  # never move a finished job back
            self._store.save(job)


def _plain(details: dict[str, Any]) -> dict[str, Any]:
    return {
        key: value if isinstance(value, str | int | float | bool | list | None) else str(value)
        for key, value in details.items()
    }
