"""S3 Vectors specifics the shared contract cannot see: request batching and limits, the exact request
shapes, index creation and upgrade, metadata budgets, error translation."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import ANY, Stubber

from agent_memory.adapters.aws.s3vectors_index import (
    MAX_TOTAL_METADATA_BYTES,
    SENTINEL_KEY,
    S3VectorsIndex,
    index_name_for,
)
from agent_memory.adapters.aws.s3vectors_payloads import put_batches
from agent_memory.domain.errors import EmbedderMismatch, TooLarge, UpstreamUnavailable, ValidationFailed
from agent_memory.domain.ports import IndexFilter
from agent_memory.domain.records import EmbedderIdentity, MemoryType, Status
from tests.aws.support import REGION, VECTOR_BUCKET, CallCounter
from tests.contract.search_index_contract import BILLING, IDENTITY, SEARCH, TENANT_A, axis, entry, everywhere

INDEX_A = f"mem-{TENANT_A}"


@pytest.fixture
def index(s3vectors: Any) -> S3VectorsIndex:
    return S3VectorsIndex(VECTOR_BUCKET, lambda tenant: s3vectors)


def many(count: int, prefix: str = "r") -> list[Any]:
    return [entry(f"{prefix}{i}", f"note number {i}", axis(1.0, i / count)) for i in range(count)]


# --------------------------------------------------------------------------- batching and limits


def test_given_1200_entries_when_upserted_then_exactly_three_put_calls_of_at_most_500(
    index: S3VectorsIndex, s3vectors: Any
):
    index.ensure_tenant(TENANT_A, IDENTITY)
    calls = CallCounter(s3vectors)

    index.upsert(TENANT_A, IDENTITY, many(1200))

    sizes = [len(params["vectors"]) for params in calls.params("PutVectors")]
    assert sizes == [500, 500, 200]
    listed = s3vectors.list_vectors(vectorBucketName=VECTOR_BUCKET, indexName=INDEX_A)["vectors"]
    assert len(listed) == 1201  # and the embedder sentinel


def test_given_250_records_when_status_set_then_gets_batched_by_100_and_puts_by_500(
    index: S3VectorsIndex, s3vectors: Any
):
    index.upsert(TENANT_A, IDENTITY, many(250))
    calls = CallCounter(s3vectors)

    index.set_status(TENANT_A, [f"r{i}" for i in range(250)], Status.ARCHIVED)

    assert [len(p["keys"]) for p in calls.params("GetVectors")] == [100, 100, 50]
    assert [len(p["vectors"]) for p in calls.params("PutVectors")] == [250]
    assert all(p["returnData"] and p["returnMetadata"] for p in calls.params("GetVectors"))
    hits = index.query_vector(TENANT_A, IDENTITY, axis(1.0), k=100, where=everywhere())
    assert hits == []  # all archived, default filter is active only


def test_given_1200_records_when_deleted_then_three_delete_calls(index: S3VectorsIndex, s3vectors: Any):
    index.upsert(TENANT_A, IDENTITY, many(1200))
    calls = CallCounter(s3vectors)

    index.delete(TENANT_A, [f"r{i}" for i in range(1200)])

    assert [len(p["keys"]) for p in calls.params("DeleteVectors")] == [500, 500, 200]
    listed = s3vectors.list_vectors(vectorBucketName=VECTOR_BUCKET, indexName=INDEX_A)["vectors"]
    assert [v["key"] for v in listed] == [SENTINEL_KEY]


def test_given_k_above_100_when_queried_then_top_k_capped_at_100(index: S3VectorsIndex, s3vectors: Any):
    index.upsert(TENANT_A, IDENTITY, many(150))
    calls = CallCounter(s3vectors)

    vector_hits = index.query_vector(TENANT_A, IDENTITY, axis(1.0), k=500, where=everywhere())
    keyword_hits = index.query_keyword(TENANT_A, "note number", k=500, where=everywhere())

    assert [p["topK"] for p in calls.params("QueryVectors")] == [100, 100]
    assert len(vector_hits) == 100 and len(keyword_hits) == 100


# --------------------------------------------------------------------------- request shapes


def test_given_filter_when_vector_query_then_service_filter_syntax_and_similarity(
    index: S3VectorsIndex, s3vectors: Any
):
    index.upsert(TENANT_A, IDENTITY, [entry("r1", vector=axis(1.0, 1.0))])
    calls = CallCounter(s3vectors)
    where = IndexFilter(
        namespaces=(BILLING, SEARCH),
        types=(MemoryType.PROJECT_STATE,),
        statuses=(Status.ACTIVE, Status.PENDING),
    )

    (hit,) = index.query_vector(TENANT_A, IDENTITY, axis(1.0, 0.0), k=5, where=where)

    (params,) = calls.params("QueryVectors")
    assert params["filter"] == {
        "$and": [
            {"namespace": {"$in": [BILLING, SEARCH]}},
            {"type": {"$eq": "project_state"}},
            {"status": {"$in": ["active", "pending"]}},
            {"embedder": {"$eq": IDENTITY.key}},
        ]
    }
    assert params["returnDistance"] is True and "returnMetadata" not in params
    assert hit.score == pytest.approx(0.70710678, abs=1e-6)  # 1 - cosine distance


def test_given_keyword_query_then_tokenized_text_against_text_key_with_scores(
    index: S3VectorsIndex, s3vectors: Any
):
    index.upsert(TENANT_A, IDENTITY, [entry("r1", "The Payment_Service retries Webhooks")])
    calls = CallCounter(s3vectors)

    hits = index.query_keyword(
        TENANT_A, "Which webhooks does the payment service retry?", k=5, where=everywhere()
    )

    (params,) = calls.params("QueryVectors")
    # stemmed terms first, then the words as written where they differ (domain.text.index_query_terms)
    assert params["queryTexts"] == [
        {"text": "webhook payment servic retry webhooks service", "metadataKey": "text"}
    ]
    assert "queryVector" not in params and params["returnScores"] is True
    assert [h.record_id for h in hits] == ["r1"] and hits[0].score > 0
    stored = s3vectors.get_vectors(
        vectorBucketName=VECTOR_BUCKET, indexName=INDEX_A, keys=["r1"], returnMetadata=True
    )
    assert stored["vectors"][0]["metadata"] == {
        "namespace": BILLING,
        "type": "project_state",
        "status": "active",
        "embedder": IDENTITY.key,
        "text": "payment servic retri webhook",  # stemmed (domain.text.index_terms)
    }


def test_given_stubbed_service_when_queried_then_exact_request_and_distance_converted():
    # Given a real s3vectors client with a Stubber (no moto): the request must match the service model
    client = boto3.client("s3vectors", region_name=REGION)
    index = S3VectorsIndex(VECTOR_BUCKET, lambda tenant: client)
    stubber = Stubber(client)
    stubber.add_response(
        "get_index",
        {
            "index": {
                "vectorBucketName": VECTOR_BUCKET,
                "indexName": INDEX_A,
                "indexArn": f"arn:aws:s3vectors:{REGION}:123456789012:bucket/{VECTOR_BUCKET}/index/{INDEX_A}",
                "creationTime": "2026-11-30T00:00:00Z",
                "dataType": "float32",
                "dimension": 8,
                "distanceMetric": "cosine",
                "indexMode": "ENHANCED",
                "metadataConfiguration": {
                    "nonFilterableMetadataKeys": ["text"],
                    "textSearchConfigurations": [{"metadataKey": "text", "status": "ACTIVE"}],
                },
            }
        },
        {"vectorBucketName": VECTOR_BUCKET, "indexName": INDEX_A},
    )
    stubber.add_response(
        "get_vectors",
        {"vectors": [{"key": SENTINEL_KEY, "metadata": {"embedder": IDENTITY.key}}]},
        {
            "vectorBucketName": VECTOR_BUCKET,
            "indexName": INDEX_A,
            "keys": [SENTINEL_KEY],
            "returnMetadata": True,
        },
    )
    stubber.add_response(
        "query_vectors",
        {
            "vectors": [{"key": "r1", "distance": 0.25}, {"key": "r2", "distance": 1.5}],
            "distanceMetric": "cosine",
        },
        {
            "vectorBucketName": VECTOR_BUCKET,
            "indexName": INDEX_A,
            "topK": 2,
            "queryVector": {"float32": axis(1.0)},
            "filter": {"$and": [{"namespace": {"$eq": BILLING}}, {"status": {"$eq": "active"}}, ANY]},
            "returnDistance": True,
        },
    )

    # When queried
    with stubber:
        hits = index.query_vector(
            TENANT_A, IDENTITY, axis(1.0), k=2, where=IndexFilter(namespaces=(BILLING,))
        )

    # Then cosine distances became similarities
    assert [(h.record_id, h.score) for h in hits] == [("r1", 0.75), ("r2", -0.5)]
    stubber.assert_no_pending_responses()


# --------------------------------------------------------------------------- index life cycle


def test_given_new_tenant_when_ensured_then_index_created_for_cosine_and_full_text(
    index: S3VectorsIndex, s3vectors: Any
):
    identity = EmbedderIdentity(name="amazon.titan-embed-text-v2:0", dimensions=256)

    index.ensure_tenant(TENANT_A, identity)

    info = s3vectors.get_index(vectorBucketName=VECTOR_BUCKET, indexName=INDEX_A)["index"]
    assert (info["dimension"], info["distanceMetric"], info["dataType"]) == (256, "cosine", "float32")
    assert info["metadataConfiguration"]["nonFilterableMetadataKeys"] == ["text"]
    assert [c["metadataKey"] for c in info["metadataConfiguration"]["textSearchConfigurations"]] == ["text"]
    sentinel = s3vectors.get_vectors(
        vectorBucketName=VECTOR_BUCKET, indexName=INDEX_A, keys=[SENTINEL_KEY], returnMetadata=True
    )["vectors"][0]
    assert sentinel["metadata"] == {"embedder": identity.key}


def test_given_index_created_elsewhere_without_text_search_when_ensured_then_upgraded(
    index: S3VectorsIndex, s3vectors: Any
):
    # Given an index as CloudFormation creates it (no text search) in CLASSIC mode
    s3vectors.create_index(
        vectorBucketName=VECTOR_BUCKET,
        indexName=INDEX_A,
        dataType="float32",
        dimension=8,
        distanceMetric="cosine",
        metadataConfiguration={"nonFilterableMetadataKeys": ["text"]},
    )
    s3vectors.update_index_mode(vectorBucketName=VECTOR_BUCKET, indexName=INDEX_A, indexMode="CLASSIC")

    # When the tenant is ensured and used
    index.ensure_tenant(TENANT_A, IDENTITY)
    index.upsert(TENANT_A, IDENTITY, [entry("r1", "kafka consumer lag")])

    # Then the index is ENHANCED with `text` searchable, and keyword search works
    info = s3vectors.get_index(vectorBucketName=VECTOR_BUCKET, indexName=INDEX_A)["index"]
    assert info["indexMode"] == "ENHANCED"
    assert [c["metadataKey"] for c in info["metadataConfiguration"]["textSearchConfigurations"]] == ["text"]
    assert [h.record_id for h in index.query_keyword(TENANT_A, "kafka lag", k=5, where=everywhere())] == [
        "r1"
    ]


def test_given_index_of_other_dimensions_when_ensured_then_mismatch(index: S3VectorsIndex):
    index.ensure_tenant(TENANT_A, IDENTITY)

    with pytest.raises(EmbedderMismatch, match="8 dimensions"):
        index.ensure_tenant(TENANT_A, EmbedderIdentity(name=IDENTITY.name, dimensions=16))


def test_given_fresh_process_when_querying_with_other_identity_then_mismatch_from_sentinel(
    index: S3VectorsIndex, s3vectors: Any
):
    # Given an index written by one process
    index.upsert(TENANT_A, IDENTITY, [entry("r1")])
    fresh = S3VectorsIndex(VECTOR_BUCKET, lambda tenant: s3vectors)  # a new Lambda container: empty cache

    # When another identity of the same dimension queries, then the sentinel gives it away
    with pytest.raises(EmbedderMismatch):
        fresh.query_vector(
            TENANT_A, EmbedderIdentity(name="other", dimensions=8), axis(1.0), k=1, where=everywhere()
        )
    assert [
        h.record_id for h in fresh.query_vector(TENANT_A, IDENTITY, axis(1.0), k=1, where=everywhere())
    ] == ["r1"]


def test_given_unmanaged_deployment_without_index_when_ensured_then_clear_not_found(s3vectors: Any):
    index = S3VectorsIndex(VECTOR_BUCKET, lambda tenant: s3vectors, manage_indexes=False)

    with pytest.raises(Exception, match="onboard the tenant"):
        index.ensure_tenant(TENANT_A, IDENTITY)


@pytest.mark.parametrize("tenant", ["ab", "Acme", "acme_corp", "-acme", "a" * 41])
def test_given_invalid_tenant_when_index_name_derived_then_validation_error(tenant: str):
    with pytest.raises(ValidationFailed):
        index_name_for(tenant)


def test_given_longest_tenant_when_index_name_derived_then_within_63_chars():
    assert len(index_name_for("a" * 40)) == 44
    assert len(index_name_for("t" * 40, prefix="memory-index-of-tenant-")) == 63
    with pytest.raises(ValidationFailed):
        index_name_for("t" * 40, prefix="memory-index-of-tenants-")


# --------------------------------------------------------------------------- metadata budgets


def test_given_huge_text_when_upserted_then_text_cut_at_whole_term_within_40kb(
    index: S3VectorsIndex, s3vectors: Any
):
    words = " ".join(f"ähnlich{i}" for i in range(12_000))  # ~100 KB of UTF-8 with 2-byte characters

    index.upsert(TENANT_A, IDENTITY, [entry("big", words)])

    metadata = s3vectors.get_vectors(
        vectorBucketName=VECTOR_BUCKET, indexName=INDEX_A, keys=["big"], returnMetadata=True
    )["vectors"][0]["metadata"]
    size = len(json.dumps(metadata, ensure_ascii=False, separators=(",", ":")).encode())
    assert MAX_TOTAL_METADATA_BYTES - 1024 < size <= MAX_TOTAL_METADATA_BYTES
    last = metadata["text"].split(" ")[-1]
    assert last.startswith("ähnlich") and last[len("ähnlich") :].isdigit()
    assert [h.record_id for h in index.query_keyword(TENANT_A, "ähnlich0", k=5, where=everywhere())] == [
        "big"
    ]


def test_given_filterable_metadata_over_2kb_when_upserted_then_too_large(index: S3VectorsIndex):
    long_namespace = "/" + "/".join("n" * 64 for _ in range(8))  # the longest valid namespace: 520 chars
    identity = EmbedderIdentity(name="m" * 1600, dimensions=8)  # an absurdly long model name

    with pytest.raises(TooLarge, match="filterable metadata"):
        index.upsert(TENANT_A, identity, [entry("r1", namespace=long_namespace)])


@pytest.mark.parametrize("vector", [axis(0.0), axis(float("nan")), axis(float("inf"))])
def test_given_unusable_vector_when_upserted_then_validation_error(
    index: S3VectorsIndex, vector: list[float]
):
    with pytest.raises(ValidationFailed):
        index.upsert(TENANT_A, IDENTITY, [entry("r1", vector=vector)])


# --------------------------------------------------------------------------- errors


def test_given_throttling_after_retries_when_queried_then_upstream_unavailable():
    client = boto3.client("s3vectors", region_name=REGION)
    index = S3VectorsIndex(VECTOR_BUCKET, lambda tenant: client)
    stubber = Stubber(client)
    stubber.add_client_error("get_index", "TooManyRequestsException", "Slow down", 429)

    with stubber, pytest.raises(UpstreamUnavailable, match="TooManyRequestsException"):
        index.query_keyword(TENANT_A, "anything", k=5, where=everywhere())


def test_given_access_denied_when_queried_then_error_is_not_hidden():
    client = boto3.client("s3vectors", region_name=REGION)
    index = S3VectorsIndex(VECTOR_BUCKET, lambda tenant: client)
    stubber = Stubber(client)
    stubber.add_client_error("get_index", "AccessDeniedException", "not your index", 403)

    with stubber, pytest.raises(ClientError, match="AccessDenied"):
        index.query_keyword(TENANT_A, "anything", k=5, where=everywhere())


def test_given_unsupported_filter_operator_when_sent_to_fake_service_then_validation_exception(
    index: S3VectorsIndex, s3vectors: Any
):
    # The test double rejects what the service rejects, so adapter bugs cannot hide behind it.
    index.upsert(TENANT_A, IDENTITY, [entry("r1")])
    with pytest.raises(ClientError, match="ValidationException"):
        s3vectors.query_vectors(
            vectorBucketName=VECTOR_BUCKET,
            indexName=INDEX_A,
            topK=1,
            queryVector={"float32": axis(1.0)},
            filter={"namespace": {"$regex": ".*"}},
        )
    with pytest.raises(ClientError, match="not filterable"):
        s3vectors.query_vectors(
            vectorBucketName=VECTOR_BUCKET,
            indexName=INDEX_A,
            topK=1,
            queryVector={"float32": axis(1.0)},
            filter={"text": {"$eq": "r1"}},
        )


def test_given_vectors_with_large_metadata_when_batched_then_requests_stay_under_16_mib():
    # 500 vectors of ~39 KB metadata each would be ~20 MB in one request (service maximum: 20 MiB)
    vectors = [
        {"key": f"r{i}", "data": {"float32": axis(1.0)}, "metadata": {"text": "x" * 39_000}}
        for i in range(500)
    ]

    batches = list(put_batches(vectors))

    assert len(batches) == 2 and sum(len(b) for b in batches) == 500
    for batch in batches:
        assert len(json.dumps({"vectors": batch}).encode()) <= 16 * 1024 * 1024
