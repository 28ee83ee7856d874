"""The optional LLM write judge through the public API, on both runtimes (local: the explicit model port; AWS:
the Lambda handler with Bedrock Converse through the real adapter, whose call the IAM contract judges against
the API function's grant). The model's answers are scripted, malformed ones and errors included: the verdict
and its reason reach the caller and the change log; anything unusable falls back to the rules; nothing is
ever deleted."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from agent_memory.domain.memory.policy import MemoryPolicy
from tests.behaviour.conftest import Api, serve_api
from tests.contract.judge_fakes import INPUT_TOKENS, OUTPUT_TOKENS, verdict

OLD = "The billing service stores invoices in Postgres"
NEW = "The billing service stores invoices in DynamoDB"
TOKENS = f"({INPUT_TOKENS} input + {OUTPUT_TOKENS} output tokens)"

# The next answer of the model: a text, an exception, or a function of the prompt.
answer: dict[str, Any] = {"next": ""}


def script(prompt: str) -> str | Exception:
    value = answer["next"]
    return value(prompt) if callable(value) else value


@pytest.fixture(scope="module", params=["local", "aws"])
def judged(request, tmp_path_factory) -> Iterator[Api]:
    policy = MemoryPolicy(write_judge_tenants=("alpha",))
    yield from serve_api(request.param, tmp_path_factory, policy=policy, write_judge=script)


def seed(api: Api, who: str = "alpha") -> tuple[Any, str, dict]:
    client = api.client(who)
    namespace = f"/judge/{uuid.uuid4().hex[:8]}"
    asked = len(api.judge_prompts)
    old = client.post("/v1/memories", json={"content": OLD, "namespace": namespace})
    assert old.status_code == 201, old.text
    assert len(api.judge_prompts) == asked  # no neighbours yet: the model is not asked
    return client, namespace, old.json()["memory"]


def test_update_verdict_supersedes_with_verdict_reason_and_tokens_in_the_change_log(judged):
    client, namespace, old = seed(judged)
    answer["next"] = verdict("UPDATE", old["id"], "the invoices moved to DynamoDB")
    new = client.post("/v1/memories", json={"content": NEW, "namespace": namespace})
    assert new.status_code == 201, new.text
    body = new.json()
    assert body["decision"] == "superseded"
    assert body["reason"] == f"write judge: UPDATE {old['id']}: the invoices moved to DynamoDB {TOKENS}"
    assert old["id"] in judged.judge_prompts[-1] and NEW in judged.judge_prompts[-1]
    assert client.get(f"/v1/memories/{old['id']}").json()["status"] == "superseded"
    history = client.get(f"/v1/memories/{old['id']}/history").json()
    assert any(c["reason"] and c["reason"].startswith("write judge: UPDATE") for c in history["changes"])


def test_delete_verdict_archives_the_target_and_keeps_both(judged):
    client, namespace, old = seed(judged)
    answer["next"] = verdict("DELETE", old["id"], "no longer true")
    new = client.post("/v1/memories", json={"content": NEW, "namespace": namespace})
    assert new.status_code == 201, new.text
    assert new.json()["decision"] == "added" and "write judge: DELETE" in new.json()["reason"]
    archived = client.get(f"/v1/memories/{old['id']}")
    assert archived.status_code == 200 and archived.json()["status"] == "archived"  # archived, not deleted


def test_none_verdict_merges_a_restatement_into_the_target(judged):
    client, namespace, old = seed(judged)
    answer["next"] = "```json\n" + verdict("NONE", old["id"], "already known") + "\n```"
    restated = "Invoices of the billing service are stored in Postgres"
    new = client.post("/v1/memories", json={"content": restated, "namespace": namespace})
    assert new.status_code == 200, new.text  # nothing new was created
    assert new.json()["decision"] == "merged" and new.json()["memory"]["id"] == old["id"]
    assert new.json()["reason"].startswith(f"write judge: NONE {old['id']}: already known")


def test_a_none_verdict_that_would_fold_a_new_value_away_keeps_both(judged):
    """A judge that answers badly: NONE for Postgres → DynamoDB. The never-lose rule refuses the merge."""
    client, namespace, old = seed(judged)
    answer["next"] = verdict("NONE", old["id"], "already known")
    new = client.post("/v1/memories", json={"content": NEW, "namespace": namespace})
    assert new.status_code == 201, new.text
    body = new.json()
    assert body["decision"] != "merged" and body["memory"]["id"] != old["id"]
    assert body["memory"]["content"] == NEW and "merge refused" in body["reason"]


@pytest.mark.parametrize(
    "bad",
    [
        "Sure! I would update the older memory.",
        "{not json",
        verdict("REPLACE", None),
        verdict("UPDATE", "mem_never_offered"),
        ClientError({"Error": {"Code": "ValidationException", "Message": "model not enabled"}}, "Converse"),
    ],
    ids=["prose", "broken-json", "unknown-action", "unknown-id", "model-error"],
)
def test_malformed_answers_and_model_errors_fall_back_to_the_rules(judged, bad):
    client, namespace, old = seed(judged)
    answer["next"] = bad
    asked = len(judged.judge_prompts)
    new = client.post("/v1/memories", json={"content": NEW, "namespace": namespace})
    assert new.status_code in (200, 201), new.text  # a failing judge never fails the write
    assert len(judged.judge_prompts) == asked + 1
    assert "write judge" not in new.json()["reason"]
    kept = client.get(f"/v1/memories/{old['id']}")
    assert kept.status_code == 200 and kept.json()["status"] in ("active", "superseded", "pending")


def test_tenants_the_policy_does_not_name_are_never_judged(judged):
    client, namespace, _ = seed(judged, who="beta")
    answer["next"] = verdict("ADD", None)
    asked = len(judged.judge_prompts)
    new = client.post("/v1/memories", json={"content": NEW, "namespace": namespace})
    assert new.status_code == 201, new.text
    assert len(judged.judge_prompts) == asked and "write judge" not in new.json()["reason"]
