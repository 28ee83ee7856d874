"""BedrockReranker (bedrock-agent-runtime Rerank) against botocore's Stubber: the exact request (the Stubber
validates it against botocore's service model of the pinned version, so a wrong shape fails here), the answer
in relevance order, and every failure mapped to the domain error recall falls back on. moto has no Rerank.

The model is the one the infra tests enable (tests/infra/infra_support.TEST_RERANK): the IAM contract
(tests/iam) judges these calls against the API function's grant."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError, ReadTimeoutError
from botocore.stub import Stubber

from agent_memory.adapters.aws.bedrock_rerank import RERANK_CLIENT_CONFIG, BedrockReranker
from agent_memory.domain.errors import UpstreamFailed, UpstreamUnavailable
from agent_memory.domain.memory.ports import RerankedDocument
from tests.aws.support import REGION, RERANK_MODEL

MODEL = RERANK_MODEL
ARN = f"arn:aws:bedrock:{REGION}::foundation-model/{MODEL}"
DOCUMENTS = ["Caroline went to the LGBTQ support group on 7 May", "Melanie paints sunsets", "Caroline runs"]


@pytest.fixture
def client() -> Any:
    return boto3.client("bedrock-agent-runtime", region_name=REGION, config=RERANK_CLIENT_CONFIG)


def expected_request(query: str, documents: list[str]) -> dict[str, Any]:
    return {
        "queries": [{"type": "TEXT", "textQuery": {"text": query}}],
        "sources": [
            {"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": text}}}
            for text in documents
        ],
        "rerankingConfiguration": {
            "type": "BEDROCK_RERANKING_MODEL",
            "bedrockRerankingConfiguration": {
                "numberOfResults": len(documents),
                "modelConfiguration": {"modelArn": ARN},
            },
        },
    }


def test_the_request_names_the_model_arn_and_the_answer_comes_most_relevant_first(client):
    reranker = BedrockReranker(client, MODEL)
    assert reranker.model_arn == ARN and reranker.name == "bedrock" and reranker.model == MODEL
    answer = {"results": [{"index": 2, "relevanceScore": 0.31}, {"index": 0, "relevanceScore": 0.97}]}
    with Stubber(client) as stubber:
        stubber.add_response("rerank", answer, expected_request("When did Caroline go?", DOCUMENTS))
        ranked = reranker.rerank("When did Caroline go?", DOCUMENTS)
        stubber.assert_no_pending_responses()
    assert ranked == [RerankedDocument(0, 0.97), RerankedDocument(2, 0.31)]


def test_texts_over_the_apis_limit_are_cut_to_it(client):
    reranker = BedrockReranker(client, MODEL)
    long = "word " * 7000  # 35,000 characters: the API takes at most 32,000 per text
    with Stubber(client) as stubber:
        stubber.add_response(
            "rerank",
            {"results": [{"index": 0, "relevanceScore": 0.5}]},
            expected_request("q", [long[:32_000]]),
        )
        assert reranker.rerank("q", [long]) == [RerankedDocument(0, 0.5)]


def test_the_service_models_limits_are_what_the_adapter_assumes(client):
    """The adapter's bounds come from botocore's model of the pinned version (1-1,000 sources, exactly one
    query, texts ≤ 32,000 characters): a botocore upgrade that changes them fails here."""
    operation = client.meta.service_model.operation_model("Rerank")
    members = operation.input_shape.members
    assert (members["sources"].metadata["min"], members["sources"].metadata["max"]) == (1, 1000)
    assert (members["queries"].metadata["min"], members["queries"].metadata["max"]) == (1, 1)
    text = members["queries"].member.members["textQuery"].members["text"]
    assert text.metadata["max"] == 32_000
    assert client.meta.service_model.signing_name == "bedrock"  # IAM actions are bedrock:*


@pytest.mark.parametrize(
    ("code", "status", "kind"),
    [
        ("ThrottlingException", 429, UpstreamUnavailable),
        ("ServiceQuotaExceededException", 400, UpstreamFailed),
        ("InternalServerException", 500, UpstreamUnavailable),
        ("AccessDeniedException", 403, UpstreamFailed),
        ("ValidationException", 400, UpstreamFailed),
        ("ResourceNotFoundException", 404, UpstreamFailed),
    ],
)
def test_every_service_error_becomes_the_domain_error_recall_falls_back_on(client, code, status, kind):
    reranker = BedrockReranker(client, MODEL)
    with Stubber(client) as stubber:
        stubber.add_client_error(
            "rerank",
            service_error_code=code,
            http_status_code=status,
            expected_params=expected_request("q", DOCUMENTS),
        )
        with pytest.raises(kind) as raised:
            reranker.rerank("q", DOCUMENTS)
    assert raised.value.details == {"model_id": MODEL, "aws_error": code}
    assert code in raised.value.message


class _Failing:
    """A client whose call fails before any answer (a timeout, no route to the endpoint)."""

    def __init__(self, client: Any, error: Exception) -> None:
        self.meta, self.error = client.meta, error

    def rerank(self, **_: Any) -> Any:
        raise self.error


@pytest.mark.parametrize(
    "error",
    [
        ReadTimeoutError(endpoint_url="https://bedrock-agent-runtime.us-east-1.amazonaws.com/rerank"),
        EndpointConnectionError(endpoint_url="https://bedrock-agent-runtime.us-east-1.amazonaws.com/rerank"),
    ],
)
def test_a_timeout_or_no_connection_is_unavailable(client, error):
    reranker = BedrockReranker(_Failing(client, error), MODEL)
    with pytest.raises(UpstreamUnavailable, match=type(error).__name__):
        reranker.rerank("q", DOCUMENTS)


def test_the_timeouts_bound_a_call_and_nothing_is_retried():
    assert RERANK_CLIENT_CONFIG.retries == {"total_max_attempts": 1, "mode": "standard"}
    assert (RERANK_CLIENT_CONFIG.connect_timeout, RERANK_CLIENT_CONFIG.read_timeout) == (1, 2)


def test_no_documents_make_no_call(client):
    with Stubber(client):  # any call would fail: nothing is queued
        assert BedrockReranker(client, MODEL).rerank("q", []) == []


def test_a_full_arn_is_used_as_given(client):
    arn = "arn:aws:bedrock:us-west-2::foundation-model/amazon.rerank-v1:0"
    assert BedrockReranker(client, arn).model_arn == arn
