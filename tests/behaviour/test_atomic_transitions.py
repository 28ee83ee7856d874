"""State transitions are atomic on both runtimes (issue 16, defect 2), and a conflict group outside the key's
namespaces looks exactly like one that does not exist (defect 7).

Correct, archive, restore and conflict resolution each leave one state for another. The store applies the
transition only if the record still has the version and status it was read with, in the same atomic commit
that creates the successor (SQLite: one `BEGIN IMMEDIATE` transaction with a `version = ? AND status = ?`
guard; DynamoDB: one TransactWriteItems with a ConditionExpression), so of concurrent requests exactly one
wins and the others get 409 naming what happened. `count_forks` and `lineage_summary` measure the outcome
(they are also what a summary table of the race tests reads).
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest

from agent_memory.adapters.clock import SystemClock
from agent_memory.adapters.local.embedders import HashingEmbedder
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.domain.errors import Conflict
from agent_memory.domain.memory.service import MemoryService, RememberInput
from agent_memory.domain.ports import IndexFilter, RecordQuery
from agent_memory.domain.records import Status
from tests.aws.support import serialize_moto_writes
from tests.behaviour.conftest import Api

WRITERS = 12
ORIGINAL = "The release train leaves from platform one every Tuesday"


def unique_ns(root: str = "/projects") -> str:
    return f"{root}/tx-{uuid.uuid4().hex[:8]}"


def correction(n: int) -> str:
    return f"The release train leaves from platform {n + 2} every Thursday"


# ---------------------------------------------------------------- fork accounting


def _field(record: Any, name: str) -> Any:
    return record.get(name) if isinstance(record, Mapping) else getattr(record, name)


def count_forks(records: Iterable[Any]) -> int:
    """How many extra successors the records' lineage has: for every record, the records that name it as
    their predecessor (`supersedes` or `corrected_from`) beyond the first. 0 means no record was replaced
    twice. `records` are API dicts or `MemoryRecord`s of one namespace."""
    successors: dict[str, set[str]] = {}
    for record in records:
        for link in ("supersedes", "corrected_from"):
            if predecessor := _field(record, link):
                successors.setdefault(predecessor, set()).add(_field(record, "id"))
    return sum(len(ids) - 1 for ids in successors.values() if len(ids) > 1)


def lineage_summary(records: Iterable[Any], root: str) -> dict[str, int]:
    """The lineage grown from `root`: its size, how many of its records are active (at most 1 when
    transitions are atomic) and its forks."""
    records = list(records)
    by_predecessor: dict[str, list[Any]] = {}
    for record in records:
        predecessor = _field(record, "corrected_from") or _field(record, "supersedes")
        if predecessor:
            by_predecessor.setdefault(predecessor, []).append(record)
    by_id = {_field(r, "id"): r for r in records}
    lineage, todo = [], [root]
    while todo:
        current = todo.pop()
        if current in by_id:
            lineage.append(by_id[current])
        todo.extend(_field(r, "id") for r in by_predecessor.get(current, []))
    status = [str(_field(r, "status")) for r in lineage]
    return {
        "records": len(lineage),
        "active": status.count("active"),
        "forks": count_forks(lineage),
    }


def race(calls: list[Callable[[], int]]) -> Counter[int]:
    """Run the calls at once (a barrier releases every thread together); count their HTTP statuses."""
    barrier = threading.Barrier(len(calls))
    outcomes: list[int] = []
    lock = threading.Lock()

    def run(call: Callable[[], int]) -> None:
        barrier.wait()
        status = call()
        with lock:
            outcomes.append(status)

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(outcomes) == len(calls), "a racing request did not finish"
    return Counter(outcomes)


def domain_status(call: Callable[[], Any]) -> int:
    """The HTTP status the API maps a domain call's outcome to (200, or 409 for `Conflict`)."""
    try:
        call()
    except Conflict:
        return 409
    return 200


# ---------------------------------------------------------------- helpers over HTTP


def remember(client: Any, content: str, namespace: str) -> dict[str, Any]:
    response = client.post("/v1/memories", json={"content": content, "namespace": namespace})
    assert response.status_code == 201, response.text
    return response.json()["memory"]


