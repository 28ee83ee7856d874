"""The SDK follows a 202 job (issue 29): it polls `location` after Retry-After and returns the job's `result`;
a failed job raises `errors.JobFailed` with the job's error. On httpx's MockTransport, no server."""

from __future__ import annotations

import json

import httpx
import pytest

from agent_memory_client import Client, errors

JOB = {"id": "job_abc", "kind": "memory_batch", "location": "/v1/jobs/job_abc", "namespaces": ["/p"]}


def _client(final: dict) -> tuple[Client, list[str]]:
    seen: list[str] = []
    polls = iter([{**JOB, "status": "running"}, {**JOB, **final}])

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url.path}")
        if request.method == "POST":
            return httpx.Response(202, json={**JOB, "status": "queued"}, headers={"Retry-After": "1"})
        return httpx.Response(200, json=next(polls))

    sleeps: list[float] = []
    client = Client("http://memory.test", "key", transport=httpx.MockTransport(answer), sleep=sleeps.append)
    return client, seen


def test_a_succeeded_job_returns_its_result() -> None:
    result = {"results": [{"decision": "added"}], "counts": {"added": 1}}
    client, seen = _client({"status": "succeeded", "result": result})
    assert client.remember_batch([{"content": "x", "namespace": "/p"}] * 26) == result
    assert seen == ["POST /v1/memories/batch", "GET /v1/jobs/job_abc", "GET /v1/jobs/job_abc"]


def test_a_failed_job_raises_job_failed_with_its_error() -> None:
    error = {"error": "purge_in_progress", "message": "a purge runs", "details": {"plan_id": "p1"}}
    client, _ = _client({"status": "failed", "error": error})
    with pytest.raises(errors.JobFailed) as failed:
        client.import_archive("/p", b"archive")
    assert (failed.value.code, failed.value.message, failed.value.details) == (
        "purge_in_progress",
        "a purge runs",
        {"plan_id": "p1"},
    )
    assert failed.value.job["id"] == "job_abc" and json.dumps(failed.value.job)
