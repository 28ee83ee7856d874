"""Export / import bundles, snapshots, diff, restore and the reuse review over the API, on both runtimes."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from agent_memory.api.routes import versioning as versioning_routes
from tests.behaviour.conftest import Api


def _ns() -> str:
    return f"/projects/v{uuid.uuid4().hex[:8]}"


def _remember(client: Any, ns: str, content: str) -> dict[str, Any]:
    answer = client.post(
        "/v1/memories", json={"namespace": ns, "content": content, "type": "domain_knowledge"}
    )
    assert answer.status_code == 201, answer.text
    return answer.json()["memory"]


def _memories(client: Any, ns: str) -> dict[str, dict[str, Any]]:
    answer = client.get("/v1/memories", params={"namespace": ns, "limit": 100})
    assert answer.status_code == 200, answer.text
    return {item["id"]: item for item in answer.json()["items"]}


def _fill(client: Any, ns: str) -> dict[str, str]:
    ids = {
        "deploy": _remember(client, ns, "Deploys of billing run on Tuesdays after the freeze")["id"],
        "db": _remember(client, ns, "The billing database is Postgres 15 on RDS")["id"],
        "old": _remember(client, ns, "Invoices are rendered with wkhtmltopdf")["id"],
    }
    corrected = client.post(
        f"/v1/memories/{ids['db']}/correct", json={"content": "The billing database is Postgres 16 on Aurora"}
    )
    assert corrected.status_code == 200, corrected.text
    ids["db2"] = corrected.json()["memory"]["id"]
    assert client.post(f"/v1/memories/{ids['old']}/archive", json={"reason": "unused"}).status_code == 200
    for kind, text in (("memory", "Billing owner: the payments team"), ("user", "Prefers short answers")):
        added = client.post(f"/v1/files/{kind}/entries", json={"namespace": ns, "content": text})
        assert added.status_code == 200, added.text
    return ids


def _view(client: Any, ns: str) -> tuple[dict[str, str], set[tuple[Any, ...]], dict[str, str]]:
    records = _memories(client, ns)
    active = {i: r["content_hash"] for i, r in records.items() if r["status"] == "active"}
    links = {(i, r["supersedes"], r["superseded_by"], r["corrected_from"]) for i, r in records.items()}
    files = {
        kind: client.get(f"/v1/files/{kind}", params={"namespace": ns}).json()["text"]
        for kind in ("memory", "user")
    }
    return active, links, files


def test_export_then_import_into_an_empty_tenant_round_trips(api: Api) -> None:
    alpha, beta = api.client("alpha"), api.client("beta")
    ns = _ns()
    _fill(alpha, ns)
    exported = alpha.get("/v1/export", params={"namespace": ns})
    assert exported.status_code == 200, exported.text
    bundle = exported.json()
    assert bundle["manifest"]["counts"] == {"records": 4, "active_records": 2, "changes": 6, "files": 2}
    assert '\\"tenant\\"' not in exported.text and '"tenant"' not in exported.text  # tenant-free
    assert _memories(beta, ns) == {}

    imported = beta.post("/v1/export/import", json={"bundle": bundle})
    assert imported.status_code == 200, imported.text
    assert imported.json()["counts"]["created"] == 4 and imported.json()["counts"]["files_written"] == 2
    assert _view(beta, ns) == _view(alpha, ns)
    again = beta.post("/v1/export/import", json={"bundle": bundle}).json()
    assert again["counts"]["unchanged"] == 4 and again["counts"]["created"] == 0

    # an id that exists with other content is a conflict, reported and left alone
    line = bundle["members"]["records.jsonl"]
    tampered = dict(
        bundle, members={**bundle["members"], "records.jsonl": line.replace("Tuesdays", "Fridays!")}
    )
    refused = beta.post("/v1/export/import", json={"bundle": tampered})
    assert refused.status_code == 422 and "hash" in refused.json()["message"]


def test_snapshots_diff_and_restore(api: Api) -> None:
    alpha = api.client("alpha")
    ns = _ns()
    ids = _fill(alpha, ns)
    created = alpha.post(
        "/v1/snapshots", json={"namespace": ns, "name": "good", "note": "before the cleanup"}
    )
    assert created.status_code == 201, created.text
    assert created.json()["counts"]["active_records"] == 2
    assert alpha.post("/v1/snapshots", json={"namespace": ns, "name": "good"}).status_code == 409
    since = created.json()["created_at"]

    assert (
        alpha.post(f"/v1/memories/{ids['deploy']}/archive", json={"reason": "continuous deploys"}).status_code
        == 200
    )
    added = _remember(alpha, ns, "Refunds need a second approver")["id"]
    alpha.post("/v1/files/memory/entries", json={"namespace": ns, "content": "A wrong note"})

    diff = alpha.get("/v1/snapshots/good/diff", params={"namespace": ns})
    assert diff.status_code == 200, diff.text
    kinds = {item["id"]: item["kind"] for item in diff.json()["records"]}
    assert kinds == {ids["deploy"]: "archived", added: "added"}
    archived = next(item for item in diff.json()["records"] if item["id"] == ids["deploy"])
    assert [(c["operation"], c["reason"]) for c in archived["changes"]] == [("archive", "continuous deploys")]
    (memory_md,) = [f for f in diff.json()["files"] if f["path"] == "MEMORY.md"]
    assert memory_md["entries_added"] == ["A wrong note"]
    by_time = alpha.get("/v1/diff", params={"namespace": ns, "from": since})
    assert by_time.status_code == 200, by_time.text
    assert {item["id"]: item["kind"] for item in by_time.json()["records"]} == kinds
    assert alpha.get("/v1/diff", params={"namespace": ns, "from": "2026-01-01T00:00:00"}).status_code == 422

    listed = alpha.get("/v1/snapshots", params={"namespace": ns}).json()["items"]
    assert [s["name"] for s in listed] == ["good"]
    detail = alpha.get("/v1/snapshots/good", params={"namespace": ns}).json()
    assert {r["id"] for r in detail["records"]} == {ids["deploy"], ids["db"], ids["db2"], ids["old"]}

    restored = alpha.post("/v1/snapshots/good/restore", json={"namespace": ns})
    assert restored.status_code == 200, restored.text
    assert restored.json()["counts"] == {"unarchived": 1, "unchanged": 1, "archived": 1, "file_restored": 1}
    active = {r["content"] for r in _memories(alpha, ns).values() if r["status"] == "active"}
    assert active == {
        "Deploys of billing run on Tuesdays after the freeze",
        "The billing database is Postgres 16 on Aurora",
    }
    assert "A wrong note" not in alpha.get("/v1/files/memory", params={"namespace": ns}).json()["text"]
    names = [s["name"] for s in alpha.get("/v1/snapshots", params={"namespace": ns}).json()["items"]]
    assert names == ["good", restored.json()["safety_snapshot"]]
    history = alpha.get(f"/v1/memories/{ids['deploy']}/history").json()
    assert [c["operation"] for c in history["changes"]][-2:] == ["archive", "restore"]


def test_reused_memories_and_review(api: Api) -> None:
    alpha = api.client("alpha")
    ns = _ns()
    deploy = _remember(alpha, ns, "Deploys of billing run on Tuesdays after the freeze")["id"]
    owner = _remember(alpha, ns, "Billing owner: the payments team")["id"]
    alpha.post(
        "/v1/files/memory/entries", json={"namespace": ns, "content": "Billing owner: the payments team"}
    )
    for _ in range(2):
        answer = alpha.post(
            "/v1/recall", json={"query": "when do billing deploys run", "namespaces": [ns], "k": 1}
        )
        assert answer.status_code == 200
    started = alpha.post("/v1/sessions", json={"namespace": ns})
    assert started.status_code == 201, started.text

    listed = alpha.get("/v1/memories/reused", params={"namespace": ns})
    assert listed.status_code == 200, listed.text
    uses = {
        item["memory"]["id"]: (item["recalls"], item["sessions"], item["reviewed_at"])
        for item in listed.json()["items"]
    }
    assert uses[deploy] == (2, 0, None)
    assert uses[owner][1] == 1
    assert (
        alpha.get("/v1/memories/reused", params={"namespace": ns, "min_uses": 2}).json()["items"][0][
            "memory"
        ]["id"]
        == deploy
    )

    reviewed = alpha.post(f"/v1/memories/{deploy}/reviewed")
    assert reviewed.status_code == 200, reviewed.text
    assert reviewed.json()["reviewed_at"] is not None and reviewed.json()["recalls"] == 2
    again = {
        i["memory"]["id"]: i["reviewed_at"]
        for i in alpha.get("/v1/memories/reused", params={"namespace": ns}).json()["items"]
    }
    assert again[deploy] == reviewed.json()["reviewed_at"]


def test_scopes_and_tenants_are_enforced(api: Api) -> None:
    alpha, beta, reader = api.client("alpha"), api.client("beta"), api.client("alpha-billing-ro")
    ns = "/projects/billing"
    deploy = _remember(alpha, ns, f"Billing deploy window {uuid.uuid4().hex[:6]} is Tuesday")["id"]
    name = f"s{uuid.uuid4().hex[:8]}"
    assert alpha.post("/v1/snapshots", json={"namespace": ns, "name": name}).status_code == 201
    bundle = alpha.get("/v1/export", params={"namespace": ns}).json()

    # a read key reads, and nothing more
    assert reader.get("/v1/export", params={"namespace": ns}).status_code == 200
    assert reader.get("/v1/snapshots", params={"namespace": ns}).status_code == 200
    assert reader.get("/v1/memories/reused", params={"namespace": ns}).status_code == 200
    assert reader.post("/v1/snapshots", json={"namespace": ns, "name": "x"}).status_code == 403
    assert reader.post(f"/v1/snapshots/{name}/restore", json={"namespace": ns}).status_code == 403
    assert reader.post("/v1/export/import", json={"bundle": bundle}).status_code == 403
    assert reader.post(f"/v1/memories/{deploy}/reviewed").status_code == 403
    assert reader.get("/v1/export", params={"namespace": "/projects/other"}).status_code == 403
    # a write key without admin cannot import
    assert (
        api.client("alpha-projects-rw").post("/v1/export/import", json={"bundle": bundle}).status_code == 403
    )

    # another tenant sees none of it
    assert beta.get(f"/v1/snapshots/{name}", params={"namespace": ns}).status_code == 404
    assert beta.get("/v1/snapshots", params={"namespace": ns}).json()["items"] == []
    assert beta.post(f"/v1/memories/{deploy}/reviewed").status_code == 404
    assert deploy not in beta.get("/v1/export", params={"namespace": ns}).text


def test_an_export_over_the_response_cap_is_413_pointing_to_the_cli(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    alpha = api.client("alpha")
    ns = _ns()
    _remember(alpha, ns, "Billing deploys run on Tuesdays " + "x" * 400)
    monkeypatch.setattr(versioning_routes, "EXPORT_MAX_BYTES", 300)
    answer = alpha.get("/v1/export", params={"namespace": ns})
    assert answer.status_code == 413
    assert answer.json()["error"] == "too_large" and "agent-memory export" in answer.json()["message"]
