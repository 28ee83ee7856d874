"""Issue 16, defects 1 and 5, on both runtimes (local server and Lambda on moto, see conftest.py).

Defect 1: a non-finite number (NaN, ±Infinity, 1e400, which Python's json accepts) used to be accepted, stored
as null, and from then on every read of the namespace answered 500. Now every body and numeric query parameter
refuses it with 422 naming the field, numeric fields have bounds, and a record that is already bad in the
store is skipped (and counted) instead of failing the namespace, until `repair` fixes it.

Defect 5: a date-time without a time zone used to break recall with a 500. Now it is refused with 422 saying
to add 'Z' or a UTC offset; nothing is stored.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from tests.aws.support import REGION, TABLE
from tests.behaviour.conftest import (
    Api,
    LambdaContext,
    LambdaResponse,
    LocalApi,
    serve_api,
)

NON_FINITE = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"]
TENANT = "alpha"


@pytest.fixture(scope="module", params=["local", "aws"])
def api(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    yield from serve_api(request.param, tmp_path_factory)


def unique_ns() -> str:
    return f"/projects/edge-{uuid.uuid4().hex[:8]}"


def send_raw(api: Api, method: str, path: str, raw: str) -> Any:
    """Send `raw` as the JSON body unchanged (httpx and json.dumps would refuse or rewrite NaN/Infinity)."""
    client = api.client()
    if api.runtime == "local":
        return client.request(
            method, path, content=raw.encode(), headers={"Content-Type": "application/json"}
        )
    from agent_memory.handlers.api import handler

    event = client._event(method, path, None, None, None)
    event["body"] = raw
    result = handler(event, LambdaContext())
    return LambdaResponse(result["statusCode"], result.get("body") or "", result.get("headers") or {})


def remember(api: Api, ns: str, content: str, **extra: Any) -> dict[str, Any]:
    response = api.client().post("/v1/memories", json={"content": content, "namespace": ns, **extra})
    assert response.status_code == 201, response.text
    return response.json()["memory"]


def state_of(api: Api, ns: str) -> tuple[Any, ...]:
    """Everything a refused request could have changed in the namespace."""
    client = api.client()
    stats = client.get("/v1/stats", params={"namespace": ns}).json()
    memories = client.get("/v1/memories", params={"namespace": ns}).json()["items"]
    changes = client.get("/v1/changes", params={"namespace": ns}).json()["items"]
    return stats["by_status"], [(m["id"], m["version"], m["metadata"]) for m in memories], len(changes)


def assert_invalid(response: Any, field: str, *words: str) -> None:
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "invalid_request"
    assert set(body) == {"error", "message", "details"}
    fields = [problem["field"] for problem in body["details"]["problems"]]
    assert any(f == field or f.startswith(field + ".") for f in fields), (field, fields)
    for word in words:
        assert word in body["message"], (word, body["message"])


# --------------------------------------------------------------------------- defect 1: refused at the edge


@pytest.mark.parametrize("literal", NON_FINITE)
def test_a_non_finite_number_anywhere_in_a_write_is_refused_and_nothing_is_stored(api, literal):
    ns = unique_ns()
    existing = remember(api, ns, "The invoice job retries three times")
    before = state_of(api, ns)
    fields = f'"content": "The export runs at noon", "namespace": "{ns}"'
    item = f'{{{fields}, "metadata": {{"x": {literal}}}}}'
    memory = f"/v1/memories/{existing['id']}"
    recall = f'"query": "invoice", "namespaces": ["{ns}"]'
    cases = [
        ("POST", "/v1/memories", item, "metadata", ["'x'", "finite"]),
        (
            "POST",
            "/v1/memories",
            f'{{{fields}, "metadata": {{"a": 1, "x": {literal}}}}}',
            "metadata",
            ["'x'"],
        ),
        ("POST", "/v1/memories", f'{{{fields}, "score": {literal}}}', "score", []),
        ("POST", "/v1/memories", f'{{{fields}, "half_life_hours": {literal}}}', "half_life_hours", []),
        ("POST", "/v1/memories/batch", f'{{"items": [{{{fields}}}, {item}]}}', "items.1.metadata", ["'x'"]),
        ("PATCH", memory, f'{{"metadata": {{"ok": "y", "x": {literal}}}}}', "metadata", ["'x'"]),
        ("PATCH", memory, f'{{"half_life_hours": {literal}}}', "half_life_hours", []),
        ("PATCH", memory, f'{{"score": {literal}}}', "score", []),
        ("PATCH", memory, f'{{"expected_version": {literal}}}', "expected_version", []),
        ("POST", "/v1/recall", f'{{{recall}, "min_score": {literal}}}', "min_score", []),
        ("POST", "/v1/recall", f'{{{recall}, "k": {literal}}}', "k", []),
        (
            "POST",
            "/v1/admin/dream",
            f'{{"namespace": "{ns}", "dry_run": true, "explain": {literal}}}',
            "explain",
            [],
        ),
    ]
    for method, path, raw, field, words in cases:
        assert_invalid(send_raw(api, method, path, raw), field, *words)
    assert state_of(api, ns) == before
    # The namespace still works in full.
    client = api.client()
    assert client.get(f"/v1/memories/{existing['id']}").status_code == 200
    assert client.post("/v1/recall", json={"query": "invoice job", "namespaces": [ns]}).status_code == 200


ROUTES_WITH_A_BODY = [
    ("POST", "/v1/memories/{id}/correct", '{{"content": "x", "reason": {v}}}', "reason"),
    ("POST", "/v1/memories/{id}/archive", '{{"reason": {v}}}', "reason"),
    ("POST", "/v1/memories/{id}/restore", '{{"reason": {v}}}', "reason"),
    ("POST", "/v1/conflicts/cfg_x/resolve", '{{"keep": [{v}]}}', "keep"),
    ("POST", "/v1/files/memory/entries", '{{"namespace": "{ns}", "content": {v}}}', "content"),
    (
        "POST",
        "/v1/files/memory/entries/replace",
        '{{"namespace": "{ns}", "match": "a", "content": {v}}}',
        "content",
    ),
    ("POST", "/v1/files/memory/entries/remove", '{{"namespace": "{ns}", "match": {v}}}', "match"),
    ("POST", "/v1/daily-log", '{{"namespace": "{ns}", "text": {v}}}', "text"),
    ("POST", "/v1/admin/archive-decayed", '{{"namespace": "{ns}", "dry_run": {v}}}', "dry_run"),
    ("POST", "/v1/admin/dream/start", '{{"namespaces": [{v}]}}', "namespaces"),
    ("POST", "/v1/sessions", '{{"namespace": "{ns}", "base_system": {v}}}', "base_system"),
    ("POST", "/v1/sessions/ses_x/turns", '{{"message": {v}}}', "message"),
]


@pytest.mark.parametrize(("method", "path", "template", "field"), ROUTES_WITH_A_BODY)
def test_every_other_route_with_a_body_refuses_a_non_finite_number_with_422(
    api, method, path, template, field
):
    ns = unique_ns()
    existing = remember(api, ns, "The ledger closes on Fridays")
    before = state_of(api, ns)
    for literal in ("NaN", "1e400"):
        raw = template.format(v=literal, ns=ns)
        assert_invalid(send_raw(api, method, path.format(id=existing["id"]), raw), field)
    assert state_of(api, ns) == before


@pytest.mark.parametrize("value", ["NaN", "Infinity", "1e400", "-1", "0", "101", "1.5"])
def test_numeric_query_parameters_are_bounded_and_finite(api, value):
    client = api.client()
    ns = unique_ns()
    for path, top in (("/v1/memories", 100), ("/v1/changes", 500)):
        response = client.get(path, params={"namespace": ns, "limit": value})
        if value in ("101",) and top == 500:
            assert response.status_code == 200, response.text
        else:
            assert_invalid(response, "query.limit")


@pytest.mark.parametrize(
    ("method", "body", "field"),
    [
        ("POST", {"score": 1.01}, "score"),
        ("POST", {"score": -0.01}, "score"),
        ("POST", {"half_life_hours": 0}, "half_life_hours"),
        ("POST", {"half_life_hours": 876_001}, "half_life_hours"),
        ("PATCH", {"half_life_hours": 1e300}, "half_life_hours"),
        ("PATCH", {"half_life_hours": -5}, "half_life_hours"),
        ("PATCH", {"expected_version": 10**12}, "expected_version"),
        ("PATCH", {"expected_version": -1}, "expected_version"),
        ("PATCH", {"score": 2}, "score"),
        ("PATCH", {"metadata": {"nested": {"x": 1}}}, "metadata"),
    ],
)
def test_numeric_fields_are_bounded(api, method, body, field):
    ns = unique_ns()
    existing = remember(api, ns, "Quarterly reports go to finance")
    before = state_of(api, ns)
    client = api.client()
    if method == "POST":
        response = client.post("/v1/memories", json={"content": "Reports are PDF", "namespace": ns, **body})
    else:
        response = client.patch(f"/v1/memories/{existing['id']}", json=body)
    assert_invalid(response, field)
    assert state_of(api, ns) == before


def test_the_largest_allowed_values_are_accepted(api):
    ns = unique_ns()
    client = api.client()
    created = remember(
        api, ns, "Archive logs after a century", half_life_hours=876_000, score=1, metadata={"n": 1e308}
    )
    assert created["half_life_hours"] == 876_000 and created["metadata"] == {"n": 1e308}
    patched = client.patch(f"/v1/memories/{created['id']}", json={"half_life_hours": 0.001, "score": 0})
    assert patched.status_code == 200, patched.text
    assert client.get("/v1/memories", params={"namespace": ns}).status_code == 200


# --------------------------------------------------------------------------- defect 5: naive date-times


@pytest.mark.parametrize("naive", ["2030-01-01T00:00:00", "2030-01-01", "2030-01-01T12:30"])
def test_a_date_time_without_a_time_zone_is_refused_with_a_hint_and_nothing_is_stored(api, naive):
    ns = unique_ns()
    remember(api, ns, "The data centre moved to Frankfurt")
    before = state_of(api, ns)
    client = api.client()
    recall = client.post("/v1/recall", json={"query": "data centre", "namespaces": [ns], "as_of": naive})
    assert_invalid(recall, "as_of", "time zone", "'Z'")
    created = client.post(
        "/v1/memories", json={"content": "Backups run hourly", "namespace": ns, "valid_from": naive}
    )
    assert_invalid(created, "valid_from", "time zone")
    batch = client.post(
        "/v1/memories/batch",
        json={"items": [{"content": "Backups run hourly", "namespace": ns, "valid_from": naive}]},
    )
    assert_invalid(batch, "items.0.valid_from", "time zone")
    assert state_of(api, ns) == before
    assert client.post("/v1/recall", json={"query": "data centre", "namespaces": [ns]}).status_code == 200


def test_date_times_with_a_time_zone_work_and_out_of_range_ones_are_refused(api):
    ns = unique_ns()
    client = api.client()
    memory = remember(api, ns, "The office opens at nine", valid_from="2030-01-01T09:00:00+09:00")
    assert memory["valid_from"].startswith("2030-01-01T09:00:00")
    for as_of, found in (("2030-01-01T00:00:00Z", True), ("2029-12-31T23:59:59Z", False)):
        response = client.post(
            "/v1/recall", json={"query": "office opens", "namespaces": [ns], "as_of": as_of}
        )
        assert response.status_code == 200, response.text
        assert [hit["memory"]["id"] for hit in response.json()["results"]] == (
            [memory["id"]] if found else []
        )
    for extreme in ("0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"):
        response = client.post("/v1/recall", json={"query": "office", "namespaces": [ns], "as_of": extreme})
        assert_invalid(response, "as_of", "out of range")


# --------------------------------------------------------------------------- a record already bad in the store


def _damage(api: Api, record_id: str, edit: Callable[[dict[str, Any]], None]) -> None:
    """Rewrite a stored record's JSON the way an older version stored a non-finite number: as null."""
    if api.runtime == "local":
        assert isinstance(api, LocalApi) and api.data_dir is not None
        with sqlite3.connect(api.data_dir / "memory.db") as db:
            (body,) = db.execute(
                "SELECT body FROM records WHERE tenant = ? AND id = ?", (TENANT, record_id)
            ).fetchone()
            data = json.loads(body)
            edit(data)
            db.execute(
                "UPDATE records SET body = ? WHERE tenant = ? AND id = ?",
                (json.dumps(data), TENANT, record_id),
            )
        return
    client = boto3.client("dynamodb", region_name=REGION)
    key = {"pk": {"S": f"{TENANT}#REC#{record_id}"}, "sk": {"S": "REC"}}
    data = json.loads(client.get_item(TableName=TABLE, Key=key)["Item"]["doc"]["S"])
    edit(data)
    client.update_item(
        TableName=TABLE,
        Key=key,
        UpdateExpression="SET doc = :doc",
        ExpressionAttributeValues={":doc": {"S": json.dumps(data)}},
    )


