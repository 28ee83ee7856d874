"""Jobs (issue 29) on both runtimes: a large batch and an archive import answer 202 with the same job resource
(locally the job worker runs it, in AWS the job function), GET /v1/jobs/{id} follows it to `succeeded` with
the synchronous route's body as `result`, only the submitting key of its tenant sees it, and a small batch
or a dry run stays synchronous (200)."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agent_memory.domain.jobs.config import JobConfig
from tests.archives import memory_archive
from tests.behaviour.conftest import Api, serve_api

THRESHOLD = 4
"""`jobs.batch_threshold` of both runtimes here (25 by default; tests/integration/test_jobs.py crosses that one):
what is tested is the crossing of the configured threshold, so a large batch is a few items, not 26 writes."""
LARGE = THRESHOLD + 1


@pytest.fixture(scope="module", params=["local", "aws"])
def api(request, tmp_path_factory) -> Iterator[Api]:
    yield from serve_api(request.param, tmp_path_factory, jobs=JobConfig(batch_threshold=THRESHOLD))


JOB_FIELDS = {
    "id", "kind", "status", "namespaces", "progress", "created_at", "started_at", "finished_at", "result",
    "error", "location",
}  # fmt: skip


def _items(namespace: str, count: int, word: str) -> list[dict[str, Any]]:
    return [
        {"namespace": namespace, "content": f"{word} fact {n}: the {word} desk owns ticket {n}"}
        for n in range(count)
    ]


def _accepted(answer: Any, kind: str) -> dict[str, Any]:
    assert answer.status_code == 202, answer.text
    job = answer.json()
    assert set(job) == JOB_FIELDS and job["kind"] == kind
    assert job["status"] in ("queued", "running", "succeeded")  # the worker may already have it
    assert job["location"] == f"/v1/jobs/{job['id']}" == answer.headers["Location"]
    assert answer.headers["Retry-After"] == "1"
    return job


def _settled(api: Api, who: str, job: dict[str, Any]) -> dict[str, Any]:
    with api.client(who, follow_jobs=False) as client:
        for _ in range(1200):
            answer = client.get(job["location"])
            assert answer.status_code == 200, answer.text
            job = answer.json()
            if job["status"] in ("succeeded", "failed"):
                return job
            time.sleep(0.05)
    raise AssertionError(f"job {job['id']} did not finish: {job}")


def test_a_large_batch_is_a_job_whose_result_is_the_synchronous_answer(api: Api) -> None:
    ns = "/projects/jobs-batch"
    with api.client("alpha", follow_jobs=False) as client:
        job = _accepted(
            client.post("/v1/memories/batch", json={"items": _items(ns, LARGE + 1, "gannet")}), "memory_batch"
        )
        assert job["progress"]["total"] == LARGE + 1 and job["namespaces"] == [ns]
        done = _settled(api, "alpha", job)
        assert done["status"] == "succeeded" and done["error"] is None
        assert done["progress"] == {"done": LARGE + 1, "total": LARGE + 1}
        assert done["result"]["counts"] == {"added": LARGE + 1}
        assert len(done["result"]["results"]) == LARGE + 1
        listed = client.get("/v1/memories", params={"namespace": ns, "limit": 100}).json()["items"]
        assert sorted(m["id"] for m in listed) == sorted(r["memory"]["id"] for r in done["result"]["results"])
        small = client.post("/v1/memories/batch", json={"items": _items(ns + "-small", THRESHOLD, "tern")})
        assert small.status_code == 200 and small.json()["counts"] == {"added": THRESHOLD}  # at the threshold


def test_an_import_is_a_job_and_a_dry_run_is_not(api: Api) -> None:
    body = {
        "namespace": "/projects/jobs-import",
        "archive": memory_archive(8, fact="the relay {n} carries parcels"),
        "format": "openclaw",
    }
    with api.client("alpha", follow_jobs=False) as client:
        dry = client.post("/v1/imports", json={**body, "dry_run": True})
        assert dry.status_code == 200 and dry.json()["report"]["state"] == "dry_run"
        done = _settled(api, "alpha", _accepted(client.post("/v1/imports", json=body), "import"))
        assert done["status"] == "succeeded", done
        report = done["result"]["report"]
        assert report["state"] == "completed" and done["progress"]["done"] == done["progress"]["total"] > 0
        assert client.get(f"/v1/imports/{report['id']}").json()["report"]["id"] == report["id"]
        bad = client.post(
            "/v1/imports", json={**body, "archive": base64.b64encode(b"not an archive").decode()}
        )
        assert bad.status_code in (413, 422), bad.text  # refused within the request: no job


def test_only_the_submitting_key_of_its_tenant_sees_a_job(api: Api) -> None:
    with api.client("alpha", follow_jobs=False) as client:
        job = _accepted(
            client.post(
                "/v1/memories/batch", json={"items": _items("/projects/jobs-private", LARGE, "skua")}
            ),
            "memory_batch",
        )
    _settled(api, "alpha", job)
    for other in ("beta", "alpha-projects-rw"):  # another tenant; another key of the same tenant
        with api.client(other, follow_jobs=False) as client:
            answer = client.get(job["location"])
            assert answer.status_code == 404 and answer.json()["error"] == "not_found", answer.text
    with api.client("alpha", follow_jobs=False) as client:
        assert client.get("/v1/jobs/job_0123456789abcdef").status_code == 404
        assert client.get("/v1/jobs/not-a-job").status_code == 404
