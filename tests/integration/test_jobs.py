"""Jobs on the local server (issue 29): a large batch and an import answer 202 with a job, GET /v1/jobs/{id}
follows it to `succeeded` with the synchronous body as `result`; only the submitting key of its tenant sees it;
small batches stay 200; the SDK follows a job by itself; a job stopped by a purge (executing, or executed after
the job was accepted) fails with the purge's code and writes nothing more."""

from __future__ import annotations

import base64
import json
import os
import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_memory.adapters.clock import SystemClock
from agent_memory.adapters.local.job_process import ProcessJobRunner, ThreadJobRunner
from agent_memory.adapters.local.job_store import SqliteJobStore
from agent_memory.api.jobs import JobOrder
from agent_memory.domain.erasure.model import PurgeKind, PurgeTarget
from agent_memory.domain.errors import NotFound
from agent_memory.domain.identity import Principal, Scope
from agent_memory.domain.jobs.model import Job, JobStatus
from agent_memory.domain.jobs.service import JobsBusy, JobService
from agent_memory.settings.service import Settings
from agent_memory.wiring.local import build_local, job_executor
from agent_memory_client import Client, errors
from tests.archives import memory_archive
from tests.integration.conftest import start_server

RUNTIMES: dict[str, Any] = {}
KEY_IDS: dict[str, dict[str, str]] = {}


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[tuple[str, dict[str, str]]]:
    settings = Settings(data_dir=tmp_path_factory.mktemp("jobs"), embedder="hashing")
    runtime = build_local(settings)
    created = {
        "alpha": runtime.keys.create("alpha", ["*"], ["read", "write", "admin"]),
        "alpha-other": runtime.keys.create("alpha", ["*"], ["read", "write", "admin"]),
        "beta": runtime.keys.create("beta", ["*"], ["read", "write", "admin"]),
        "alpha-purge": runtime.keys.create("alpha", ["*"], ["read", "write", "admin", "purge"]),
    }
    keys = {who: key.key for who, key in created.items()}
    uvicorn_server, thread, url = start_server(settings, runtime)
    RUNTIMES[url] = runtime
    KEY_IDS[url] = {who: key.key_id for who, key in created.items()}
    yield url, keys
    uvicorn_server.should_exit = True
    thread.join(timeout=10)


def _client(server: tuple[str, dict[str, str]], who: str) -> httpx.Client:
    url, keys = server
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {keys[who]}"}, timeout=60)


def _items(namespace: str, count: int, word: str) -> list[dict[str, Any]]:
    return [
        {"namespace": namespace, "content": f"{word} fact number {n}: the {word} service owns queue {n}"}
        for n in range(count)
    ]


def _finished(client: httpx.Client, job: dict[str, Any]) -> dict[str, Any]:
    """Polls until the job ends. No deadline of its own: the job worker runs at a lower CPU priority, and on a
    loaded host 30 s of polling ran out while it still waited for a core (a job that never ends is failed by
    pytest-timeout, pyproject.toml)."""
    while True:
        answer = client.get(job["location"])
        assert answer.status_code == 200, answer.text
        job = answer.json()
        if job["status"] in ("succeeded", "failed"):
            return job
        assert answer.headers.get("retry-after") == "1"
        time.sleep(0.05)


def test_large_batch_is_a_job_with_the_synchronous_body_as_result(server) -> None:
    with _client(server, "alpha") as client:
        answer = client.post("/v1/memories/batch", json={"items": _items("/projects/jobs", 30, "billing")})
        assert answer.status_code == 202, answer.text
        job = answer.json()
        assert answer.headers["location"] == job["location"] == f"/v1/jobs/{job['id']}"
        assert job["kind"] == "memory_batch" and job["status"] in ("queued", "running", "succeeded")
        assert job["namespaces"] == ["/projects/jobs"] and job["progress"]["total"] == 30
        done = _finished(client, job)
        assert done["status"] == "succeeded", done
        assert done["progress"] == {"done": 30, "total": 30}
        result = done["result"]
        assert len(result["results"]) == 30 and result["counts"] == {"added": 30}
        stored = client.get("/v1/memories", params={"namespace": "/projects/jobs", "limit": 100}).json()
        assert len(stored["items"]) == 30


def test_small_batch_stays_synchronous(server) -> None:
    with _client(server, "alpha") as client:
        answer = client.post("/v1/memories/batch", json={"items": _items("/projects/small", 25, "deploy")})
        assert answer.status_code == 200, answer.text
        assert answer.json()["counts"] == {"added": 25}


