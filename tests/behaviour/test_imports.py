"""Imports over the API on both runtimes: an uploaded archive (base64 in JSON) → report, dry run, report by id,
rollback, idempotent re-run, refusals (non-admin key 403, another tenant 404, malicious archive 422, unknown
layout 422, over the upload cap 413). The services run on a `FixedClock` so the report's figures are exact."""

from __future__ import annotations

import base64
import io
import tarfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.behaviour.conftest import Api, serve_api
from tests.conftest import FixedClock

DATA = Path(__file__).resolve().parents[1] / "data" / "imports"


@pytest.fixture(scope="module", params=["local", "aws"])
def imports_api(request, tmp_path_factory) -> Iterator[Api]:
    clock = FixedClock(datetime(2026, 12, 1, 12, 0, tzinfo=UTC))
    yield from serve_api(request.param, tmp_path_factory, clock=clock)


def _archive(folder: str, *, extra: dict[str, tarfile.TarInfo] | None = None) -> str:
    root = DATA / folder
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                archive.add(path, arcname=path.relative_to(root).as_posix())
        for info in (extra or {}).values():
            archive.addfile(info)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def _records(client: Any, namespace: str, status: str = "active") -> list[dict[str, Any]]:
    body = _ok(client.get("/v1/memories", params={"namespace": namespace, "status": status, "limit": 100}))
    return body["items"]


def test_import_report_rerun_and_rollback(imports_api: Api) -> None:
    client = imports_api.client("alpha")
    namespace = "/projects/imported-chat"
    dry = _ok(
        client.post(
            "/v1/imports", json={"namespace": namespace, "archive": _archive("jsonl"), "dry_run": True}
        )
    )
    assert dry["report"]["state"] == "dry_run" and dry["report"]["inventory"]["turns"] == 11
    assert _records(client, namespace) == []
    assert client.get(f"/v1/imports/{dry['report']['id']}").status_code == 404  # a dry run stores nothing

    body = _ok(
        client.post(
            "/v1/imports", json={"namespace": namespace, "archive": _archive("jsonl"), "name": "chat.tgz"}
        )
    )
    report = body["report"]
    assert report["format"] == "jsonl" and report["state"] == "completed" and report["source"] == "chat.tgz"
    decisions = {k: v for k, v in report["decisions"].items() if v}
    assert decisions == {
        "added": 3,
        "superseded": 1,
        "replaced": 1,
        "rejected": 2,
        "skipped_transient": 4,
    }
    assert "| added | 3 |" in body["markdown"]
    assert len(_records(client, namespace)) == 4

    fetched = _ok(client.get(f"/v1/imports/{report['id']}"))
    assert fetched["report"]["decisions"] == report["decisions"]

    again = _ok(client.post("/v1/imports", json={"namespace": namespace, "archive": _archive("jsonl")}))
    assert {k: v for k, v in again["report"]["decisions"].items() if v} == {"skipped_seen": 11}

    rolled = _ok(client.post(f"/v1/imports/{report['id']}/rollback"))
    assert rolled["report"]["state"] == "rolled_back" and rolled["report"]["rollback"]["archived"] == 4
    assert _records(client, namespace) == []
    assert len(_records(client, namespace, "archived")) == 4
    assert client.post(f"/v1/imports/{report['id']}/rollback").status_code == 409


def test_workspace_with_files_and_skills(imports_api: Api) -> None:
    client = imports_api.client("alpha")
    namespace = "/projects/imported-hermes"
    report = _ok(
        client.post("/v1/imports", json={"namespace": namespace, "archive": _archive("hermes/.hermes")})
    )["report"]
    assert report["format"] == "hermes"
    assert {k: v for k, v in report["decisions"].items() if v} == {
        "added": 5,
        "rejected": 1,
        "skills_added": 1,
    }
    assert report["files"]["entries_added"] == 5
    entries = _ok(client.get("/v1/files/user", params={"namespace": namespace}))["entries"]
    assert entries == [
        "User prefers British English spelling in documentation.",
        "User prefers short commit messages in the imperative mood.",
    ]
    rolled = _ok(client.post(f"/v1/imports/{report['id']}/rollback"))["report"]["rollback"]
    assert (rolled["files_removed"], rolled["skills_archived"]) == (5, 1)
    assert _ok(client.get("/v1/files/user", params={"namespace": namespace}))["entries"] == []


