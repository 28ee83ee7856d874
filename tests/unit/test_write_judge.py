"""Optional LLM write judge (issue 15): stubbed model answers, malformed ones included, drive the verdict; a
model error or an unusable answer falls back to the rule-based discipline; verdict, reason and token usage go
into the change log; nothing is ever deleted."""

from __future__ import annotations

import json

import pytest

from agent_memory.adapters.clock import SystemClock
from agent_memory.adapters.local.embedders import HashingEmbedder
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.domain.errors import Misconfigured, UpstreamUnavailable
from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.domain.memory.service import Decision, MemoryService, RememberInput
from agent_memory.domain.memory.write_judge import Completion
from agent_memory.domain.records import Status

NS = "/projects/billing"
OLD = "The billing service stores invoices in Postgres"
NEW = "The billing service stores invoices in DynamoDB"


class StubModel:
    def __init__(self, answer: str | Exception | None) -> None:
        self.answer = answer
        self.prompts: list[str] = []

    def complete_with_usage(self, *, system: str, prompt: str, max_tokens: int = 2000) -> Completion:
        self.prompts.append(prompt)
        if isinstance(self.answer, Exception):
            raise self.answer
        return Completion(self.answer or "", input_tokens=321, output_tokens=17)


def build(tmp_path, model: StubModel, tenants: tuple[str, ...] = ("acme",)) -> MemoryService:
    return MemoryService(
        store=SqliteRecordStore(tmp_path / "memory.db"),
        index=LocalSearchIndex(tmp_path / "index"),
        embedder=HashingEmbedder(),
        clock=SystemClock(),
        policy=MemoryPolicy(write_judge_tenants=tenants),
        judge=model,
    )


def seeded(tmp_path, answer: str | Exception | None, **kwargs):
    model = StubModel(answer)
    service = build(tmp_path, model, **kwargs)
    old = service.remember("acme", RememberInput(content=OLD, namespace=NS), actor="t").record
    assert old is not None
    model.answer = answer(old.id) if callable(answer) else answer
    return service, model, old


def verdict(action: str, target: str | None, reason: str = "the store moved") -> str:
    return json.dumps({"action": action, "id": target, "reason": reason})


def test_update_supersedes_the_target_and_logs_verdict_reason_and_tokens(tmp_path):
    service, model, old = seeded(tmp_path, lambda old_id: verdict("UPDATE", old_id))
    result = service.remember("acme", RememberInput(content=NEW, namespace=NS), actor="t")
    assert result.decision is Decision.SUPERSEDED
    assert service.get("acme", old.id).status is Status.SUPERSEDED
    assert old.id in model.prompts[-1] and NEW in model.prompts[-1]
    _, changes = service.history("acme", old.id)
    assert any(
        "write judge: UPDATE" in c.reason and "321 input + 17 output tokens" in c.reason for c in changes
    )


def test_delete_archives_the_target_and_keeps_the_new_memory(tmp_path):
    service, _, old = seeded(tmp_path, lambda old_id: verdict("DELETE", old_id, "no longer true"))
    result = service.remember("acme", RememberInput(content=NEW, namespace=NS), actor="t")
    assert result.decision is Decision.ADDED and result.record is not None
    assert service.get("acme", old.id).status is Status.ARCHIVED  # archived, never deleted
    assert "write judge: DELETE" in result.reason


def test_none_folds_a_restatement_into_the_target_and_keeps_its_wording_in_the_change_log(tmp_path):
    service, _, old = seeded(tmp_path, lambda old_id: "```json\n" + verdict("NONE", old_id) + "\n```")
    restated = "Invoices of the billing service are stored in Postgres"
    result = service.remember("acme", RememberInput(content=restated, namespace=NS), actor="t")
    assert result.decision is Decision.MERGED and result.record is not None
    assert result.record.id == old.id
    _, changes = service.history("acme", old.id)
    assert any(restated in change.reason for change in changes)  # the newer wording stays reachable


def test_a_none_that_would_fold_a_new_value_away_is_refused_and_both_are_kept(tmp_path):
    """A scripted judge that answers badly: NONE for a statement with another value (Postgres → DynamoDB).
    Merging would destroy "DynamoDB"; the never-lose rule keeps both, linked newest first or superseding."""
    service, _, old = seeded(tmp_path, lambda old_id: verdict("NONE", old_id, "same thing"))
    result = service.remember("acme", RememberInput(content=NEW, namespace=NS), actor="t")
    assert result.decision is not Decision.MERGED
    assert result.record is not None and result.record.id != old.id
    assert service.get("acme", result.record.id).content == NEW
    assert "merge refused" in result.reason and "write judge: NONE" in result.reason


def test_add_adds_beside_the_neighbour(tmp_path):
    service, _, old = seeded(tmp_path, verdict("ADD", None, "a different fact"))
    result = service.remember("acme", RememberInput(content=NEW, namespace=NS), actor="t")
    assert result.decision is Decision.ADDED and "write judge: ADD" in result.reason
    assert service.get("acme", old.id).status is Status.ACTIVE


@pytest.mark.parametrize(
    "answer",
    [
        UpstreamUnavailable("timed out"),
        TimeoutError("read timeout"),
        "",
        "I think you should update it.",
        "{not json",
        "[1, 2]",
        verdict("REPLACE", None),
        verdict("UPDATE", "mem_not_offered"),
        verdict("DELETE", None),
        json.dumps({"action": "UPDATE", "id": 42}),
    ],
    ids=[
        "upstream",
        "timeout",
        "empty",
        "prose",
        "broken",
        "array",
        "action",
        "unknown-id",
        "no-id",
        "id-type",
    ],
)
def test_model_errors_and_malformed_answers_fall_back_to_the_rules(tmp_path, answer):
    service, model, old = seeded(tmp_path, answer)
    result = service.remember("acme", RememberInput(content=NEW, namespace=NS), actor="t")
    assert model.prompts  # the judge was asked
    assert "write judge" not in result.reason  # ... and the rules decided
    assert service.get("acme", old.id).status in (Status.ACTIVE, Status.SUPERSEDED, Status.PENDING)


def test_off_by_default_and_only_for_the_named_tenants(tmp_path):
    model = StubModel(verdict("ADD", None))
    service = build(tmp_path, model, tenants=("other",))
    service.remember("acme", RememberInput(content=OLD, namespace=NS), actor="t")
    service.remember("acme", RememberInput(content=NEW, namespace=NS), actor="t")
    assert model.prompts == []
    assert MemoryPolicy().write_judge_tenants == ()


def test_a_policy_naming_judged_tenants_without_a_judge_model_is_refused_at_start(tmp_path):
    with pytest.raises(Misconfigured, match="write_judge_tenants"):
        MemoryService(
            SqliteRecordStore(tmp_path / "m.db"),
            LocalSearchIndex(tmp_path / "i"),
            HashingEmbedder(),
            SystemClock(),
            MemoryPolicy(write_judge_tenants=("acme",)),
        )