def test_a_job_is_seen_only_by_its_key_in_its_tenant(server) -> None:
    with _client(server, "alpha") as client:
        job = client.post("/v1/memories/batch", json={"items": _items("/projects/own", 26, "cache")}).json()
        _finished(client, job)
    for who in ("alpha-other", "beta"):
        with _client(server, who) as other:
            answer = other.get(job["location"])
            assert answer.status_code == 404, (who, answer.text)
            assert answer.json()["error"] == "not_found"
    with _client(server, "alpha") as client:
        assert client.get("/v1/jobs/job_0123456789abcdef").status_code == 404
        assert client.get("/v1/jobs/not-a-job").status_code == 404


def test_import_is_a_job_and_a_dry_run_is_not(server) -> None:
    body = {"namespace": "/projects/imported", "archive": memory_archive(40), "format": "openclaw"}
    with _client(server, "alpha") as client:
        dry = client.post("/v1/imports", json={**body, "dry_run": True})
        assert dry.status_code == 200 and dry.json()["report"]["state"] == "dry_run"
        answer = client.post("/v1/imports", json=body)
        assert answer.status_code == 202, answer.text
        done = _finished(client, answer.json())
        assert done["status"] == "succeeded", done
        report = done["result"]["report"]
        assert report["state"] == "completed" and done["progress"]["total"] == done["progress"]["done"] > 0
        assert client.get(f"/v1/imports/{report['id']}").status_code == 200
        bad = client.post(
            "/v1/imports", json={**body, "archive": base64.b64encode(b"not an archive").decode()}
        )
        assert bad.status_code in (413, 422), bad.text  # refused within the request, no job


def test_sdk_follows_the_job(server) -> None:
    url, keys = server
    with Client(url, keys["alpha"]) as sdk:
        answer = sdk.remember_batch(_items("/projects/sdk", 27, "harbor"))
        assert answer["counts"] == {"added": 27} and len(answer["results"]) == 27
        report = sdk.import_archive("/projects/sdk-import", memory_archive(5), format="openclaw")["report"]
        assert report["state"] == "completed"
        with pytest.raises(errors.NotFound):
            sdk.get_job("job_ffffffffffffffff")


# ------------------------------------------------------------------ the worker process


def test_jobs_run_in_a_separate_worker_process(server) -> None:
    url, _ = server
    with _client(server, "alpha") as client:
        job = client.post(
            "/v1/memories/batch", json={"items": _items("/projects/worker", 26, "fabric")}
        ).json()
        assert _finished(client, job)["status"] == "succeeded"
    jobs = RUNTIMES[url].services.jobs
    assert jobs is not None
    ran = jobs.get("alpha", _key_id(url, "alpha"), job["id"])
    assert ran.worker is not None and ran.worker != os.getpid()
    runner = jobs._runner
    assert isinstance(runner, ProcessJobRunner) and ran.worker in runner.worker_pids


def test_a_crashed_worker_fails_its_running_job_and_is_restarted(server) -> None:
    url, _ = server
    jobs = RUNTIMES[url].services.jobs
    assert jobs is not None
    runner = jobs._runner
    assert isinstance(runner, ProcessJobRunner)
    runner.start()
    pid = _wait_for(lambda: (runner.worker_pids or [None])[0])
    # A job the worker is in the middle of (as the store shows a running job), then the worker dies hard.
    store = jobs._store
    running = Job(
        id="job_00000000000000000000dead",
        tenant="alpha",
        key_id=_key_id(url, "alpha"),
        kind="import",
        status=JobStatus.RUNNING,
        created_at=datetime.now(UTC),
        started_at=datetime.now(UTC),
        worker=pid,
    )
    store.save(running)
    os.kill(pid, signal.SIGKILL)
    failed = _wait_for(lambda: _failed(jobs.get("alpha", running.key_id, running.id)))
    assert failed.error is not None and failed.error.error == "worker_lost"
    assert "exit code -9" in failed.error.message and "restarted" in failed.error.message
    _wait_for(lambda: [p for p in runner.worker_pids if p != pid] or None)
    assert runner.restarts >= 1
    with _client(server, "alpha") as client:  # the new worker takes the next job
        job = client.post("/v1/memories/batch", json={"items": _items("/projects/again", 26, "gate")}).json()
        assert _finished(client, job)["status"] == "succeeded"