def test_refusals(imports_api: Api) -> None:
    alpha = imports_api.client("alpha")
    report = _ok(
        alpha.post("/v1/imports", json={"namespace": "/projects/imported-x", "archive": _archive("mem0")})
    )["report"]
    assert report["format"] == "mem0"

    # Another tenant's admin key: the import does not exist for it (read and rollback).
    beta = imports_api.client("beta")
    assert beta.get(f"/v1/imports/{report['id']}").status_code == 404
    assert beta.post(f"/v1/imports/{report['id']}/rollback").status_code == 404
    assert alpha.get(f"/v1/imports/{report['id']}").status_code == 200  # untouched

    # A key without the admin scope.
    writer = imports_api.client("alpha-projects-rw")
    refused = writer.post("/v1/imports", json={"namespace": "/projects/x", "archive": _archive("jsonl")})
    assert refused.status_code == 403
    assert writer.get(f"/v1/imports/{report['id']}").status_code == 403

    # A malicious archive: a symbolic link member.
    link = tarfile.TarInfo("USER.md")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    bad = alpha.post(
        "/v1/imports", json={"namespace": "/projects/x", "archive": _archive("jsonl", extra={"l": link})}
    )
    assert bad.status_code == 422 and bad.json()["error"] == "unsafe_archive"

    # No known layout.
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        data = b"hello"
        info = tarfile.TarInfo("notes/readme.md")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    unknown = alpha.post(
        "/v1/imports",
        json={"namespace": "/projects/x", "archive": base64.b64encode(buffer.getvalue()).decode()},
    )
    assert unknown.status_code == 422 and unknown.json()["error"] == "unknown_layout"

    not_base64 = alpha.post("/v1/imports", json={"namespace": "/projects/x", "archive": "%%%"})
    assert not_base64.status_code == 422

    assert alpha.get("/v1/imports/imp_0000").status_code == 404
    assert alpha.get("/v1/imports/../../etc").status_code == 404


def test_upload_over_the_cap_is_413(imports_api: Api) -> None:
    from agent_memory.api.routes.imports import MAX_ARCHIVE_BYTES

    oversized = base64.b64encode(b"\x1f\x8b" + b"\x00" * (MAX_ARCHIVE_BYTES + 10)).decode()
    response = imports_api.client("alpha").post(
        "/v1/imports", json={"namespace": "/projects/x", "archive": oversized}
    )
    assert response.status_code == 413
    assert response.json()["error"] in ("too_large", "payload_too_large", "body_too_large")


def _archive_of(files: dict[str, str]) -> str:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in files.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def test_one_bad_item_is_listed_and_the_rest_imports(imports_api: Api) -> None:
    client = imports_api.client("alpha")
    namespace = "/projects/imported-mem0"
    lines = [
        '{"id": "a1", "memory": "Prefers trains over planes for trips under 600 km", "app_id": "travel",'
        ' "categories": ["travel"], "metadata": {"channel": "email"}}',
        '{"id": "a2", "memory": ""}',
        '{"id": "a3", "memory": "Is training for the Berlin marathon in September"}',
        '{"id": "a4", "memory": "Has a',
    ]
    body = _ok(
        client.post(
            "/v1/imports",
            json={"namespace": namespace, "archive": _archive_of({"mem0.jsonl": "\n".join(lines)})},
        )
    )
    report = body["report"]
    assert report["format"] == "mem0" and report["state"] == "completed"
    assert {k: v for k, v in report["decisions"].items() if v} == {"added": 2, "rejected": 2}
    assert [(r["ref"], r["line"], r["rule"]) for r in report["rejected"]] == [
        ("mem0.jsonl#id:a2", 2, "invalid_item"),
        ("mem0.jsonl#L4", 4, "invalid_item"),
    ]
    assert "`mem0.jsonl:2`: line 2: a Mem0 memory needs a non-empty 'memory' text" in body["markdown"]
    kept = {r["content"]: r for r in _records(client, namespace)}
    assert set(kept) == {
        "Prefers trains over planes for trips under 600 km",
        "Is training for the Berlin marathon in September",
    }
    metadata = kept["Prefers trains over planes for trips under 600 km"]["metadata"]
    assert (metadata["mem0_app_id"], metadata["mem0_categories"]) == ("travel", "travel")
    assert metadata["mem0_metadata"] == '{"channel":"email"}'
    items = _ok(client.get(f"/v1/imports/{report['id']}/items", params={"decision": "rejected", "limit": 1}))
    assert items["total"] == 2 and items["next_offset"] == 1
    # Ordered by source ref: `mem0.jsonl#L4` before `mem0.jsonl#id:a2`.
    assert items["items"][0]["ref"] == "mem0.jsonl#L4"
    assert items["items"][0]["reason"].startswith("line 4: not a JSON line (truncated?)")
    everything = _ok(client.get(f"/v1/imports/{report['id']}/items"))
    assert {i["decision"] for i in everything["items"]} == {"added", "rejected"}
    assert everything["total"] == 4 and everything["next_offset"] is None


