"""`"rerank": "bedrock"` on POST /v1/recall, through the public API of both runtimes.

AWS: the Lambda handler with Bedrock's Rerank API through the real adapter on a botocore Stubber (the request is
validated against botocore's model; the IAM contract judges the call against the API function's grant). The
reranker's answer reorders the candidates and its scores come back; a throttled or refused call keeps the hybrid
order and says so; a recall that does not ask makes no call. Local: no reranker, a precise 422."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from agent_memory.adapters.aws.bedrock_rerank import RERANK_CLIENT_CONFIG
from tests.aws.support import REGION
from tests.behaviour.conftest import Api, serve_api

FACTS = [
    "Caroline went to the LGBTQ support group on 7 May",
    "Caroline is researching adoption agencies",
    "Melanie painted a sunrise over the lake",
    "Caroline gave a talk at the school about her transition",
]
QUERY = "what did Caroline do at the support group"


@pytest.fixture(scope="module", params=["local", "aws"])
def served(request, tmp_path_factory) -> Iterator[tuple[Api, Stubber | None]]:
    if request.param == "local":
        for api in serve_api("local", tmp_path_factory):
            yield api, None
        return
    client = boto3.client("bedrock-agent-runtime", region_name=REGION, config=RERANK_CLIENT_CONFIG)
    with Stubber(client) as stubber:
        for api in serve_api("aws", tmp_path_factory, rerank_client=client):
            yield api, stubber


def seeded(api: Api) -> tuple[Any, str]:
    client = api.client("alpha")
    namespace = f"/projects/rerank-{uuid.uuid4().hex[:8]}"
    response = client.post(
        "/v1/memories/batch", json={"items": [{"content": text, "namespace": namespace} for text in FACTS]}
    )
    assert response.status_code in (200, 201), response.text
    return client, namespace


def recall(client: Any, namespace: str, **options: Any) -> Any:
    return client.post("/v1/recall", json={"query": QUERY, "namespaces": [namespace], "k": 3, **options})


def test_without_rerank_the_answer_says_nothing_of_it_and_no_call_is_made(served):
    (api, stubber) = served
    client, namespace = seeded(api)
    response = recall(client, namespace)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["rerank"] is None
    assert all(hit["rerank_score"] is None for hit in body["results"])
    if stubber is not None:
        stubber.assert_no_pending_responses()  # nothing was queued, and nothing was called


def test_locally_a_bedrock_rerank_is_refused_with_what_to_do(served):
    (api, stubber) = served
    if stubber is not None:
        pytest.skip("the AWS runtime of this module has the reranker")
    client, namespace = seeded(api)
    response = recall(client, namespace, rerank="bedrock")
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "validation_failed"
    assert "not available on this deployment" in body["message"] and "AWS runtime" in body["message"]
    assert body["details"] == {"rerank": "bedrock", "available": []}


def test_an_unknown_reranker_is_refused_by_the_schema(served):
    (api, _) = served
    client, namespace = seeded(api)
    response = recall(client, namespace, rerank="cohere")
    assert response.status_code == 422, response.text
    assert "rerank" in response.text


def _answer(order: list[int]) -> dict[str, Any]:
    return {"results": [{"index": i, "relevanceScore": round(0.9 - 0.1 * n, 2)} for n, i in enumerate(order)]}


def test_in_aws_the_rerankers_order_and_scores_come_back(served):
    (api, stubber) = served
    if stubber is None:
        pytest.skip("the local runtime has no reranker")
    client, namespace = seeded(api)
    hybrid = [hit["memory"]["id"] for hit in recall(client, namespace, k=4).json()["results"]]
    stubber.add_response(
        "rerank", _answer([3, 1, 0, 2]), {"queries": ANY, "sources": ANY, "rerankingConfiguration": ANY}
    )
    response = recall(client, namespace, rerank="bedrock")
    assert response.status_code == 200, response.text
    body = response.json()
    stubber.assert_no_pending_responses()
    assert [hit["memory"]["id"] for hit in body["results"]] == [hybrid[3], hybrid[1], hybrid[0]]
    assert [hit["rerank_score"] for hit in body["results"]] == [0.9, 0.8, 0.7]
    rerank = body["rerank"]
    assert rerank["applied"] is True and rerank["fallback"] is None
    assert (rerank["reranker"], rerank["model"], rerank["candidates"]) == (
        "bedrock",
        "cohere.rerank-v3-5:0",
        4,
    )


@pytest.mark.parametrize(("code", "status"), [("ThrottlingException", 429), ("AccessDeniedException", 403)])
def test_in_aws_a_failing_reranker_keeps_the_hybrid_order_and_says_why(served, code, status):
    (api, stubber) = served
    if stubber is None:
        pytest.skip("the local runtime has no reranker")
    client, namespace = seeded(api)
    hybrid = [hit["memory"]["id"] for hit in recall(client, namespace).json()["results"]]
    stubber.add_client_error("rerank", service_error_code=code, http_status_code=status)
    response = recall(client, namespace, rerank="bedrock")
    assert response.status_code == 200, response.text
    body = response.json()
    assert [hit["memory"]["id"] for hit in body["results"]] == hybrid
    assert body["rerank"]["applied"] is False and code in body["rerank"]["fallback"]
    assert all(hit["rerank_score"] is None for hit in body["results"])
