"""Issue 16, defects 1 and 5, below the HTTP layer: every request model refuses non-finite numbers and naive
date-times, every numeric request field is bounded in the OpenAPI document, and the domain can neither store
a non-finite number nor a naive date-time. The two-runtime HTTP regressions are in
tests/behaviour/test_edge_numbers_and_times.py; the store and repair ones in tests/contract."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from agent_memory.adapters.local.embedders import HashingEmbedder
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.api import models
from agent_memory.api.openapi import openapi_document
from agent_memory.api.routes import dreaming, sessions
from agent_memory.domain.errors import ValidationFailed
from agent_memory.domain.memory.service import MemoryService, RecallInput, RememberInput
from agent_memory.domain.ports import RecordQuery
from agent_memory.domain.records import MemoryRecord, describe_invalid, metadata_size
from tests.contract.record_store_contract import make_record

NON_FINITE = [math.nan, math.inf, -math.inf, json.loads("1e400")]


def _request_models() -> list[type[models.Strict]]:
    found: list[type[models.Strict]] = []
    pending: list[type[models.Strict]] = [models.Strict]
    while pending:
        for sub in pending.pop().__subclasses__():
            found.append(sub)
            pending.append(sub)
    assert {"RememberRequest", "UpdateRequest", "DreamRequest", "SessionStartRequest"} <= {
        m.__name__ for m in found
    }
    assert dreaming and sessions  # imported so their request models are subclasses above
    return found


@pytest.mark.parametrize("value", NON_FINITE)
def test_request_models_refuse_non_finite_numbers_in_every_float_field(value):
    checked = 0
    for model in _request_models():
        for name, info in model.model_fields.items():
            if "float" not in str(info.annotation):
                continue
            with pytest.raises(ValidationError) as refused:
                model.model_validate({name: value})
            assert any(
                error["loc"][0] == name and error["type"] != "missing" for error in refused.value.errors()
            )
            checked += 1
    assert checked >= 5  # score and half_life_hours (remember, update), min_score


@pytest.mark.parametrize("value", NON_FINITE)
def test_metadata_refuses_non_finite_values_and_names_the_key(value):
    with pytest.raises(ValidationError) as refused:
        models.UpdateRequest.model_validate({"metadata": {"fine": 1.5, "bad": value}})
    (error,) = refused.value.errors()
    assert error["loc"] == ("metadata",) and "'bad'" in error["msg"] and "finite" in error["msg"]


@pytest.mark.parametrize("naive", ["2030-01-01T00:00:00", "2030-01-01", datetime(2030, 1, 1)])
def test_request_date_times_need_a_time_zone(naive):
    for model, field, extra in (
        (models.RecallRequest, "as_of", {"query": "q", "namespaces": ["/a"]}),
        (models.RememberRequest, "valid_from", {"content": "c", "namespace": "/a"}),
    ):
        with pytest.raises(ValidationError) as refused:
            model.model_validate({**extra, field: naive})
        assert "time zone" in str(refused.value) and "'Z'" in str(refused.value)
        accepted = model.model_validate({**extra, field: "2030-01-01T00:00:00+02:00"})
        assert getattr(accepted, field).utcoffset() is not None


def test_every_numeric_request_field_and_query_parameter_is_bounded_in_the_openapi_document():
    document = openapi_document()
    schemas = document["components"]["schemas"]
    request_names = {model.__name__ for model in _request_models()}
    unbounded = []

    def numeric(schema: dict[str, Any]) -> list[dict[str, Any]]:
        options = schema.get("anyOf", [schema])
        return [option for option in options if option.get("type") in ("number", "integer")]

    for name in request_names & set(schemas):
        for field, schema in schemas[name].get("properties", {}).items():
            for option in numeric(schema):
                if not ({"minimum", "exclusiveMinimum"} & set(option) and "maximum" in option):
                    unbounded.append(f"{name}.{field}")
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for parameter in operation.get("parameters", []):
                for option in numeric(parameter.get("schema", {})):
                    if not ({"minimum", "exclusiveMinimum"} & set(option) and "maximum" in option):
                        unbounded.append(f"{method.upper()} {path} ?{parameter['name']}")
    assert unbounded == []
    assert "time zone" in schemas["RecallRequest"]["properties"]["as_of"]["description"]
    assert "finite" in schemas["RememberRequest"]["properties"]["metadata"]["description"]
    assert "skipped" in schemas["MemoryPage"]["properties"]


# --------------------------------------------------------------------------- the domain guards


def test_a_record_cannot_hold_a_non_finite_number_and_naive_date_times_become_utc():
    for field in ("score", "half_life_hours"):
        with pytest.raises(ValidationError):
            make_record(**{field: math.inf})
        record = make_record()
        with pytest.raises(ValidationError):
            setattr(record, field, math.nan)
    with pytest.raises(ValidationError):
        make_record(metadata={"x": math.nan})
    record = make_record(valid_from=datetime(2030, 1, 1))
    assert record.valid_from == datetime(2030, 1, 1, tzinfo=UTC)
    record.valid_to = datetime(2031, 1, 1)
    assert record.valid_to is not None and record.valid_to.tzinfo is not None
    assert '"valid_from":"2030-01-01T00:00:00Z"' in record.model_dump_json()
    assert record.is_valid_at(datetime(2030, 6, 1)) and not record.is_valid_at(datetime(2029, 6, 1))


def test_metadata_size_refuses_non_finite_numbers_with_a_domain_error():
    with pytest.raises(ValidationFailed, match="'x'"):
        metadata_size({"x": math.inf, "y": 1})


def test_describe_invalid_names_fields_and_never_content():
    with pytest.raises(ValidationError) as refused:
        MemoryRecord.model_validate(
            {**make_record("secret words").model_dump(), "metadata": {"k": None}, "score": None}
        )
    text = describe_invalid(refused.value)
    assert "metadata.k: none of str, int, float, bool" in text and "score" in text and "secret" not in text


@pytest.fixture
def service(tmp_path: Any, clock: Any) -> MemoryService:
    return MemoryService(
        store=SqliteRecordStore(tmp_path / "memory.db"),
        index=LocalSearchIndex(tmp_path / "index"),
        embedder=HashingEmbedder(),
        clock=clock,
    )


@pytest.mark.parametrize("value", NON_FINITE)
def test_the_service_refuses_non_finite_input_from_any_caller(service, value):
    for item in (
        RememberInput(content="The export runs at noon", namespace="/a", metadata={"x": value}),
        RememberInput(content="The export runs at noon", namespace="/a", half_life_hours=value),
        RememberInput(content="The export runs at noon", namespace="/a", score=value),
    ):
        with pytest.raises(ValidationFailed):
            service.remember("acme", item, actor="t")
    assert service.list("acme", RecordQuery(namespaces=("/a",))).items == []


def test_the_service_stores_a_naive_valid_from_as_utc_and_recalls_with_a_naive_as_of(service):
    result = service.remember(
        "acme",
        RememberInput(content="The office opens at nine", namespace="/a", valid_from=datetime(2025, 1, 1)),
        actor="t",
    )
    assert result.record is not None and result.record.valid_from.tzinfo is not None
    hits = service.recall(
        "acme", RecallInput(query="office opens", namespaces=("/a",), as_of=datetime(2025, 6, 1))
    )
    assert [hit.record.id for hit in hits.results] == [result.record.id]
