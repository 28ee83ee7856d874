"""`JobService.run` (a job per invocation, the AWS job function): it runs a named job once, leaves a job held
under a live lease alone, takes it up again after the lease or a `release`; a runner that cannot queue a job
fails it at once; a kind the runtime does not run as a job is refused."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from agent_memory.adapters.local.job_store import SqliteJobStore
from agent_memory.domain.errors import Misconfigured, UpstreamUnavailable
from agent_memory.domain.jobs.model import Job, JobStatus
from agent_memory.domain.jobs.service import JobService
from tests.conftest import FixedClock

LEASE = timedelta(minutes=15)


class Runner:
    def __init__(self, fail: bool = False) -> None:
        self.submitted: list[str] = []
        self.fail = fail

    def submit(self, job: Job) -> None:
        if self.fail:
            raise UpstreamUnavailable(
                "Lambda is unavailable or throttling during Invoke; retry in a few seconds"
            )
        self.submitted.append(job.id)

    def idle(self) -> bool:
        return False

    def start(self) -> None:
        return None


def _service(
    tmp_path: Path, runner: Runner, clock: FixedClock, **kwargs: Any
) -> tuple[JobService, list[str]]:
    runs: list[str] = []
    service = JobService(SqliteJobStore(tmp_path / "jobs.db"), runner, clock, **kwargs)

    def executor(job: Job, payload: str) -> Any:
        def work(progress: Any) -> dict[str, Any]:
            runs.append(job.id)
            progress(1, 1)
            return {"payload": payload}

        return work

    service.bind(executor)
    return service, runs


def test_a_named_job_runs_once_and_a_duplicate_event_does_nothing(tmp_path: Path) -> None:
    clock = FixedClock()
    service, runs = _service(tmp_path, Runner(), clock)
    job = service.submit("alpha", "key1", "memory_batch", ["/p"], '{"x": 1}')
    assert service.run("beta", job.id, LEASE) is None  # another tenant: no such job
    done = service.run("alpha", job.id, LEASE)
    assert done is not None and done.status is JobStatus.SUCCEEDED and runs == [job.id]
    assert service.get("alpha", "key1", job.id).result == {"payload": '{"x": 1}'}
    assert service.run("alpha", job.id, LEASE) is None and runs == [job.id]


def test_a_held_job_waits_for_its_lease_or_its_release(tmp_path: Path) -> None:
    clock = FixedClock()
    service, runs = _service(tmp_path, Runner(), clock)
    job = service.submit("alpha", "key1", "import", ["/p"], "{}")
    store = service._store
    held = store.get("alpha", job.id)
    assert held is not None
    held.status, held.lease_until = JobStatus.RUNNING, clock.now() + LEASE
    assert store.claim(held)
    assert service.run("alpha", job.id, LEASE) is None and runs == []  # another invocation holds it
    service.release("alpha", job.id)  # that invocation failed on an error of its own
    assert service.run("alpha", job.id, LEASE) is not None and runs == [job.id]


def test_a_job_no_runner_took_fails_at_once(tmp_path: Path) -> None:
    service, _ = _service(tmp_path, Runner(fail=True), FixedClock())
    with pytest.raises(UpstreamUnavailable):
        service.submit("alpha", "key1", "memory_batch", ["/p"], "{}")
    assert service._store.unfinished() == []  # failed, not left queued with no event to run it


def test_a_kind_the_runtime_does_not_run_as_a_job_is_refused(tmp_path: Path) -> None:
    service, _ = _service(tmp_path, Runner(), FixedClock(), kinds=frozenset({"import", "memory_batch"}))
    with pytest.raises(Misconfigured, match="purge"):
        service.submit("alpha", "system-purge", "purge", [], "{}")


LOST_AFTER = timedelta(hours=6, minutes=20)


@pytest.mark.parametrize("held", [False, True], ids=["queued", "running"])
def test_a_job_lambda_gave_up_on_is_failed_lost_when_read_not_running_forever(
    tmp_path: Path, held: bool
) -> None:
    clock = FixedClock()
    service, runs = _service(tmp_path, Runner(), clock, lost_after=LOST_AFTER)
    job = service.submit("alpha", "key1", "import", ["/p"], "{}")
    if held:  # an invocation claimed it, then every retry crashed (its lease long over)
        stored = service._store.get("alpha", job.id)
        assert stored is not None
        stored.status, stored.lease_until = JobStatus.RUNNING, clock.now() + LEASE
        assert service._store.claim(stored)
    clock.advance(seconds=LOST_AFTER.total_seconds())  # still within the bound: an event may yet run it
    assert service.get("alpha", "key1", job.id).status is (JobStatus.RUNNING if held else JobStatus.QUEUED)
    clock.advance(seconds=1)
    lost = service.get("alpha", "key1", job.id)
    assert lost.status is JobStatus.FAILED and lost.error is not None and lost.error.error == "lost"
    assert "submit it again" in lost.error.message.lower()
    stored = service._store.get("alpha", job.id)
    assert stored is not None and stored.status is JobStatus.FAILED  # saved: every later poll agrees
    assert service.run("alpha", job.id, LEASE) is None and runs == []  # a very late event runs nothing


def test_without_a_bound_an_old_job_stays_as_it_is(tmp_path: Path) -> None:
    clock = FixedClock()
    service, _ = _service(tmp_path, Runner(), clock)  # the local runtime: it sees a dead worker itself
    job = service.submit("alpha", "key1", "import", ["/p"], "{}")
    clock.advance(days=2)
    assert service.get("alpha", "key1", job.id).status is JobStatus.QUEUED
