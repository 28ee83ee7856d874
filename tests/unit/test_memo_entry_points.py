"""No memory text outlives a request, a job or a purge in a long-lived process (domain/memo.py): a purge run in
the process that recalled leaves no memo holding the purged text and no cached query or speaker of the purged
namespaces; the local server, the CLI and the job worker empty the memos at the end of each request or job
(every deployed Lambda handler: tests/aws/test_memo_handlers.py). The memos' contents are inspected, not a flag."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agent_memory.domain import memo
from agent_memory.domain.erasure.model import PurgeKind, PurgeState, PurgeTarget
from agent_memory.domain.memory import focus, slots
from agent_memory.domain.memory.service import RecallInput, RememberInput
from agent_memory.settings.service import Settings
from agent_memory.wiring.local import LocalRuntime, build_local

SECRET = "Quellinbrook"
"""A word no other test text holds: found in a memo's keys or values, the memo holds the purged memory."""


def held() -> str:
    """Everything every registered memo holds, keys and values, casefolded."""
    return "\n".join(
        repr(key) + repr(value) for held in memo.MEMOS.values() for key, value in held.items()
    ).casefold()


def fill() -> None:
    """A request's worth of memoised work on a text naming SECRET."""
    focus._traits(f"Tomas: {SECRET} moved the standup to Thursday")
    slots.terms(f"{SECRET} prefers tabs over spaces")
    assert SECRET.casefold() in held()


@pytest.fixture
def runtime(tmp_path: Path) -> LocalRuntime:
    return build_local(Settings(data_dir=tmp_path, embedder="hashing"))


def test_a_purge_in_the_process_that_recalled_leaves_nothing_of_the_purged_memory(runtime: LocalRuntime):
    memory, erasure = runtime.services.memory, runtime.services.erasure
    assert erasure is not None
    memo.clear_all()
    purged = memory.remember(
        "acme",
        RememberInput(f"Marit {SECRET}: the harbour tide tables move to Tuesday", "/people"),
        actor="t",
    ).record
    memory.remember("acme", RememberInput("The harbour project ships in spring", "/ops"), actor="t")
    question = RecallInput(query=f"When do {SECRET}'s tide tables move?", namespaces=("/people",))
    assert [hit.record.id for hit in memory.recall("acme", question).results][:1] == [purged.id]
    memory.recall("acme", RecallInput(query="When does the harbour project ship?", namespaces=("/ops",)))
    assert SECRET.casefold() in held()  # the recall memoised what it derived from the memory...
    reader = memory.reader
    assert len(reader.query_vectors) == 3  # /people: with and without the speaker's name; /ops: once

    plan = erasure.plan("acme", PurgeTarget(kind=PurgeKind.MEMORY, record_id=purged.id), actor="key:admin")
    done = erasure.execute("acme", plan.id, reason="erasure request", actor="key:admin")

    assert done.state is PurgeState.COMPLETED, done.verification
    assert SECRET.casefold() not in held()  # ...and the purge's end dropped it
    assert len(reader.query_vectors) == 1  # the /people query's vector went; the /ops one stays
    assert reader.speakers_seen.met("acme", ("/people",), {"marit"}) == frozenset()


def test_a_tenant_purge_drops_every_cached_entry_of_the_tenant(runtime: LocalRuntime):
    memory, erasure = runtime.services.memory, runtime.services.erasure
    assert erasure is not None
    memory.remember("acme", RememberInput("Tomas: the harbour ships in spring", "/ops"), actor="t")
    memory.remember("globex", RememberInput("Ana: the mill opens in May", "/ops"), actor="t")
    for tenant in ("acme", "globex"):
        memory.recall(tenant, RecallInput(query="When does it open?", namespaces=("/ops",)))
    assert len(memory.reader.query_vectors) == 2
    plan = erasure.plan("acme", PurgeTarget(kind=PurgeKind.TENANT), actor="key:admin")
    erasure.execute("acme", plan.id, reason="offboarding", actor="key:admin")
    assert [tenant for tenant, _ in memory.reader.query_vectors.entry_keys()] == ["globex"]


def test_the_local_server_empties_the_memos_after_each_request(tmp_path: Path):
    from agent_memory.local_server import ServerGuard

    async def app(scope: Any, receive: Any, send: Any) -> None:
        fill()  # the route's work
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def request() -> None:
        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            return None

        scope = {"type": "http", "method": "GET", "path": "/v1/stats", "headers": []}
        await ServerGuard(app, 1024)(scope, receive, send)

    asyncio.run(request())
    assert SECRET.casefold() not in held()


def test_a_cli_command_empties_the_memos(tmp_path: Path):
    from agent_memory.cli.main import main

    base = ["--data-dir", str(tmp_path), "--embedder", "hashing"]
    assert main([*base, "remember", f"Marit {SECRET} moved the tide tables to Tuesday", "-n", "/people"]) == 0
    assert main([*base, "recall", f"When do {SECRET}'s tide tables move?", "-n", "/people"]) == 0
    assert SECRET.casefold() not in held()


def test_the_job_worker_empties_the_memos_after_each_job():
    from agent_memory.wiring.job_worker import run_one

    class Jobs:
        def run_next(self, worker: int) -> None:
            fill()
            raise RuntimeError("the store failed after the job's work")

    assert run_one(Jobs(), 1) is None  # type: ignore[arg-type]
    assert SECRET.casefold() not in held()


def test_a_purge_handed_to_another_process_drops_this_processs_cached_entries_at_once(runtime: LocalRuntime):
    """The job worker (locally) or the workflow (AWS) runs the steps and ends the purge where it cannot reach
    this process: the hand-off itself drops what this process keeps of the purged namespaces."""
    memory, erasure = runtime.services.memory, runtime.services.erasure
    assert erasure is not None
    record = memory.remember(
        "acme", RememberInput("Tomas: the harbour ships in spring", "/ops"), actor="t"
    ).record
    memory.remember("acme", RememberInput("Ana: the mill opens in May", "/mill"), actor="t")
    memory.recall("acme", RecallInput(query="When does the harbour ship?", namespaces=("/ops",)))
    memory.recall("acme", RecallInput(query="When does the mill open?", namespaces=("/mill",)))
    before = len(memory.reader.query_vectors)

    class Elsewhere:
        def start(self, tenant: str, plan_id: str) -> str:
            return "job-1"

    plan = erasure.plan("acme", PurgeTarget(kind=PurgeKind.MEMORY, record_id=record.id), actor="key:admin")
    started = erasure.execute("acme", plan.id, reason="request", actor="key:admin", background=Elsewhere())
    assert started.state is PurgeState.EXECUTING and started.execution == "job-1"
    assert len(memory.reader.query_vectors) == before - 1  # the /ops query's vector went; /mill's stays
