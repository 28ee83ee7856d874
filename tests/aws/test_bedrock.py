"""Bedrock adapters against botocore's Stubber (exact request shapes, real response shapes) and, for
concurrency, a client double that records how many calls overlap."""

from __future__ import annotations

import io
import json
import threading
import time
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from agent_memory.adapters.aws.bedrock import Backoff, BedrockTokenCounter, TitanEmbedder
from agent_memory.domain.errors import UpstreamUnavailable, ValidationFailed
from tests.aws.support import REGION

MODEL = "amazon.titan-embed-text-v2:0"


def titan_response(embedding: list[float], tokens: int = 7) -> dict[str, Any]:
    """InvokeModel's response as Bedrock returns it for Titan Text Embeddings v2."""
    payload = json.dumps(
        {"embedding": embedding, "inputTextTokenCount": tokens, "embeddingsByType": {"float": embedding}}
    ).encode()
    return {"body": StreamingBody(io.BytesIO(payload), len(payload)), "contentType": "application/json"}


def titan_request(text: str, dimensions: int = 256) -> dict[str, Any]:
    return {
        "modelId": MODEL,
        "body": json.dumps({"inputText": text, "dimensions": dimensions, "normalize": True}),
        "contentType": "application/json",
        "accept": "application/json",
    }


class RecordingSleep:
    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def bedrock() -> Any:
    return boto3.client("bedrock-runtime", region_name=REGION)


def test_given_text_when_embedded_then_titan_v2_request_and_vector(bedrock: Any):
    embedder = TitanEmbedder(bedrock, dimensions=256)
    vector = [0.01 * i for i in range(256)]
    with Stubber(bedrock) as stubber:
        stubber.add_response("invoke_model", titan_response(vector), titan_request("Postgres 16 in billing"))

        result = embedder.embed_query("Postgres 16 in billing")

        stubber.assert_no_pending_responses()
    assert result == pytest.approx(vector)
    assert embedder.identity.name == MODEL
    assert (embedder.identity.dimensions, embedder.identity.normalized) == (256, True)


def test_given_throttling_twice_when_embedded_then_retried_with_jittered_backoff(bedrock: Any):
    sleep = RecordingSleep()
    backoff = Backoff(max_attempts=4, base_delay=0.5, max_delay=8.0, sleep=sleep, rand=lambda: 0.5)
    embedder = TitanEmbedder(bedrock, dimensions=256, backoff=backoff)
    with Stubber(bedrock) as stubber:
        stubber.add_client_error("invoke_model", "ThrottlingException", "Too many requests", 429)
        stubber.add_client_error("invoke_model", "ServiceUnavailableException", "Busy", 503)
        stubber.add_response("invoke_model", titan_response([1.0] * 256), titan_request("hello"))

        assert embedder.embed_query("hello") == [1.0] * 256

        stubber.assert_no_pending_responses()
    # Full jitter: rand() x min(cap, base x 2^attempt), here rand() = 0.5
    assert sleep.delays == [0.25, 0.5]


def test_given_model_never_ready_when_embedded_then_upstream_unavailable_after_max_attempts(bedrock: Any):
    sleep = RecordingSleep()
    embedder = TitanEmbedder(bedrock, dimensions=256, backoff=Backoff(max_attempts=3, sleep=sleep))
    with Stubber(bedrock) as stubber:
        for _ in range(3):
            stubber.add_client_error("invoke_model", "ModelNotReadyException", "warming up", 429)

        with pytest.raises(UpstreamUnavailable, match="3 times") as raised:
            embedder.embed_query("hello")

        stubber.assert_no_pending_responses()
    assert raised.value.code == "upstream_unavailable"
    assert len(sleep.delays) == 2  # no pointless wait after the last attempt
    assert all(0 <= d <= 8.0 for d in sleep.delays)


def test_given_invalid_input_when_embedded_then_validation_error_without_retry(bedrock: Any):
    sleep = RecordingSleep()
    embedder = TitanEmbedder(bedrock, dimensions=256, backoff=Backoff(sleep=sleep))
    with Stubber(bedrock) as stubber:
        stubber.add_client_error("invoke_model", "ValidationException", "Malformed input request", 400)

        with pytest.raises(ValidationFailed, match="Malformed input"):
            embedder.embed_query("hello")
    assert sleep.delays == []


def test_given_no_model_access_when_embedded_then_actionable_upstream_error(bedrock: Any):
    embedder = TitanEmbedder(bedrock, dimensions=256, backoff=Backoff(sleep=RecordingSleep()))
    with Stubber(bedrock) as stubber:
        stubber.add_client_error("invoke_model", "AccessDeniedException", "no access", 403)

        with pytest.raises(UpstreamUnavailable, match="model access"):
            embedder.embed_query("hello")


def test_given_empty_or_oversized_text_when_embedded_then_refused_before_any_call(bedrock: Any):
    embedder = TitanEmbedder(bedrock, dimensions=256)
    with Stubber(bedrock):  # no responses queued: any call would fail the test
        with pytest.raises(ValidationFailed):
            embedder.embed_documents(["fine", "   "])
        with pytest.raises(Exception, match="50000"):
            embedder.embed_query("x" * 50_001)


def test_given_unsupported_titan_dimensions_then_rejected_at_construction(bedrock: Any):
    with pytest.raises(ValueError, match="256, 512, 1024"):
        TitanEmbedder(bedrock, dimensions=384)


class SlowEchoClient:
    """Stands in for bedrock-runtime: returns a vector encoding the text's number, records overlap."""

    def __init__(self) -> None:
        self.active = 0
        self.peak = 0
        self.lock = threading.Lock()

    def invoke_model(self, **params: Any) -> dict[str, Any]:
        text = json.loads(params["body"])["inputText"]
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(0.01)
        with self.lock:
            self.active -= 1
        number = float(text.split()[-1])
        return titan_response([number] + [0.0] * 255)


def test_given_batch_when_embedded_then_bounded_concurrency_and_order_kept():
    client = SlowEchoClient()
    embedder = TitanEmbedder(client, dimensions=256, max_concurrency=3)
    texts = [f"text {i}" for i in range(20)]

    vectors = embedder.embed_documents(texts)

    assert [v[0] for v in vectors] == [float(i) for i in range(20)]
    assert 1 < client.peak <= 3


def test_given_converse_input_when_counted_then_count_tokens_api(bedrock: Any):
    counter = BedrockTokenCounter(bedrock, "anthropic.claude-haiku-4-5-20251001-v1:0")
    messages = [{"role": "user", "content": [{"text": "What do you remember about billing?"}]}]
    system = [{"text": "You are a helpful agent."}, {"cachePoint": {"type": "default"}}]
    with Stubber(bedrock) as stubber:
        stubber.add_response(
            "count_tokens",
            {"inputTokens": 42},
            {
                "modelId": "anthropic.claude-haiku-4-5-20251001-v1:0",
                "input": {"converse": {"messages": messages, "system": system}},
            },
        )

        assert counter.count(messages, system=system) == 42

        stubber.assert_no_pending_responses()