def test_a_purge_executes_in_the_worker_and_the_answer_waits_for_it(server) -> None:
    url, _ = server
    with _client(server, "alpha") as client:
        assert client.post(
            "/v1/memories/batch", json={"items": _items("/projects/gone", 5, "cache")}
        ).is_success
    with _client(server, "alpha-purge") as admin:
        plan = admin.post(
            "/v1/admin/purges", json={"kind": "namespace", "namespace": "/projects/gone"}
        ).json()
        assert plan["records"] == 5
        done = admin.post(f"/v1/admin/purges/{plan['id']}/execute", json={"reason": "test"})
        assert done.status_code == 200, done.text
        body = done.json()
        assert body["state"] == "completed" and body["execution"].startswith("job_"), body
    with _client(server, "alpha") as client:
        listed = client.get("/v1/memories", params={"namespace": "/projects/gone"}).json()
        assert listed["items"] == []
        assert client.get(f"/v1/jobs/{body['execution']}").status_code == 404  # no API key's job
    jobs = RUNTIMES[url].services.jobs
    assert jobs is not None
    # The plan is completed inside the job; the worker records the job's own end just after it returns, so on
    # a loaded host the job can still read `running` here: wait for its end (pytest-timeout bounds a hang)
    ran = jobs.get("alpha", "system-purge", body["execution"])
    while ran.status is JobStatus.RUNNING:
        time.sleep(0.05)
        ran = jobs.get("alpha", "system-purge", body["execution"])
    assert ran.kind == "purge" and ran.status is JobStatus.SUCCEEDED
    assert ran.worker is not None and ran.worker != os.getpid()


def test_a_dream_start_runs_as_a_job_in_the_worker(server) -> None:
    url, _ = server
    with _client(server, "alpha") as client:
        assert client.post(
            "/v1/memories/batch", json={"items": _items("/projects/dreamy", 5, "harbor")}
        ).is_success
        started = client.post("/v1/admin/dream/start", json={"namespaces": ["/projects/dreamy"]})
        assert started.status_code == 202, started.text
        execution = started.json()["execution"]
    runtime = RUNTIMES[url]
    assert runtime.services.dream_launcher.started[execution].result(timeout=120) == ["/projects/dreamy"]
    ran = runtime.services.jobs.get("alpha", "system-dream", execution)
    assert ran.kind == "dream" and ran.worker is not None and ran.worker != os.getpid()
    assert ran.progress.done == ran.progress.total == 1


def _failed(job: Job) -> Job | None:
    return job if job.status is JobStatus.FAILED else None


def _wait_for(probe: Any) -> Any:
    for _ in range(1200):
        value = probe()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


def _key_id(url: str, who: str) -> str:
    return KEY_IDS[url][who]


# ------------------------------------------------------------------ failures: the purge fence


class HeldRunner:
    """Queues jobs without running them: the test takes the worker's part (`run_next`) when it is ready."""

    def __init__(self, store: SqliteJobStore) -> None:
        self._store = store

    def submit(self, job: Job) -> None:
        pass

    def idle(self) -> bool:
        return not self._store.unfinished()


def _held_jobs(tmp_path: Path, **settings: Any) -> tuple[JobService, Any]:
    runtime = build_local(Settings(data_dir=tmp_path, embedder="hashing", **settings))
    store = SqliteJobStore(tmp_path / "jobs.db")
    jobs = JobService(store, HeldRunner(store), SystemClock(), max_queued_per_tenant=3)
    jobs.bind(job_executor(runtime.services))
    return jobs, runtime.services


def _batch_order(namespace: str, count: int, erasure: Any) -> str:
    principal = Principal(tenant="alpha", namespaces=("*",), scopes=frozenset({Scope.WRITE}), key_id="k1")
    return JobOrder.of(principal, erasure, json.dumps({"items": _items(namespace, count, "ledger")}))


