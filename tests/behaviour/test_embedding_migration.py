"""Embedding-model migration through the admin API (issue 12): plan → start → status → switch → archive, and
rollback, on both runtimes. Locally `start` runs the backfill on a worker thread; in AWS it starts the backfill
state machine (created in moto, not executed here), so the test runs the state machine's task itself: the
migration function's handler (tests/aws/test_migration_aws.py executes the real definition). Recall during every state is answered from one fingerprint only: each hit's vector similarity is the
cosine of the query and the memory under exactly the model that state reads with (hashing-v1 at 384
dimensions before the switch and after a rollback, hashing-v1 at 128 after it)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from agent_memory.adapters.local.embedders import HashingEmbedder

from .conftest import Api

OLD, NEW = HashingEmbedder(384), HashingEmbedder(128)
FACTS = [
    f"the {color} deployment of service {n} runs in region {n % 3}"
    for n, color in enumerate(["red", "blue", "green", "amber", "violet", "teal", "coral", "olive"])
]


def _cos(embedder: HashingEmbedder, query: str, content: str) -> float:
    return float(np.dot(embedder.embed_query(query), embedder.embed_documents([content])[0]))


def _served_by(client, namespace: str, query: str) -> set[str]:
    """Which fingerprints the recall's vector similarities match (a hit matching both is ambiguous: left out)."""
    answer = client.post(
        "/v1/recall", json={"query": query, "namespaces": [namespace], "k": 5, "mode": "vector"}
    )
    assert answer.status_code == 200, answer.text
    items = answer.json()["results"]
    assert items, "recall returned nothing"
    found: set[str] = set()
    for item in items:
        similarity, content = item["similarity"], item["memory"]["content"]
        matches = {
            name
            for name, embedder in (("old", OLD), ("new", NEW))
            if abs(_cos(embedder, query, content) - similarity) < 1e-4
        }
        assert matches, f"similarity {similarity} of {content!r} matches neither model"
        if len(matches) == 1:
            found |= matches
    return found


class _Context:
    function_name = "agent-memory-migration"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:agent-memory-migration"
    aws_request_id = "behaviour"

    def get_remaining_time_in_millis(self) -> int:
        return 900_000


class _HeldLauncher:
    """Takes the start of a local backfill without running it: the test runs the backfill itself once its own
    write has returned, so the verification never counts a write that is still between its record and its
    index writes (the worker thread could otherwise verify mid-write)."""

    def __init__(self) -> None:
        self.started: list[tuple[str, str]] = []

    def start(self, tenant: str, migration_id: str) -> str:
        self.started.append((tenant, migration_id))
        return f"held-{migration_id}"


@contextmanager
def held_local_backfill(api: Api) -> Iterator[_HeldLauncher | None]:
    """Locally, the backfill started inside this block waits for `run_backfill_task`; in AWS the state machine
    is never executed here anyway (the test runs its task)."""
    if api.runtime != "local":
        yield None
        return
    migration = api.services.migration
    launcher, held = migration.launcher, _HeldLauncher()
    migration.launcher = held
    try:
        yield held
    finally:
        migration.launcher = launcher


def run_backfill_task(api: Api, client, held: _HeldLauncher | None = None) -> None:
    """AWS: what the backfill state machine's task does. Locally: the held backfill, run now on this thread
    (without `held`, the runtime's worker thread runs it and the test waits for its state)."""
    if api.runtime != "aws":
        if held is not None:
            assert len(held.started) == 1, held.started
            api.services.migration.run_backfill(*held.started[0])
        return
    import agent_memory.handlers.api as api_handler
    from agent_memory.handlers import migration as migration_handler

    status = client.get("/v1/admin/migration/status").json()
    migration_handler.configure(lambda: api_handler.services().migration)
    try:
        migration_handler.handler(
            {"task": "run_pages", "tenant": status["tenant"], "migration_id": status["id"]}, _Context()
        )
    finally:
        migration_handler.configure(None)


def wait_for_state(client, state: str) -> dict:
    for _ in range(600):
        status = client.get("/v1/admin/migration/status").json()
        if status["state"] == state:
            return status
        time.sleep(0.05)
    raise AssertionError(f"migration never reached {state}: {status}")


