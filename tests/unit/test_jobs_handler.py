"""The decay job's Lambda entry point (EventBridge Scheduler → archive_decayed_handler): which tenants it
sweeps, dry runs, refusal of a bad input, and that it only archives."""

from __future__ import annotations

import pytest

from agent_memory.adapters.local.embedders import HashingEmbedder
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.domain.errors import ValidationFailed
from agent_memory.domain.memory.index_upkeep import IndexUpkeep
from agent_memory.domain.memory.service import MemoryService, RememberInput
from agent_memory.domain.records import MemoryType, Status
from agent_memory.handlers import jobs
from agent_memory.wiring.aws import Jobs

NS = "/projects/billing"


class LambdaContext:
    function_name = "agent-memory-decay"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:agent-memory-decay"
    aws_request_id = "req-1"


@pytest.fixture
def memory(tmp_path, clock):
    service = MemoryService(
        store=SqliteRecordStore(tmp_path / "memory.db"),
        index=LocalSearchIndex(tmp_path / "index"),
        embedder=HashingEmbedder(),
        clock=clock,
    )
    jobs.graph.set(Jobs(memory=service, upkeep=IndexUpkeep(None)))  # SQLite: no index to backfill
    yield service
    jobs.graph.set(None)


def _remember(memory, tenant, content, memory_type):
    return memory.remember(
        tenant, RememberInput(content=content, namespace=NS, type=memory_type), actor="test"
    ).record


def test_the_job_archives_decayed_memories_of_each_tenant_it_is_given(memory, clock, handler_env):
    handler_env.setenv("AGENT_MEMORY_TENANTS", "acme,globex")
    weak = _remember(memory, "acme", "Lunch order for the offsite was pizza", MemoryType.TEMPORARY)
    strong = _remember(memory, "acme", "The user is allergic to peanuts", MemoryType.USER_PREFERENCE)
    other = _remember(memory, "globex", "Parking is on level 3 this week", MemoryType.TEMPORARY)
    clock.advance(days=31)

    preview = jobs.archive_decayed_handler({"dry_run": True}, LambdaContext())
    assert preview == {
        "dry_run": True,
        "tenants": {"acme": {"examined": 2, "archived": 1}, "globex": {"examined": 1, "archived": 1}},
    }
    assert memory.get("acme", weak.id).status is Status.ACTIVE  # a dry run changes nothing

    done = jobs.archive_decayed_handler({"tenant": "acme"}, LambdaContext())
    assert done["tenants"] == {"acme": {"examined": 2, "archived": 1}}  # the event's tenant wins
    assert memory.get("acme", weak.id).status is Status.ARCHIVED
    assert memory.get("acme", strong.id).status is Status.ACTIVE
    assert memory.get("globex", other.id).status is Status.ACTIVE
    assert memory.restore("acme", weak.id, actor="t").status is Status.ACTIVE  # archived, never deleted


def test_an_invalid_tenant_in_the_schedule_input_is_refused_before_anything_runs(memory):
    with pytest.raises(ValidationFailed, match="invalid tenant ids"):
        jobs.archive_decayed_handler({"tenants": ["acme", "../etc"]}, LambdaContext())


def test_an_invalid_tenant_in_the_configured_fallback_is_refused_too(memory, handler_env):
    handler_env.setenv("AGENT_MEMORY_TENANTS", "acme,Not A Tenant")
    with pytest.raises(ValidationFailed, match="invalid tenant ids"):
        jobs.archive_decayed_handler({}, LambdaContext())


def test_without_tenants_in_the_input_or_the_environment_the_job_does_nothing(memory, handler_env):
    handler_env.delenv("AGENT_MEMORY_TENANTS", raising=False)
    assert jobs.archive_decayed_handler({}, LambdaContext()) == {"dry_run": False, "tenants": {}}
