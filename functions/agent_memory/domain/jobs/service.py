"""JobService: accept long work as a job (202), keep it, its progress and its outcome in the `JobStore`, and
show it only to the tenant and API key that submitted it.

A job is a description, not a closure: its kind and a payload (JSON, what the route was asked) saved with it,
so that another process can run it. The request process `submit`s; a job worker (the local server's separate
process, job_worker.py) takes the queued jobs tenants in turn (`run_next`) and runs each through the
executor the runtime bound (`bind`): `(job, payload) -> work`, the work being the route's synchronous path
with a `progress(done, total)` callback, which may also raise (the purge fence) to stop the job between
chunks."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, get_args

from ..errors import DomainError, Misconfigured, NotFound, RateLimited
from ..ports import Clock
from .model import FINISHED, Job, JobError, JobKind, JobStatus
from .ports import JobRunner, JobStore

logger = logging.getLogger(__name__)

Progress = Callable[[int, int | None], None]
Work = Callable[[Progress], dict[str, Any]]
Executor = Callable[[Job, str], Work]
"""(the job, its payload) -> the work that runs it; raising a DomainError refuses the job (it fails)."""

RETENTION = timedelta(days=7)
"""Finished jobs are kept this long, then forgotten (what they wrote stays, of course)."""
INTERRUPTED = (
    "the server stopped before this job finished; what it wrote before stays written. Submit it again "
    "(an import skips the items it already imported)"
)
LOST = (
    "this job's invocations all ended without finishing it (Lambda's retries failed, or its event waited too "
    "long and went to the dead-letter queue); what it wrote before stays written. Submit it again (an import "
    "skips the items it already imported)"
)
WORKER_LOST = (
    "the job worker stopped (exit code {code}) while running this job; what it wrote before stays written. "
    "The worker was restarted: submit the job again (an import skips the items it already imported)"
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
        max_queued_per_tenant: int = 64,
        retry_after_seconds: int = 5,
        new_id: Callable[[], str] | None = None,
        kinds: frozenset[JobKind] = frozenset(get_args(JobKind)),
        lost_after: timedelta | None = None,
    ) -> None:
        self._store = store
        self._runner = runner
        self._clock = clock
        self.batch_threshold = batch_threshold
        """A memory batch of more items than this runs as a job; smaller ones stay synchronous."""
        self._max_queued = max_queued_per_tenant
        self._retry_after = retry_after_seconds
        self._new_id = new_id or (lambda: "job_" + uuid.uuid4().hex[:24])
        self.kinds = kinds
        """The kinds this runtime runs as jobs (AWS: imports and batches; dream runs and purges have their
        Step Functions workflows there)."""
        self._lost_after = lost_after
        """An unfinished job older than this runs nowhere any more (`JobConfig.lost_after_seconds`)."""
        self._lock = threading.Lock()
        self._executor: Executor | None = None
        self._turns: dict[str, int] = {}  # tenant -> when it was last served (worker side)

    def bind(self, executor: Executor) -> None:
        """What runs a job of each kind (the runtime's services are built after this service)."""
        self._executor = executor

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
        payload: str,
        *,
        total: int | None = None,
    ) -> Job:
        """Queue a job (its `payload`: what the worker's executor needs, JSON); `JobsBusy` when the tenant
        already has `max_queued_per_tenant` jobs waiting."""
        if kind not in self.kinds:
            raise Misconfigured(f"jobs of kind {kind!r} do not run as jobs on this runtime")
        job = Job(
            id=self._new_id(),
            tenant=tenant,
            key_id=key_id,
            kind=kind,
            namespaces=sorted(set(namespaces)),
            created_at=self._clock.now(),
        )
        job.progress.total = total
        with self._lock:
            if len(self._store.queued(tenant)) >= self._max_queued:
                raise self._busy()
            self._store.save(job, payload)
        try:
            self._runner.submit(job)
        except DomainError as error:  # no worker got it (AWS: the invoke failed): it must not wait forever
            self._finish(job, error=_job_error(error))
            raise
        return job

    def _busy(self) -> JobsBusy:
        return JobsBusy(
            f"this tenant already has {self._max_queued} jobs waiting; retry after {self._retry_after} s, "
            "once some have finished (GET /v1/jobs/{id})",
            limit=self._max_queued,
            retry_after_seconds=self._retry_after,
        )

    def start_workers(self) -> None:
        """Start the runtime's job workers now rather than with the first job (the server, at start: the
        first import then does not wait for a worker to load its embedder)."""
        self._runner.start()

    def idle(self) -> bool:
        """No job queued or running (tests and tools wait for it before they compare state)."""
        return self._runner.idle()

    def get(self, tenant: str, key_id: str, job_id: str) -> Job:
        """The job, for the key that submitted it; any other key (or tenant) gets 404, as for a missing job."""
        job = self._store.get(tenant, job_id)
        if job is None or job.key_id != key_id:
            raise NotFound(f"no job with id {job_id[:60]!r}")
        if self._is_lost(job):
            self._finish(job, error=JobError(error="lost", message=LOST))
        return job

    def _is_lost(self, job: Job) -> bool:
        """Unfinished past `lost_after` since it was accepted: no invocation can still be running it."""
        if self._lost_after is None or job.status in FINISHED:
            return False
        return self._clock.now() - job.created_at > self._lost_after

    # ------------------------------------------------------------------ the worker's side

    def run_next(self, worker: int) -> Job | None:
        """Claim the queued job whose turn it is and run it to its end (as worker `worker`); None when none
        is waiting. Turns: the tenant served longest ago (or never) goes first, its oldest job; so one
        tenant's sixteen batches do not make another tenant's one import wait behind all of them."""
        while True:
            waiting = self._store.queued()
            if not waiting:
                return None
            oldest: dict[str, Job] = {}
            for job in waiting:
                oldest.setdefault(job.tenant, job)
            job = min(oldest.values(), key=lambda j: (self._turns.get(j.tenant, -1), j.created_at))
            job.status, job.started_at, job.worker = JobStatus.RUNNING, self._clock.now(), worker
            if self._store.claim(job):  # else another worker (or a purge) took it: look again
                self._turns[job.tenant] = max(self._turns.values(), default=0) + 1
                self._execute(job)
                return job

    def run(self, tenant: str, job_id: str, lease: timedelta) -> Job | None:
        """Run one named job to its end (a runtime that hands each job its own invocation: the AWS job
        function), holding it for `lease` (the invocation's time left). None when there is nothing to do: the
        job is gone or finished, or another invocation holds it under a live lease (a duplicate event). A
        retried invocation (the first timed out or crashed) claims it again once the lease is over and runs it
        again: an import skips the items it already imported, a batch's repeated items merge."""
        job = self._store.get(tenant, job_id)
        if job is None or job.status in FINISHED:
            return None
        now = self._clock.now()
        job.status, job.started_at, job.lease_until = JobStatus.RUNNING, now, now + lease
        if not self._store.claim(job, lease_expired_at=now):
            return None
        self._execute(job)
        return job

    def release(self, tenant: str, job_id: str) -> None:
        """The invocation running this job is failing on an error of its own (not the job's): end its lease
        now, so Lambda's retry of the event may claim the job at once."""
        job = self._store.get(tenant, job_id)
        if job is not None and job.status is JobStatus.RUNNING:
            job.lease_until = self._clock.now() - timedelta(microseconds=1)
            self._save(job)

    def fail_running(self, worker: int, exit_code: int | None) -> int:
        """Worker `worker` died: its running jobs failed (`worker_lost`). Returns how many."""
        lost = [
            job
            for job in self._store.unfinished()
            if job.status is JobStatus.RUNNING and job.worker == worker
        ]
        message = WORKER_LOST.format(code=exit_code)
        for job in lost:
            self._finish(job, error=JobError(error="worker_lost", message=message))
        return len(lost)

    def _execute(self, job: Job) -> None:
        payload = self._store.payload(job.tenant, job.id)
        try:
            if self._executor is None:
                raise Misconfigured("no job executor is bound on this runtime")
            if payload is None:
                raise NotFound("the job's request is gone (erased by a purge)")
            work = self._executor(job, payload)
        except DomainError as error:
            self._finish(job, error=_job_error(error))
            return
        self._run(job, work)

    def _run(self, job: Job, work: Work) -> None:
        def progress(done: int, total: int | None) -> None:
            job.progress.done = done
            if total is not None:
                job.progress.total = total
            self._save(job)

        try:
            result = work(progress)
        except DomainError as error:
            self._finish(job, error=_job_error(error))
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
            if current is None and job.status is not JobStatus.QUEUED:
                return  # erased (a purge) while it ran: never write it back
            if current is not None and current.status in FINISHED and job.status not in FINISHED:
                return  # never move a finished job back
            self._store.save(job)


def _job_error(error: DomainError) -> JobError:
    return JobError(error=error.code, message=error.message, details=_plain(error.details))


def _plain(details: dict[str, Any]) -> dict[str, Any]:
    return {
        key: value if isinstance(value, str | int | float | bool | list | None) else str(value)
        for key, value in details.items()
    }