def test_recall_reads_one_fingerprint_in_every_state_and_rollback_restores_the_old_model(api: Api) -> None:
    client = api.client("beta")
    namespace = f"/migration/{uuid.uuid4().hex[:8]}"
    for fact in FACTS:
        assert client.post("/v1/memories", json={"content": fact, "namespace": namespace}).status_code in (
            200,
            201,
        )
    query = "which deployment runs in region 1"
    assert _served_by(client, namespace, query) == {"old"}

    planned = client.post("/v1/admin/migration/plan", json={"embedder": "hashing@128", "batch_size": 8})
    assert planned.status_code == 200, planned.text
    assert planned.json()["state"] == "planned"
    assert planned.json()["target"]["fingerprint"] == NEW.identity.key
    assert _served_by(client, namespace, query) == {"old"}

    with held_local_backfill(api) as held:
        started = client.post("/v1/admin/migration/start")
        assert started.status_code == 200, started.text
        # A write during the migration reaches both indexes (dual write); reads stay on the old one.
        written = client.post(
            "/v1/memories",
            json={"content": "the black deployment of service 9 runs in region 1", "namespace": namespace},
        )
        assert written.status_code == 201, written.text
        assert _served_by(client, namespace, query) == {"old"}
        run_backfill_task(api, client, held)  # after the write has returned: nothing is in flight
    status = wait_for_state(client, "verifying")
    assert status["dead_letters"] == 0, status
    assert status["verification"]["passed"], status["verification"]
    assert status["coverage"] >= 0.99
    assert status["records"] == status["target_vectors"]
    assert _served_by(client, namespace, query) == {"old"}

    switched = client.post("/v1/admin/migration/switch")
    assert switched.status_code == 200, switched.text
    assert switched.json()["state"] == "switched"
    assert _served_by(client, namespace, query) == {"new"}

    rolled = client.post("/v1/admin/migration/rollback", json={"reason": "behaviour test"})
    assert rolled.status_code == 200, rolled.text
    assert rolled.json()["state"] == "rolled_back"
    assert [entry["to_state"] for entry in rolled.json()["history"]] == [
        "planned",
        "dual_write",
        "backfilling",
        "verifying",
        "switched",
        "rolled_back",
    ]
    assert _served_by(client, namespace, query) == {"old"}
    # Rolled back: the old model answers again, and a memory written meanwhile is found by it.
    answer = client.post(
        "/v1/recall", json={"query": "black deployment service 9", "namespaces": [namespace], "k": 1}
    )
    assert answer.json()["results"][0]["memory"]["content"].startswith("the black deployment")

    # A second migration runs to the end: archived, the old index exported and dropped, reads on the new one.
    assert client.post("/v1/admin/migration/plan", json={"embedder": "hashing@128"}).status_code == 200
    assert client.post("/v1/admin/migration/start").status_code == 200
    run_backfill_task(api, client)
    wait_for_state(client, "verifying")
    assert client.post("/v1/admin/migration/archive").status_code == 409  # not switched yet: nothing deleted
    assert client.post("/v1/admin/migration/switch").status_code == 200
    archived = client.post("/v1/admin/migration/archive")
    assert archived.status_code == 200, archived.text
    body = archived.json()
    assert body["state"] == "archived"
    assert body["archive"]["vectors"] == body["archive"]["verified_count"] == len(FACTS) + 1
    assert _served_by(client, namespace, query) == {"new"}
    assert client.post("/v1/admin/migration/rollback", json={}).status_code == 409


def test_migration_routes_need_admin_scope_over_the_whole_tenant(api: Api) -> None:
    assert api.client("alpha-projects-rw").get("/v1/admin/migration/status").status_code == 403
    answer = api.client("alpha").get("/v1/admin/migration/status")
    assert answer.status_code == 404 and answer.json()["error"] == "not_found"


def test_a_plan_to_an_unknown_model_or_the_same_model_is_refused(api: Api) -> None:
    client = api.client("alpha")
    assert client.post("/v1/admin/migration/plan", json={"embedder": "no-such-model"}).status_code == 422
    assert client.post("/v1/admin/migration/plan", json={"embedder": "hashing"}).status_code == 409
    assert client.post("/v1/admin/migration/plan", json={"embedder": "hashing", "rpm": 0}).status_code == 422