def _repair(
    api: Api, ns: str, capsys: pytest.CaptureFixture[str], *, dry_run: bool = False
) -> dict[str, Any]:
    if api.runtime == "local":
        from agent_memory.cli.main import main

        assert isinstance(api, LocalApi) and api.data_dir is not None
        capsys.readouterr()
        args = [
            "--data-dir",
            str(api.data_dir),
            "--embedder",
            "hashing",
            "--tenant",
            TENANT,
            "repair",
            "-n",
            ns,
        ]
        assert main([*args, *(["--dry-run"] if dry_run else [])]) == 0
        return json.loads(capsys.readouterr().out)
    from agent_memory.adapters.aws.dynamodb_store import DynamoRecordStore
    from agent_memory.domain.memory.repair import repair_records

    store = DynamoRecordStore(TABLE, lambda tenant: boto3.client("dynamodb", region_name=REGION))
    report = repair_records(store, TENANT, namespace=ns, now=datetime.now(UTC), actor="test", dry_run=dry_run)
    return report.as_dict()


def test_a_damaged_record_is_skipped_and_reported_until_repair_fixes_it(api, capsys):
    ns = unique_ns()
    client = api.client()
    bad = remember(api, ns, "The payroll batch runs on the 25th", metadata={"x": 1.5, "team": "hr"})
    good = remember(api, ns, "The payroll system is called Paylink")

    def poison(data: dict[str, Any]) -> None:
        data["metadata"]["x"] = None
        data["half_life_hours"] = None
        data["valid_from"] = data["valid_from"].removesuffix("Z")  # naive, as an old version may have stored

    _damage(api, bad["id"], poison)

    # The namespace keeps working: the damaged record is left out and counted, never a 500.
    listing = client.get("/v1/memories", params={"namespace": ns})
    assert listing.status_code == 200, listing.text
    assert [m["id"] for m in listing.json()["items"]] == [good["id"]]
    assert listing.json()["skipped"] == 1
    recalled = client.post("/v1/recall", json={"query": "payroll", "namespaces": [ns]})
    assert recalled.status_code == 200, recalled.text
    assert [hit["memory"]["id"] for hit in recalled.json()["results"]] == [good["id"]]
    as_of = client.post(
        "/v1/recall", json={"query": "payroll", "namespaces": [ns], "as_of": "2099-01-01T00:00:00Z"}
    )
    assert as_of.status_code == 200, as_of.text
    assert client.get(f"/v1/memories/{good['id']}/history").status_code == 200
    assert client.patch(f"/v1/memories/{good['id']}", json={"metadata": {"k": "v"}}).status_code == 200
    assert client.get(f"/v1/memories/{bad['id']}").status_code == 404
    assert client.get("/v1/stats", params={"namespace": ns}).status_code == 200
    dream = client.post("/v1/admin/dream", json={"dry_run": True})  # tenant-wide
    assert dream.status_code == 200, dream.text
    assert client.post(f"/v1/memories/{good['id']}/archive", json={}).status_code == 200

    # A dry run reports and changes nothing.
    preview = _repair(api, ns, capsys, dry_run=True)
    assert preview["found"] == 1 and preview["counts"] == {"fixed": 1}
    assert client.get("/v1/memories", params={"namespace": ns}).json()["skipped"] == 1

    report = _repair(api, ns, capsys)
    assert report["counts"] == {"fixed": 1}
    (outcome,) = report["records"]
    assert outcome["record_id"] == bad["id"]
    assert any("metadata.x" in change for change in outcome["changes"])
    assert any("half_life_hours" in change for change in outcome["changes"])

    listing = client.get("/v1/memories", params={"namespace": ns}).json()
    assert listing["skipped"] == 0 and {m["id"] for m in listing["items"]} == {bad["id"], good["id"]}
    repaired = client.get(f"/v1/memories/{bad['id']}").json()
    assert repaired["metadata"] == {"team": "hr"} and repaired["half_life_hours"] == 168.0
    assert repaired["valid_from"] == bad["valid_from"] and repaired["version"] == bad["version"] + 1
    history = client.get(f"/v1/memories/{bad['id']}/history").json()
    assert history["changes"][-1]["operation"] == "repair"
    assert history["changes"][-1]["before"]["metadata"] == {"x": None, "team": "hr"}  # kept, not deleted
    hits = client.post("/v1/recall", json={"query": "payroll batch", "namespaces": [ns]}).json()["results"]
    assert bad["id"] in [hit["memory"]["id"] for hit in hits]
    assert _repair(api, ns, capsys)["found"] == 0