def test_the_cli_and_the_api_read_the_same_bytes_the_same_way(imports_api: Api, tmp_path: Path) -> None:
    """One layout reader: the same archive through `agent-memory import` and `POST /v1/imports` finds the same
    files and items, takes the same decisions and lists the same skipped items."""
    import json

    from agent_memory.cli.main import main

    encoded = _archive_of(
        {
            "shop/CLAUDE.md": "# Shop\n\n- Prices are stored in cents.\n\n```\nmake test\n```\n",
            "shop/.claude/rules/api.md": "---\npaths: [src/api/**]\n---\n\n- Handlers validate input.\n",
            "shop/node_modules/left-pad/CLAUDE.md": "- A dependency's own instructions.\n",
        }
    )
    api = _ok(
        imports_api.client("alpha").post(
            "/v1/imports", json={"namespace": "/projects/same-bytes", "archive": encoded}
        )
    )["report"]
    archive = tmp_path / "shop.tar.gz"
    archive.write_bytes(base64.b64decode(encoded))
    out = tmp_path / "report.json"
    argv = ["--data-dir", str(tmp_path / "cli-data"), "--embedder", "hashing", "--tenant", "alpha"]
    argv += ["import", "auto", str(archive), "-n", "/projects/same-bytes", "--report", str(out), "--quiet"]
    assert main(argv) == 0
    cli = json.loads(out.read_text(encoding="utf-8"))
    for key in ("format", "inventory", "decisions", "skipped", "rejected"):
        assert cli[key] == api[key], key
    # node_modules is skipped by both; the rules folder is found under the wrapping folder.
    assert api["inventory"]["files"] == ["shop/.claude/rules/api.md", "shop/CLAUDE.md"]
    assert api["decisions"]["added"] == 2


def test_a_skill_folder_imports_whole_and_its_files_are_read_and_exported(imports_api: Api) -> None:
    client = imports_api.client("alpha")
    namespace = "/projects/skill-folder"
    members = {
        "skills/deploy-check/SKILL.md": b"---\nname: deploy-check\ndescription: Check a deploy\n---\n\nSee references/flags.md.\n",
        "skills/deploy-check/references/flags.md": "# Flags\n\n- `--canary 5%` first ✅\n".encode(),
        "skills/deploy-check/scripts/check.sh": b"#!/bin/sh\ncurl -fsS https://status.example.com/health\n",
        "skills/deploy-check/assets/diagram.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        "MEMORY.md": b"- Deploys go out on Tuesdays.\n",
    }
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    upload = base64.b64encode(buffer.getvalue()).decode("ascii")

    report = _ok(client.post("/v1/imports", json={"namespace": namespace, "archive": upload}))["report"]
    viewed = _ok(client.get("/v1/skills/deploy-check", params={"namespace": namespace, "record": "false"}))
    flags = _ok(
        client.get(
            "/v1/skills/deploy-check/file", params={"namespace": namespace, "path": "references/flags.md"}
        )
    )
    missing = client.get(
        "/v1/skills/deploy-check/file", params={"namespace": namespace, "path": "assets/diagram.png"}
    )
    bundle = _ok(client.get("/v1/export", params={"namespace": namespace}))

    assert (report["decisions"]["skill_files_added"], report["decisions"]["skipped_skill_file"]) == (2, 1)
    assert [s["path"] for s in report["skipped"]] == ["skills/deploy-check/assets/diagram.png"]
    assert viewed["files"] == ["references/flags.md", "scripts/check.sh"]
    assert flags["text"] == "# Flags\n\n- `--canary 5%` first ✅\n"
    assert missing.status_code in (404, 422)
    paths = {entry["path"] for entry in bundle["manifest"]["files"]}
    assert {"skills/deploy-check/references/flags.md", "skills/deploy-check/scripts/check.sh"} <= paths
