"""Jobs on the local server (issue 29): a large batch and an import answer 202 with a job, GET /v1/jobs/{id}
follows it to `succeeded` with the synchronous body as `result`; only the submitting key of its tenant sees it;
small batches stay 200; the SDK follows a job by itself; a job stopped by a purge (executing, or executed after
the job was accepted) fails with the purge's code and writes nothing more."""

from __future__ import annotations

import base64
import io
import tarfile
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agent_memory.api.jobs import JobFence, batch_work
from agent_memory.api.routes.memories import _batch_response
from agent_memory.domain.erasure.model import PurgeKind, PurgeTarget
from agent_memory.domain.jobs.model import JobStatus
from agent_memory.domain.memory.service import RememberInput
from agent_memory.domain.records import Source
from agent_memory.settings.service import Settings
from agent_memory.wiring.local import build_local
from agent_memory_client import Client, errors
from tests.integration.conftest import start_server


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[tuple[str, dict[str, str]]]:
    settings = Settings(data_dir=tmp_path_factory.mktemp("jobs"), embedder="hashing")
    runtime = build_local(settings)
    keys = {
        "alpha": runtime.keys.create("alpha", ["*"], ["read", "write", "admin"]).key,
        "alpha-other": runtime.keys.create("alpha", ["*"], ["read", "write", "admin"]).key,
        "beta": runtime.keys.create("beta", ["*"], ["read", "write", "admin"]).key,
    }
    uvicorn_server, thread, url = start_server(settings, runtime)
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
    for _ in range(600):
        answer = client.get(job["location"])
        assert answer.status_code == 200, answer.text
        job = answer.json()
        if job["status"] in ("succeeded", "failed"):
            return job
        assert answer.headers.get("retry-after") == "1"
        time.sleep(0.05)
    raise AssertionError(f"job {job['id']} did not finish: {job}")


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


def _archive(entries: int) -> str:
    memory = "# Memory\n\n" + "".join(
        f"- Imported fact {n}: the gateway {n} routes invoices\n" for n in range(entries)
    )
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = memory.encode()
        info = tarfile.TarInfo("workspace/MEMORY.md")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return base64.b64encode(buffer.getvalue()).decode()


def test_import_is_a_job_and_a_dry_run_is_not(server) -> None:
    body = {"namespace": "/projects/imported", "archive": _archive(40), "format": "openclaw"}
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
        report = sdk.import_archive("/projects/sdk-import", _archive(5), format="openclaw")["report"]
        assert report["state"] == "completed"
        with pytest.raises(errors.NotFound):
            sdk.get_job("job_ffffffffffffffff")


# ------------------------------------------------------------------ failures: the purge fence


def _inputs(namespace: str, count: int) -> list[RememberInput]:
    return [
        RememberInput(
            content=f"fenced fact {n}: the ledger {n} closes at noon",
            namespace=namespace,
            source=Source(actor="key:t"),
        )
        for n in range(count)
    ]


def test_a_job_stops_at_a_purge_of_its_namespace_and_reports_it(tmp_path) -> None:
    runtime = build_local(Settings(data_dir=tmp_path, embedder="hashing", jobs={"workers": 1}))
    services = runtime.services
    jobs, erasure = services.jobs, services.erasure
    assert jobs is not None and erasure is not None
    gate = threading.Event()
    blocker = jobs.submit("alpha", "k1", "memory_batch", ["/other"], lambda progress: gate.wait(30) and {})
    namespace = "/projects/fenced"
    fence = JobFence(erasure, "alpha", [namespace])
    work = batch_work(services.memory, "alpha", _inputs(namespace, 30), "key:k1", fence, _batch_response)
    job = jobs.submit("alpha", "k1", "memory_batch", [namespace], work, total=30)
    assert jobs.get("alpha", "k1", job.id).status is JobStatus.QUEUED
    plan = erasure.plan(
        "alpha", PurgeTarget(kind=PurgeKind.NAMESPACE, namespace=namespace), actor="key:admin"
    )
    erasure.execute("alpha", plan.id, reason="offboarding", actor="key:admin")
    gate.set()
    for _ in range(600):
        finished = jobs.get("alpha", "k1", job.id)
        if finished.status in (JobStatus.SUCCEEDED, JobStatus.FAILED):
            break
        time.sleep(0.05)
    assert jobs.get("alpha", "k1", blocker.id).status is JobStatus.SUCCEEDED
    assert finished.status is JobStatus.FAILED, finished
    assert finished.error is not None and finished.error.error == "purged_since_accepted"
    assert finished.progress.done == 0 and finished.result is None
    assert sum(services.memory.counts("alpha", namespace).by_status.values()) == 0
    with pytest.raises(Exception) as refused:
        jobs.get("alpha", "k2", job.id)
    assert getattr(refused.value, "code", "") == "not_found"


def test_a_failing_job_reports_its_error_and_a_restart_fails_the_unfinished(tmp_path) -> None:
    from agent_memory.domain.errors import ValidationFailed

    settings = Settings(data_dir=tmp_path, embedder="hashing")
    jobs = build_local(settings).services.jobs
    assert jobs is not None

    def broken(progress: Any) -> dict[str, Any]:
        progress(3, 10)
        raise ValidationFailed("the third item broke a rule", item=3)

    job = jobs.submit("alpha", "k1", "memory_batch", ["/x"], broken, total=10)
    for _ in range(600):
        failed = jobs.get("alpha", "k1", job.id)
        if failed.status is JobStatus.FAILED:
            break
        time.sleep(0.05)
    assert failed.error is not None
    assert (failed.error.error, failed.error.details) == ("validation_failed", {"item": 3})
    assert failed.progress.done == 3
    # A job that a stopped server left queued: the next server fails it as interrupted.
    stale = jobs.submit(
        "alpha", "k1", "memory_batch", ["/x"], lambda progress: threading.Event().wait(60) or {}
    )
    again = build_local(settings).services.jobs
    assert again is not None and again.recover() >= 1
    assert again.get("alpha", "k1", stale.id).error.error == "interrupted"  # type: ignore[union-attr]
