"""The S3 Vectors adapter against the real service model, not against the suite's own fake.

The rest of the suite grades the adapter with `moto_s3vectors` (QueryVectors, filters, BM25 are written by
this project), so the fake and the adapter could drift away from the service together. Here the adapter runs
on a real boto3 `s3vectors` client wrapped in `botocore.stub.Stubber`: every request is checked by botocore
against the service's published model (names, types, required members) before the Stubber compares it with
the exact parameters expected below, and every canned response is checked against the output model when it is
queued. Each operation the adapter calls (read from its source) has a scenario here, and the fake's raw
answers are checked against the same output model.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ParamValidationError
from botocore.stub import Stubber
from botocore.validate import ParamValidator

from agent_memory.adapters.aws import s3vectors_index
from agent_memory.adapters.aws.s3vectors_index import SENTINEL_KEY, S3VectorsIndex
from agent_memory.domain.ports import Hit, IndexFilter
from agent_memory.domain.records import MemoryType, Status
from tests.aws.support import REGION, VECTOR_BUCKET
from tests.contract.search_index_contract import (
    BILLING,
    DIMS,
    IDENTITY,
    SEARCH,
    TENANT_A,
    TENANT_B,
    axis,
    entry,
)

INDEX = f"mem-{TENANT_A}"
ACCOUNT = "123456789012"
INDEX_ARN = f"arn:aws:s3vectors:{REGION}:{ACCOUNT}:bucket/{VECTOR_BUCKET}/index/{INDEX}"
KMS_KEY = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
# Every request of the adapter names the bucket and the tenant's index.
ADDRESS = {"vectorBucketName": VECTOR_BUCKET, "indexName": INDEX}
SENTINEL_READ = {"keys": [SENTINEL_KEY], "returnMetadata": True}


def index_info(*, mode: str = "ENHANCED", text_search: str | None = "ACTIVE") -> dict[str, Any]:
    """A GetIndex answer for the tenant's index (8 dimensions, cosine), with or without full-text search."""
    configuration: dict[str, Any] = {"nonFilterableMetadataKeys": ["text"]}
    if text_search is not None:
        configuration["textSearchConfigurations"] = [{"metadataKey": "text", "status": text_search}]
    return {
        "index": {
            "vectorBucketName": VECTOR_BUCKET,
            "indexName": INDEX,
            "indexArn": INDEX_ARN,
            "creationTime": "2026-11-30T00:00:00Z",
            "dataType": "float32",
            "dimension": DIMS,
            "distanceMetric": "cosine",
            "indexMode": mode,
            "metadataConfiguration": configuration,
        }
    }


class Service:
    """A real `s3vectors` client behind a Stubber: a call nobody queued, a request that breaks the service
    model, or one whose parameters differ from the queued ones fails the test."""

    def __init__(self) -> None:
        self.client = boto3.client("s3vectors", region_name=REGION)
        self.stubber = Stubber(self.client)
        self.operations: list[str] = []
        self.client.meta.events.register("provide-client-params.s3vectors.*", self._record)

    def _record(self, model: Any, **_: Any) -> None:
        self.operations.append(model.name)

    def index(self, **options: Any) -> S3VectorsIndex:
        return S3VectorsIndex(VECTOR_BUCKET, lambda tenant: self.client, **options)

    def expect(self, method: str, params: dict[str, Any], response: dict[str, Any] | None = None) -> None:
        self.stubber.add_response(method, response or {}, {**ADDRESS, **params})

    def refuse(self, method: str, code: str, params: dict[str, Any], status: int = 404) -> None:
        self.stubber.add_client_error(
            method, code, "refused by the stub", status, expected_params={**ADDRESS, **params}
        )

    def known_index(self, info: dict[str, Any] | None = None) -> None:
        """What a fresh container reads first: the index, then the embedder sentinel."""
        self.expect("get_index", {}, info or index_info())
        self.expect(
            "get_vectors",
            SENTINEL_READ,
            {"vectors": [{"key": SENTINEL_KEY, "metadata": {"embedder": IDENTITY.key}}]},
        )


# --------------------------------------------------------------------------- one scenario per request kind