def all_records(client: Any, namespace: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        params = {"namespace": namespace, "limit": 100, **({"cursor": cursor} if cursor else {})}
        page = client.get("/v1/memories", params=params).json()
        items += page["items"]
        if not (cursor := page.get("next_cursor")):
            return items


def refused(response: Any, *fragments: str) -> dict[str, Any]:
    assert response.status_code == 409, response.text
    body = response.json()
    assert body["error"] in ("conflict", "concurrent_modification"), body
    for fragment in fragments:
        assert fragment in body["message"], body
    return body


# ---------------------------------------------------------------- sequential transitions


def test_correcting_a_memory_twice_is_refused_naming_its_successor(api: Api):
    client = api.client()
    ns = unique_ns()
    memory = remember(client, ORIGINAL, ns)
    first = client.post(f"/v1/memories/{memory['id']}/correct", json={"content": correction(0)})
    assert first.status_code == 200, first.text
    successor = first.json()["memory"]["id"]

    second = client.post(f"/v1/memories/{memory['id']}/correct", json={"content": correction(1)})

    body = refused(second, f"was already corrected by {successor}", f"correct {successor} instead")
    assert body["details"]["superseded_by"] == successor
    records = all_records(client, ns)
    assert lineage_summary(records, memory["id"]) == {"records": 2, "active": 1, "forks": 0}
    history = client.get(f"/v1/memories/{successor}/history").json()
    assert [r["id"] for r in history["lineage"]] == [memory["id"], successor]
    assert [c["operation"] for c in history["changes"]] == ["create", "create", "correct"]


def test_an_archived_memory_cannot_be_corrected(api: Api):
    client = api.client()
    ns = unique_ns()
    memory = remember(client, ORIGINAL, ns)
    assert client.post(f"/v1/memories/{memory['id']}/archive", json={}).status_code == 200

    response = client.post(f"/v1/memories/{memory['id']}/correct", json={"content": correction(0)})

    refused(response, "is archived", "restore it")
    assert [r["id"] for r in all_records(client, ns)] == [memory["id"]]  # no successor was created


def test_restoring_an_active_memory_is_refused_and_changes_nothing(api: Api):
    client = api.client()
    memory = remember(client, ORIGINAL, unique_ns())

    response = client.post(f"/v1/memories/{memory['id']}/restore", json={})

    refused(response, "is already active")
    after = client.get(f"/v1/memories/{memory['id']}").json()
    assert after["version"] == memory["version"] and after["status"] == "active"


def test_archiving_twice_is_refused_and_logged_once(api: Api):
    client = api.client()
    ns = unique_ns()
    memory = remember(client, ORIGINAL, ns)
    assert client.post(f"/v1/memories/{memory['id']}/archive", json={}).status_code == 200

    refused(client.post(f"/v1/memories/{memory['id']}/archive", json={}), "is already archived")

    changes = client.get("/v1/changes", params={"namespace": ns}).json()["items"]
    assert [c["operation"] for c in changes] == ["create", "archive"]


def test_a_corrected_memory_can_be_neither_archived_nor_restored(api: Api):
    client = api.client()
    ns = unique_ns()
    memory = remember(client, ORIGINAL, ns)
    successor = client.post(f"/v1/memories/{memory['id']}/correct", json={"content": correction(0)}).json()
    successor_id = successor["memory"]["id"]

    refused(client.post(f"/v1/memories/{memory['id']}/archive", json={}), f"archive {successor_id} instead")
    refused(
        client.post(f"/v1/memories/{memory['id']}/restore", json={}),
        f"was already corrected by {successor_id}",
    )

    assert lineage_summary(all_records(client, ns), memory["id"]) == {"records": 2, "active": 1, "forks": 0}


# ---------------------------------------------------------------- concurrent transitions


def aws_memory() -> MemoryService:
    """The memory service the AWS runtime's Lambda handler serves (DynamoDB and S3 Vectors on moto)."""
    import agent_memory.handlers.api as api_handler

    return api_handler.services().memory


def _racers(
    api: Api, monkeypatch: pytest.MonkeyPatch, memory_id: str, actions: list[str]
) -> list[Callable[[], int]]:
    """One call per action ("correct" n-th content, or "archive") on `memory_id`: over real HTTP on the local
    server, through the domain on DynamoDB (moto) for the AWS runtime (the Lambda handler is one process per
    request in AWS; here it would share one resolver between threads)."""
    if api.runtime == "local":
        clients = [api.client() for _ in actions]

        def over_http(n: int, action: str) -> Callable[[], int]:
            body = {"content": correction(n)} if action == "correct" else {}
            return lambda: clients[n].post(f"/v1/memories/{memory_id}/{action}", json=body).status_code

        return [over_http(n, action) for n, action in enumerate(actions)]

    serialize_moto_writes(monkeypatch)
    memory = aws_memory()

    def on_domain(n: int, action: str) -> Callable[[], int]:
        if action == "correct":
            return lambda: domain_status(lambda: memory.correct("alpha", memory_id, correction(n), actor="t"))
        return lambda: domain_status(lambda: memory.archive("alpha", memory_id, actor="t"))

    return [on_domain(n, action) for n, action in enumerate(actions)]


def test_concurrent_corrections_of_one_memory_leave_exactly_one_successor(api: Api, monkeypatch):
    client = api.client()
    ns = unique_ns()
    memory = remember(client, ORIGINAL, ns)

    outcomes = race(_racers(api, monkeypatch, memory["id"], ["correct"] * WRITERS))

    assert outcomes == Counter({200: 1, 409: WRITERS - 1})
    records = all_records(client, ns)
    assert lineage_summary(records, memory["id"]) == {"records": 2, "active": 1, "forks": 0}
    (successor,) = [r for r in records if r["status"] == "active"]
    assert client.get(f"/v1/memories/{memory['id']}").json()["superseded_by"] == successor["id"]
    history = client.get(f"/v1/memories/{successor['id']}/history").json()
    assert [r["id"] for r in history["lineage"]] == [memory["id"], successor["id"]]
    assert [c["operation"] for c in history["changes"]] == ["create", "create", "correct"]
    recalled = client.post("/v1/recall", json={"query": "release train platform", "namespaces": [ns]}).json()
    assert [hit["memory"]["id"] for hit in recalled["results"]] == [successor["id"]]
    if api.runtime == "aws":
        assert_index_follows_store(aws_memory(), "alpha", ns)


def test_concurrent_corrections_and_archives_of_one_memory_never_fork(api: Api, monkeypatch):
    client = api.client()
    ns = unique_ns()
    memory = remember(client, ORIGINAL, ns)

    actions = ["correct", "archive"] * (WRITERS // 2)
    outcomes = race(_racers(api, monkeypatch, memory["id"], actions))

    assert outcomes == Counter({200: 1, 409: WRITERS - 1})
    records = all_records(client, ns)
    summary = lineage_summary(records, memory["id"])
    corrected = summary["records"] == 2  # a correction won; otherwise an archive did
    assert summary == {"records": 2 if corrected else 1, "active": 1 if corrected else 0, "forks": 0}
    changes = client.get("/v1/changes", params={"namespace": ns}).json()["items"]
    won = ["create", "create", "correct"] if corrected else ["create", "archive"]
    assert sorted(c["operation"] for c in changes) == sorted(won)
    if api.runtime == "aws":
        assert_index_follows_store(aws_memory(), "alpha", ns)


def test_racing_transitions_on_the_domain_leave_no_index_entry_for_a_lost_successor(tmp_path):
    # The index is written only after the store accepted the commit: a loser indexes nothing.
    service = MemoryService(
        store=SqliteRecordStore(tmp_path / "memory.db"),
        index=LocalSearchIndex(tmp_path / "index"),
        embedder=HashingEmbedder(),
        clock=SystemClock(),
    )
    ns = unique_ns()
    memory = service.remember("acme", RememberInput(content=ORIGINAL, namespace=ns), actor="t").record
    assert memory is not None
    actions = [
        (lambda n=n: service.correct("acme", memory.id, correction(n), actor="t"))
        if n % 2 == 0
        else (lambda: service.archive("acme", memory.id, actor="t"))
        for n in range(WRITERS)
    ]

    outcomes = race([lambda action=action: domain_status(action) for action in actions])

    assert outcomes == Counter({200: 1, 409: WRITERS - 1})
    assert_index_follows_store(service, "acme", ns)
    assert count_forks(service.list("acme", RecordQuery(namespaces=(ns,), limit=100)).items) == 0


def assert_index_follows_store(service: MemoryService, tenant: str, namespace: str) -> None:
    """Every record of the namespace is in the search index under its stored status, and nothing else is
    (no entry for a successor whose commit lost a race)."""
    stored = {
        r.id: r.status for r in service.list(tenant, RecordQuery(namespaces=(namespace,), limit=100)).items
    }
    index = service._index
    for status in Status:
        if status is Status.QUARANTINED:
            continue
        where = IndexFilter(namespaces=(namespace,), statuses=(status,))
        hits = index.query_keyword(tenant, "release train platform", k=100, where=where)
        assert {hit.record_id for hit in hits} == {i for i, s in stored.items() if s is status}, status


# ---------------------------------------------------------------- conflict resolution


def _open_conflict(client: Any, namespace: str) -> tuple[str, list[str]]:
    """Two values both callers dated to the same moment: the one case the write discipline holds for review."""
    moment = "2026-11-02T09:00:00+00:00"
    first = client.post(
        "/v1/memories",
        json={
            "content": "The release train leaves on Thursdays",
            "namespace": namespace,
            "valid_from": moment,
        },
    ).json()["memory"]
    second = client.post(
        "/v1/memories",
        json={
            "content": "The release train leaves on Tuesdays",
            "namespace": namespace,
            "valid_from": moment,
        },
    ).json()
    assert second["decision"] == "pending", second
    return second["memory"]["conflict_group"], [first["id"], second["memory"]["id"]]


def test_resolving_a_conflict_twice_is_refused_and_supersedes_once(api: Api):
    client = api.client()
    ns = unique_ns()
    group, (older, newer) = _open_conflict(client, ns)
    resolved = client.post(f"/v1/conflicts/{group}/resolve", json={"keep": [newer]})
    assert resolved.status_code == 200, resolved.text

    again = client.post(f"/v1/conflicts/{group}/resolve", json={"keep": [older]})

    assert again.status_code == 404, again.text  # the group is closed: nothing left to resolve
    records = {r["id"]: r for r in all_records(client, ns)}
    assert records[older]["status"] == "superseded" and records[older]["superseded_by"] == newer
    assert records[newer]["status"] == "active"


def test_a_conflict_group_outside_the_keys_namespaces_answers_like_an_unknown_group(api: Api):
    alpha, scoped = api.client("alpha"), api.client("alpha-scoped-rw")
    foreign_group, members = _open_conflict(alpha, unique_ns())  # a namespace the scoped key may not use
    own = remember(scoped, "The scoped team deploys on Fridays", unique_ns("/scoped"))
    unknown_group = f"cfg_{uuid.uuid4().hex[:16]}"

    # The key writes in its own namespace and names its own record as the one to keep
    foreign = scoped.post(f"/v1/conflicts/{foreign_group}/resolve", json={"keep": [own["id"]]})
    unknown = scoped.post(f"/v1/conflicts/{unknown_group}/resolve", json={"keep": [own["id"]]})

    assert foreign.status_code == unknown.status_code == 404, (foreign.text, unknown.text)
    assert foreign.json() == {
        **unknown.json(),
        "message": unknown.json()["message"].replace(unknown_group, foreign_group),
    }
    assert not any(member in foreign.text for member in members)
    conflicts = alpha.get("/v1/conflicts", params={"namespace": alpha_ns(alpha, members[0])}).json()
    assert [g["group"] for g in conflicts["conflicts"]] == [foreign_group]  # untouched


def alpha_ns(client: Any, memory_id: str) -> str:
    return client.get(f"/v1/memories/{memory_id}").json()["namespace"]


def test_remembering_a_corrected_memorys_old_text_never_brings_it_back_beside_its_successor(api: Api):
    client = api.client()
    ns = unique_ns()
    memory = remember(client, ORIGINAL, ns)
    corrected = client.post(f"/v1/memories/{memory['id']}/correct", json={"content": correction(0)})
    assert corrected.status_code == 200, corrected.text

    again = client.post("/v1/memories", json={"namespace": ns, "content": ORIGINAL})

    assert again.status_code in (200, 201), again.text
    old = client.get(f"/v1/memories/{memory['id']}").json()
    assert old["status"] == "archived" and old["superseded_by"] == corrected.json()["memory"]["id"]
    assert lineage_summary(all_records(client, ns), memory["id"])["forks"] == 0
