"""BedrockTextModel (Converse) against botocore's Stubber: the exact request, the answer's text, retries on
throttling with recorded backoff, and a clear error when the model returns no text."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from agent_memory.adapters.aws.bedrock import Backoff
from agent_memory.adapters.aws.bedrock_text import BedrockTextModel
from agent_memory.domain.dreaming.extraction import DailyDocument, LlmExtractor
from agent_memory.domain.errors import UpstreamUnavailable
from tests.aws.support import REGION

# The dreaming model the infra tests deploy: the IAM contract (tests/iam) judges these calls against its grant.
MODEL = "eu.anthropic.claude-haiku-4-5-20251001-v1:0"


def converse_response(text: str, stop: str = "end_turn") -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": stop,
        "usage": {"inputTokens": 120, "outputTokens": 30, "totalTokens": 150},
        "metrics": {"latencyMs": 420},
    }


def converse_request(system: str, prompt: str, max_tokens: int = 2000) -> dict[str, Any]:
    return {
        "modelId": MODEL,
        "system": [{"text": system}],
        "messages": [{"role": "user", "content": [{"text": prompt}]}],
        "inferenceConfig": {"maxTokens": max_tokens, "temperature": 0.0},
    }


@pytest.fixture
def bedrock() -> Any:
    return boto3.client("bedrock-runtime", region_name=REGION)


def test_given_a_prompt_when_completed_then_converse_request_and_answer_text(bedrock):
    model = BedrockTextModel(bedrock, MODEL)
    with Stubber(bedrock) as stubber:
        stubber.add_response(
            "converse", converse_response('{"memories": []}'), converse_request("sys", "hello")
        )
        assert model.complete(system="sys", prompt="hello") == '{"memories": []}'
        stubber.assert_no_pending_responses()


def test_given_throttling_when_completed_then_retried_with_backoff(bedrock):
    delays: list[float] = []
    model = BedrockTextModel(
        bedrock, MODEL, backoff=Backoff(max_attempts=3, sleep=delays.append, rand=lambda: 1.0)
    )
    with Stubber(bedrock) as stubber:
        stubber.add_client_error("converse", "ThrottlingException", "slow down", 429)
        stubber.add_response("converse", converse_response("ok"), converse_request("s", "p"))
        assert model.complete(system="s", prompt="p") == "ok"
    assert delays == [0.25]


def test_given_no_text_in_the_answer_then_upstream_unavailable(bedrock):
    model = BedrockTextModel(bedrock, MODEL)
    empty = {**converse_response(""), "output": {"message": {"role": "assistant", "content": []}}}
    with Stubber(bedrock) as stubber:
        stubber.add_response(
            "converse", {**empty, "stopReason": "guardrail_intervened"}, converse_request("s", "p")
        )
        with pytest.raises(UpstreamUnavailable, match="returned no text"):
            model.complete(system="s", prompt="p")


def test_given_the_llm_extractor_on_bedrock_then_each_strategy_is_one_converse_call(bedrock):
    extractor = LlmExtractor(BedrockTextModel(bedrock, MODEL), strategies=("user_preference",))
    document = DailyDocument(
        "memory/2026-11-30.md", "2026-11-30", "- 09:00 I prefer tabs over spaces\n", "/users/u-42"
    )
    answer = '{"memories": [{"text": "The user prefers tabs over spaces.", "lines": [1, 1]}]}'
    with Stubber(bedrock) as stubber:
        stubber.add_response("converse", converse_response(answer))
        result = extractor.extract(document)
    assert [(e.text, e.ref) for e in result.extracts] == [
        ("The user prefers tabs over spaces.", "memory/2026-11-30.md#L1-L1")
    ]


def test_given_a_judge_prompt_when_completed_with_usage_then_converse_token_usage_is_returned(bedrock):
    model = BedrockTextModel(bedrock, MODEL)
    with Stubber(bedrock) as stubber:
        stubber.add_response(
            "converse",
            converse_response('{"action": "ADD", "id": null, "reason": "new"}'),
            converse_request("sys", "judge", max_tokens=200),
        )
        completion = model.complete_with_usage(system="sys", prompt="judge", max_tokens=200)

    assert completion.text.startswith('{"action": "ADD"')
    assert (completion.input_tokens, completion.output_tokens) == (120, 30)