def new_tenant_gets_a_cosine_index_with_full_text_search(service: Service) -> None:
    index = service.index(text_language="en", kms_key_arn=KMS_KEY)
    service.refuse("get_index", "NotFoundException", {})
    service.expect(
        "create_index",
        {
            "dataType": "float32",
            "dimension": DIMS,
            "distanceMetric": "cosine",
            "metadataConfiguration": {
                "nonFilterableMetadataKeys": ["text"],
                "textSearchConfigurations": [{"metadataKey": "text", "language": "en"}],
            },
            "encryptionConfiguration": {"sseType": "aws:kms", "kmsKeyArn": KMS_KEY},
        },
        {"indexArn": INDEX_ARN},
    )
    service.expect("get_index", {}, index_info())
    service.expect("get_vectors", SENTINEL_READ, {"vectors": []})
    unit = [1.0] + [0.0] * (DIMS - 1)  # cosine has no direction for the zero vector
    service.expect(
        "put_vectors",
        {
            "vectors": [
                {"key": SENTINEL_KEY, "data": {"float32": unit}, "metadata": {"embedder": IDENTITY.key}}
            ]
        },
    )

    index.ensure_tenant(TENANT_A, IDENTITY)


def classic_index_is_upgraded_to_enhanced_with_text_search(service: Service) -> None:
    index = service.index()
    service.expect("get_index", {}, index_info(mode="CLASSIC", text_search=None))
    service.expect("update_index_mode", {"indexMode": "ENHANCED"})
    service.expect(
        "update_metadata_configuration",
        {"add": {"textSearchConfigurations": [{"metadataKey": "text"}]}},
        {"indexArn": INDEX_ARN},
    )
    service.expect("get_index", {}, index_info(text_search="BUILDING"))
    service.expect(
        "get_vectors",
        SENTINEL_READ,
        {"vectors": [{"key": SENTINEL_KEY, "metadata": {"embedder": IDENTITY.key}}]},
    )

    index.ensure_tenant(TENANT_A, IDENTITY)
    # While the text index builds, keyword search answers nothing and sends no request.
    assert index.query_keyword(TENANT_A, "kafka lag", k=5, where=IndexFilter(namespaces=(BILLING,))) == []


def upsert_puts_the_vector_with_filterable_metadata_and_terms(service: Service) -> None:
    index = service.index()
    service.known_index()
    service.expect(
        "put_vectors",
        {
            "vectors": [
                {
                    "key": "r1",
                    "data": {"float32": axis(0.5, 0.25)},
                    "metadata": {
                        "namespace": BILLING,
                        "type": "project_state",
                        "status": "active",
                        "embedder": IDENTITY.key,
                        "text": "kafka consumer lag",
                    },
                }
            ]
        },
    )

    index.upsert(TENANT_A, IDENTITY, [entry("r1", "Kafka consumer lag", axis(0.5, 0.25))])


def status_change_reads_data_and_metadata_then_rewrites_only_what_changed(service: Service) -> None:
    index = service.index()
    service.known_index()
    stored = {
        "r1": {"namespace": BILLING, "type": "project_state", "status": "active", "embedder": IDENTITY.key},
        "r2": {"namespace": BILLING, "type": "project_state", "status": "archived", "embedder": IDENTITY.key},
    }
    service.expect(
        "get_vectors",
        {"keys": ["r1", "r2"], "returnData": True, "returnMetadata": True},
        {
            "vectors": [
                {"key": key, "data": {"float32": axis(1.0)}, "metadata": metadata}
                for key, metadata in stored.items()
            ]
        },
    )
    service.expect(
        "put_vectors",
        {
            "vectors": [
                {
                    "key": "r1",
                    "data": {"float32": axis(1.0)},
                    "metadata": {**stored["r1"], "status": "archived"},
                }
            ]
        },
    )

    index.set_status(TENANT_A, ["r1", "r2", "r1"], Status.ARCHIVED)


def delete_sends_each_key_once_and_never_the_sentinel(service: Service) -> None:
    index = service.index()
    service.expect("delete_vectors", {"keys": ["r1", "r2"]})

    index.delete(TENANT_A, ["r1", SENTINEL_KEY, "r2", "r1"])


def vector_query_filters_and_converts_distance(service: Service) -> None:
    index = service.index()
    service.known_index()
    service.expect(
        "query_vectors",
        {
            "topK": 3,
            "queryVector": {"float32": axis(1.0)},
            "filter": {
                "$and": [
                    {"namespace": {"$in": [BILLING, SEARCH]}},
                    {"type": {"$eq": "project_state"}},
                    {"status": {"$eq": "active"}},
                    {"embedder": {"$eq": IDENTITY.key}},
                ]
            },
            "returnDistance": True,
        },
        {"vectors": [{"key": "r1", "distance": 0.25}], "distanceMetric": "cosine"},
    )
    where = IndexFilter(namespaces=(BILLING, SEARCH), types=(MemoryType.PROJECT_STATE,))

    assert index.query_vector(TENANT_A, IDENTITY, axis(1.0), k=3, where=where) == [Hit("r1", 0.75)]