def test_a_job_stops_at_a_purge_of_its_namespace_and_reports_it(tmp_path) -> None:
    jobs, services = _held_jobs(tmp_path)
    erasure = services.erasure
    namespace = "/projects/fenced"
    job = jobs.submit(
        "alpha", "k1", "memory_batch", [namespace], _batch_order(namespace, 30, erasure), total=30
    )
    assert jobs.get("alpha", "k1", job.id).status is JobStatus.QUEUED
    other = jobs.submit("alpha", "k1", "memory_batch", ["/other"], _batch_order("/other", 30, erasure))
    plan = erasure.plan("alpha", PurgeTarget(kind=PurgeKind.NAMESPACE, namespace="/other"), actor="key:admin")
    erasure.execute("alpha", plan.id, reason="offboarding", actor="key:admin", inline=False)
    # The purge erased the queued job of its namespace with its order (the request's contents) ...
    with pytest.raises(NotFound):
        jobs.get("alpha", "k1", other.id)
    assert jobs._store.payload("alpha", other.id) is None
    assert jobs.get("alpha", "k1", job.id).status is JobStatus.QUEUED
    # ... and a purge of a queued job's namespace executed after it was accepted stops it when it runs.
    plan = erasure.plan(
        "alpha", PurgeTarget(kind=PurgeKind.NAMESPACE, namespace=namespace), actor="key:admin"
    )
    erasure.execute("alpha", plan.id, reason="offboarding", actor="key:admin", inline=False)
    job = jobs.submit("alpha", "k1", "memory_batch", [namespace], _batch_order(namespace, 30, None), total=30)
    assert jobs.run_next(worker=1) is not None
    finished = jobs.get("alpha", "k1", job.id)
    assert finished.status is JobStatus.FAILED, finished
    assert finished.error is not None and finished.error.error == "purged_since_accepted"
    assert finished.progress.done == 0 and finished.result is None
    assert jobs._store.payload("alpha", job.id) is None  # a finished job keeps no order
    assert sum(services.memory.counts("alpha", namespace).by_status.values()) == 0
    with pytest.raises(NotFound):
        jobs.get("alpha", "k2", job.id)


def test_the_worker_serves_tenants_in_turn_and_caps_each_queue(tmp_path) -> None:
    jobs, _ = _held_jobs(tmp_path)
    seen: list[str] = []
    jobs.bind(lambda job, payload: lambda progress: seen.append(job.id) or {})
    alpha = [jobs.submit("alpha", "k1", "memory_batch", ["/a"], "{}") for _ in range(3)]
    with pytest.raises(JobsBusy) as busy:
        jobs.submit("alpha", "k1", "memory_batch", ["/a"], "{}")
    assert busy.value.details["retry_after_seconds"] == 5
    beta = jobs.submit("beta", "k2", "memory_batch", ["/b"], "{}")
    while jobs.run_next(worker=1) is not None:
        pass
    assert seen == [alpha[0].id, beta.id, alpha[1].id, alpha[2].id]
    assert jobs.idle()


def test_a_failing_job_reports_its_error_and_a_restart_fails_the_unfinished(tmp_path) -> None:
    from agent_memory.domain.errors import ValidationFailed

    jobs, _ = _held_jobs(tmp_path)

    def broken(progress: Any) -> dict[str, Any]:
        progress(3, 10)
        raise ValidationFailed("the third item broke a rule", item=3)

    jobs.bind(lambda job, payload: broken)
    job = jobs.submit("alpha", "k1", "memory_batch", ["/x"], "{}", total=10)
    jobs.run_next(worker=1)
    failed = jobs.get("alpha", "k1", job.id)
    assert failed.status is JobStatus.FAILED and failed.error is not None
    assert (failed.error.error, failed.error.details) == ("validation_failed", {"item": 3})
    assert failed.progress.done == 3
    # A job that a stopped server left queued: the next server fails it as interrupted.
    stale = jobs.submit("alpha", "k1", "memory_batch", ["/x"], "{}")
    again = build_local(Settings(data_dir=tmp_path, embedder="hashing")).services.jobs
    assert again is not None and again.recover() >= 1
    assert again.get("alpha", "k1", stale.id).error.error == "interrupted"  # type: ignore[union-attr]
    assert jobs._store.payload("alpha", stale.id) is None


def test_a_runtime_built_with_an_injected_clock_runs_its_jobs_on_a_thread(tmp_path) -> None:
    """A worker process rebuilds the runtime from the settings and could not share an injected clock, judge
    or AWS clients: such a runtime (tests, embedding programs) runs its jobs on a thread, still in turns."""
    runtime = build_local(Settings(data_dir=tmp_path, embedder="hashing"), SystemClock())
    jobs = runtime.services.jobs
    assert jobs is not None and isinstance(jobs._runner, ThreadJobRunner)
    order = _batch_order("/projects/threaded", 30, runtime.services.erasure)
    job = jobs.submit("alpha", "k1", "memory_batch", ["/projects/threaded"], order, total=30)
    done = _wait_for(lambda: _finished_job(jobs.get("alpha", "k1", job.id)))
    assert done.status is JobStatus.SUCCEEDED and done.worker != os.getpid()
    assert sum(runtime.services.memory.counts("alpha", "/projects/threaded").by_status.values()) == 30


def _finished_job(job: Job) -> Job | None:
    return job if job.status in (JobStatus.SUCCEEDED, JobStatus.FAILED) else None