def keyword_query_sends_terms_for_the_text_key_and_reads_bm25(service: Service) -> None:
    index = service.index()
    service.known_index()
    service.expect(
        "query_vectors",
        {
            "topK": 5,
            "queryTexts": [{"text": "kafka lag", "metadataKey": "text"}],
            "filter": {"$and": [{"namespace": {"$eq": BILLING}}, {"status": {"$eq": "active"}}]},
            "returnScores": True,
        },
        {
            "vectors": [{"key": "r1", "scores": {"bm25Scores": [{"metadataKey": "text", "score": 2.5}]}}],
            "distanceMetric": "cosine",
        },
    )

    hits = index.query_keyword(TENANT_A, "Kafka lag?", k=5, where=IndexFilter(namespaces=(BILLING,)))
    assert hits == [Hit("r1", 2.5)]


def counting_and_exporting_page_through_list_vectors_at_its_maximum_page(service: Service) -> None:
    # Embedding migration: coverage counts keys only; the archive export asks for data and metadata too.
    index = service.index()
    service.expect(
        "list_vectors",
        {"maxResults": 1000},
        {"vectors": [{"key": SENTINEL_KEY}, {"key": "r1"}], "nextToken": "page-2"},
    )
    service.expect("list_vectors", {"maxResults": 1000, "nextToken": "page-2"}, {"vectors": [{"key": "r2"}]})
    assert index.count(TENANT_A) == 2  # the sentinel is not a record's vector
    service.expect(
        "list_vectors",
        {"maxResults": 1000, "returnData": True, "returnMetadata": True},
        {"vectors": [{"key": "r1", "data": {"float32": axis(1.0)}, "metadata": {"namespace": BILLING}}]},
    )
    assert [v["key"] for v in index.iter_vectors(TENANT_A, with_data=True)] == ["r1"]


def retiring_an_index_deletes_it_and_an_index_already_gone_is_fine(service: Service) -> None:
    index = service.index()
    service.expect("delete_index", {})
    index.drop_index(TENANT_A)
    service.refuse("delete_index", "NotFoundException", {})
    index.drop_index(TENANT_A)


SCENARIOS: list[Callable[[Service], None]] = [
    new_tenant_gets_a_cosine_index_with_full_text_search,
    classic_index_is_upgraded_to_enhanced_with_text_search,
    upsert_puts_the_vector_with_filterable_metadata_and_terms,
    status_change_reads_data_and_metadata_then_rewrites_only_what_changed,
    delete_sends_each_key_once_and_never_the_sentinel,
    vector_query_filters_and_converts_distance,
    keyword_query_sends_terms_for_the_text_key_and_reads_bm25,
    counting_and_exporting_page_through_list_vectors_at_its_maximum_page,
    retiring_an_index_deletes_it_and_an_index_already_gone_is_fine,
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_the_adapter_sends_exactly_the_expected_valid_requests(scenario: Callable[[Service], None]) -> None:
    service = Service()
    with service.stubber:
        scenario(service)
    service.stubber.assert_no_pending_responses()  # every expected request was sent, in order


def test_every_operation_the_adapter_calls_has_a_scenario() -> None:
    # The adapter reaches the service only through `self._call(tenant, "<Operation>", ...)`.
    source = inspect.getsource(s3vectors_index)
    called_in_source = set(re.findall(r'_call\(\s*tenant,\s*"([A-Za-z]+)"', source))
    assert "getattr(client" in source and not re.search(r"client\.[a-z_]+\(", source), (
        "the adapter calls the client another way: update this test's reading of the source"
    )

    exercised: set[str] = set()
    for scenario in SCENARIOS:
        service = Service()
        with service.stubber:
            scenario(service)
        exercised.update(service.operations)

    assert called_in_source == exercised


# --------------------------------------------------------------------------- the Stubber really validates


def test_given_a_request_that_breaks_the_service_model_then_the_stubbed_client_refuses_it() -> None:
    service = Service()
    valid_response = {"vectors": [], "distanceMetric": "cosine"}
    with service.stubber:
        # A wrong type, although a response is queued for the call
        service.stubber.add_response("query_vectors", valid_response)
        with pytest.raises(ParamValidationError, match="topK"):
            service.client.query_vectors(**ADDRESS, topK="5", queryVector={"float32": axis(1.0)})
        # A misspelt member ("queryText" for "queryTexts")
        with pytest.raises(ParamValidationError, match="queryText"):
            service.client.query_vectors(**ADDRESS, topK=5, queryText=[{"text": "x", "metadataKey": "text"}])
        # A missing required member of a nested structure
        with pytest.raises(ParamValidationError, match="metadataKey"):
            service.client.query_vectors(**ADDRESS, topK=5, queryTexts=[{"text": "x"}])
        # None of the refused requests consumed the queued response: the first valid one gets it
        answer = service.client.query_vectors(**ADDRESS, topK=5, queryVector={"float32": axis(1.0)})
        assert (answer["vectors"], answer["distanceMetric"]) == ([], "cosine")
    service.stubber.assert_no_pending_responses()


def test_given_a_response_that_breaks_the_service_model_then_the_stubber_refuses_to_queue_it() -> None:
    service = Service()
    with pytest.raises(ParamValidationError, match="distance"):
        service.stubber.add_response(
            "query_vectors", {"vectors": [{"key": "r1", "distance": "0.25"}], "distanceMetric": "cosine"}
        )
    with pytest.raises(ParamValidationError, match="distanceMetric"):
        service.stubber.add_response("query_vectors", {"vectors": []})


# --------------------------------------------------------------------------- the fake answers like the model


def test_the_fake_service_answers_match_the_output_model(s3vectors: Any) -> None:
    # The raw JSON the suite's fake (moto + tests/aws/moto_s3vectors.py) returns for each successful call must
    # be a valid response of the real service model: no member the service lacks, none missing, no wrong type.
    raw: list[tuple[str, dict[str, Any]]] = []

    def keep(http_response: Any, model: Any, **_: Any) -> None:
        if http_response.status_code == 200:
            raw.append((model.name, json.loads(http_response.content or b"{}")))

    s3vectors.meta.events.register("after-call.s3vectors.*", keep)
    where = IndexFilter(namespaces=(BILLING,))
    # A new tenant: the adapter creates its index (CreateIndex, GetIndex, GetVectors, PutVectors)
    index = S3VectorsIndex(VECTOR_BUCKET, lambda tenant: s3vectors)
    index.upsert(TENANT_A, IDENTITY, [entry("r1", "kafka consumer lag", axis(1.0, 0.5))])
    # A CLASSIC index without text search, made elsewhere: the adapter upgrades it
    s3vectors.create_index(
        vectorBucketName=VECTOR_BUCKET,
        indexName=f"mem-{TENANT_B}",
        dataType="float32",
        dimension=DIMS,
        distanceMetric="cosine",
        metadataConfiguration={"nonFilterableMetadataKeys": ["text"]},
    )
    s3vectors.update_index_mode(
        vectorBucketName=VECTOR_BUCKET, indexName=f"mem-{TENANT_B}", indexMode="CLASSIC"
    )
    index.ensure_tenant(TENANT_B, IDENTITY)
    # Status change, both queries and a delete on the first tenant, from a fresh container
    fresh = S3VectorsIndex(VECTOR_BUCKET, lambda tenant: s3vectors)
    fresh.set_status(TENANT_A, ["r1"], Status.PENDING)
    pending = IndexFilter(namespaces=(BILLING,), statuses=(Status.PENDING,))
    assert [h.record_id for h in fresh.query_vector(TENANT_A, IDENTITY, axis(1.0), k=5, where=pending)] == [
        "r1"
    ]
    assert [h.record_id for h in fresh.query_keyword(TENANT_A, "kafka lag", k=5, where=pending)] == ["r1"]
    fresh.delete(TENANT_A, ["r1"])
    assert fresh.query_vector(TENANT_A, IDENTITY, axis(1.0), k=5, where=where) == []
    # Embedding migration: count and export (ListVectors), then retire an index (DeleteIndex)
    assert fresh.count(TENANT_B) == 0
    assert list(fresh.iter_vectors(TENANT_B, with_data=True)) == []
    fresh.upsert(TENANT_B, IDENTITY, [entry("r9", "moved", axis(0.5, 1.0))])
    assert [v["key"] for v in fresh.iter_vectors(TENANT_B, with_data=True)] == ["r9"]
    fresh.drop_index(TENANT_B)

    called = {operation for operation, _ in raw}
    adapter_operations = set(
        re.findall(r'_call\(\s*tenant,\s*"([A-Za-z]+)"', inspect.getsource(s3vectors_index))
    )
    assert adapter_operations <= called, adapter_operations - called
    model = s3vectors.meta.service_model
    for operation, body in raw:
        output = model.operation_model(operation).output_shape
        if output is None:
            assert body == {}, operation
            continue
        if operation == "GetIndex":  # JSON carries the timestamp as epoch seconds, the model as a time
            body["index"]["creationTime"] = "2026-11-30T00:00:00Z"
        report = ParamValidator().validate(body, output)
        assert not report.has_errors(), (operation, report.generate_report(), body)
