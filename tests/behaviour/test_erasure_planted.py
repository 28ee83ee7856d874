"""Erasure you can trust (issue 28), on both runtimes: a distinctive string is planted in every place a user
can put text (records: content, context, metadata keys and values, source ref, a fullwidth spelling; correct,
archive and restore reasons; a metadata patch; MEMORY.md, USER.md, the daily log; a session's snapshot and
turn; an import and its archive's name; skills: their directory names, front matter, body, edit note and
outcome note; named snapshots), then purged by memory, subject, namespace and tenant.

The check is this test's own, not the product's verifier: it reads the raw bytes of every file of the local
data directory (databases with their WAL and free pages included), or, in AWS, every DynamoDB item, every S3
object version, every S3 vector with its metadata and every file of the mount, and counts the string in its
normalised forms (NFKC, case, whitespace). A control set in other namespaces and tenants is hashed before and
after each purge and must be byte-identical. Run with `-s` to see the per-kind figures."""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import io
import json
import tarfile
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.behaviour.conftest import Api, serve_api
from tests.contract.chat_fakes import FakeChatModel, text_reply

PURGER = "alpha-purger"
REASON = "erasure request 28"
CONTROL_NAMESPACES = {"alpha": ["/control/a", "/planted/nb/kid", "/planted/nb-sib"], "beta": ["/control/b"]}


@pytest.fixture(scope="module", params=["local", "aws"])
def planted_api(request, tmp_path_factory) -> Iterator[Api]:
    model = FakeChatModel(script=[text_reply("Noted.") for _ in range(40)])
    for api in serve_api(request.param, tmp_path_factory, chat_model=model):
        api.mount = _mount(tmp_path_factory) if request.param == "aws" else None  # type: ignore[attr-defined]
        _plant_control(api)
        yield api


def _mount(tmp_path_factory: pytest.TempPathFactory) -> Path:
    found = sorted(tmp_path_factory.getbasetemp().glob("mnt-memory*"))
    assert found, "the AWS runtime's file-function mount was not found"
    return found[-1]


# --------------------------------------------------------------------------- the independent raw check


def fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split()).casefold()


def copies(blob: bytes, mark: str) -> int:
    """How often `mark` appears in `blob` (as text, normalised; or as JSON escapes it; or in a gzip member)."""
    text = fold(blob.decode("utf-8", "replace"))
    found = text.count(fold(mark))
    escaped = fold(json.dumps(mark)[1:-1])
    if escaped != fold(mark):
        found += text.count(escaped)
    if blob[:2] == b"\x1f\x8b":
        with contextlib.suppress(OSError):
            found += copies(gzip.decompress(blob), mark)
    return found


def raw_places(api: Api) -> Iterator[tuple[str, bytes]]:
    """Every place the runtime keeps bytes, as (where, bytes)."""
    if api.runtime == "local":
        root = Path(api.data_dir)  # type: ignore[attr-defined]
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            yield path.relative_to(root).as_posix(), path.read_bytes()
        return
    yield from _aws_places(api)


def _aws_places(api: Api) -> Iterator[tuple[str, bytes]]:
    import boto3

    from tests.aws.support import REGION

    dynamodb = boto3.client("dynamodb", region_name=REGION)
    for table in dynamodb.list_tables()["TableNames"]:
        for page in dynamodb.get_paginator("scan").paginate(TableName=table):
            for item in page["Items"]:
                binaries = [v["B"] for v in item.values() if "B" in v]  # e.g. a gzip'd snapshot bundle
                text = json.dumps(item, ensure_ascii=False, default=lambda b: "<binary>").encode()
                yield f"dynamodb:{table}", text
                for blob in binaries:
                    yield f"dynamodb:{table}:binary", blob
    s3 = boto3.client("s3", region_name=REGION)
    for bucket in s3.list_buckets()["Buckets"]:
        versions = s3.list_object_versions(Bucket=bucket["Name"]).get("Versions", [])
        for version in versions:
            body = s3.get_object(Bucket=bucket["Name"], Key=version["Key"], VersionId=version["VersionId"])
            yield f"s3:{bucket['Name']}/{version['Key']}", version["Key"].encode() + body["Body"].read()
    vectors = boto3.client("s3vectors", region_name=REGION)
    for bucket in vectors.list_vector_buckets()["vectorBuckets"]:
        name = bucket["vectorBucketName"]
        for index in vectors.list_indexes(vectorBucketName=name)["indexes"]:
            listed = vectors.list_vectors(
                vectorBucketName=name, indexName=index["indexName"], returnMetadata=True
            )
            for vector in listed["vectors"]:
                yield f"s3vectors:{index['indexName']}", json.dumps(vector, default=str).encode()
    mount: Path = api.mount  # type: ignore[attr-defined]
    for path in sorted(p for p in mount.rglob("*") if p.is_file()):
        yield f"mount:{path.relative_to(mount).as_posix()}", path.as_posix().encode() + path.read_bytes()


def census(api: Api, mark: str) -> tuple[int, int, list[str]]:
    """(places searched, copies found, where)."""
    places = 0
    where: list[str] = []
    for place, blob in raw_places(api):
        places += 1
        found = copies(place.encode() + b"\n" + blob, mark)
        where.extend([place] * found)
    return places, len(where), where


# --------------------------------------------------------------------------- the control set


def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def _plant_control(api: Api) -> None:
    for who, namespaces in CONTROL_NAMESPACES.items():
        client = api.client(who)
        for namespace in namespaces:
            body = {"namespace": namespace, "content": f"Control fact for {namespace}: ferries leave at noon"}
            body |= {"context": "control context", "metadata": {"owner": "control"}}
            assert client.post("/v1/memories", json=body).status_code in (200, 201)
            entry = {"namespace": namespace, "content": f"control note of {namespace}"}
            ok(client.post("/v1/files/memory/entries", json=entry))
            ok(client.post("/v1/daily-log", json={"namespace": namespace, "text": "control log line"}))
            skill = {"namespace": namespace, "name": "control-steps", "description": "Control steps"}
            ok(client.post("/v1/skills", json=skill | {"body": "# Steps\n\n1. keep me\n"}), 201)


def control_parts(api: Api) -> dict[str, str]:
    """Everything the control namespaces hold, part by part (as the API returns it, and locally the raw bytes
    of their memory files), each as its sha256."""
    parts: dict[str, str] = {}

    def put(name: str, data: bytes) -> None:
        parts[name] = hashlib.sha256(data).hexdigest()

    for who, namespaces in CONTROL_NAMESPACES.items():
        client = api.client(who)
        for namespace in namespaces:
            for status in ("active", "superseded", "archived", "pending", "quarantined"):
                params = {"namespace": namespace, "status": status, "limit": 100}
                listed = ok(client.get("/v1/memories", params=params))
                put(f"{who}{namespace}:records:{status}", json.dumps(listed, sort_keys=True).encode())
            for kind in ("memory", "user"):
                text = ok(client.get(f"/v1/files/{kind}", params={"namespace": namespace}))["text"]
                put(f"{who}{namespace}:{kind}", text.encode())
            skills = ok(client.get("/v1/skills", params={"namespace": namespace}))  # a read: no view recorded
            put(f"{who}{namespace}:skills", json.dumps(skills, sort_keys=True).encode())
            if api.runtime == "local":
                folder = Path(api.data_dir) / "files" / who / namespace.lstrip("/")  # type: ignore[attr-defined]
                for path in sorted(p for p in folder.rglob("*") if p.is_file() and "/." not in str(p)):
                    if path.name == "signals.json":
                        continue  # views and uses: the check's own reads count there
                    put(f"{who}{namespace}:file:{path.relative_to(folder)}", path.read_bytes())
    return parts


def control_hash(api: Api, parts: dict[str, str] | None = None) -> str:
    parts = parts if parts is not None else control_parts(api)
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


# --------------------------------------------------------------------------- planting


def plant(api: Api, who: str, namespace: str, mark: str) -> dict[str, Any]:
    """`mark` in every place a user can put text in `namespace`; returns the ids planted."""
    client = api.client(who)
    written = []
    fullwidth = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in mark)  # NFKC: `mark`
    bodies = [
        {"content": f"The release codename is {mark}", "source": {"kind": "file", "ref": f"notes/{mark}.md"}},
        {"content": "Prefers green tea at standups", "context": f"said while discussing {mark}"},
        {"content": "Ships on Thursdays", "metadata": {mark: "tag", "project": f"about {mark}"}},
        {"content": f"Fullwidth spelling: {fullwidth}"},
    ]
    for body in bodies:
        response = client.post("/v1/memories", json={"namespace": namespace, "type": "project_state"} | body)
        assert response.status_code in (200, 201), response.text
        written.append(response.json()["memory"]["id"])
    ok(
        client.post(
            f"/v1/memories/{written[0]}/correct", json={"content": f"{mark} ships v2", "reason": mark}
        )
    )
    ok(client.post(f"/v1/memories/{written[1]}/archive", json={"reason": f"archived: {mark}"}))
    ok(client.post(f"/v1/memories/{written[1]}/restore", json={"reason": f"restored for {mark}"}))
    ok(client.patch(f"/v1/memories/{written[3]}", json={"metadata": {"note": f"patched {mark}"}}))
    ok(client.post("/v1/files/memory/entries", json={"namespace": namespace, "content": f"Remember {mark}"}))
    ok(client.post("/v1/files/user/entries", json={"namespace": namespace, "content": f"User said {mark}"}))
    ok(client.post("/v1/daily-log", json={"namespace": namespace, "text": f"today: {mark}"}))
    session = ok(client.post("/v1/sessions", json={"namespace": namespace}), 201)["session"]
    ok(client.post(f"/v1/sessions/{session['id']}/turns", json={"message": f"what about {mark}?"}))
    imported = _archive(
        {"memories/MEMORY.md": f"Imported note on {mark}\n", "memories/USER.md": "Likes tea\n"}
    )
    body = {"namespace": namespace, "archive": imported, "format": "hermes", "name": f"export-{mark}.tar.gz"}
    ok(client.post("/v1/imports", json=body))
    slug = fold(mark)
    skill = {"namespace": namespace, "name": slug, "description": f"How {mark} works"}
    ok(client.post("/v1/skills", json=skill | {"body": f"# {mark}\n\n1. run {mark}\n"}), 201)
    deploy = {"namespace": namespace, "name": "deploy-steps", "description": f"Deploy, mind {mark}"}
    ok(
        client.post("/v1/skills", json=deploy | {"body": f"# Steps\n\n1. build\n2. check {mark}\n3. ship\n"}),
        201,
    )
    edit = {"namespace": namespace, "body": f"# Steps\n\n1. build\n2. check {mark}\n3. ship\n", "note": mark}
    ok(client.post("/v1/skills/deploy-steps/edit", json=edit))
    outcome = {"namespace": namespace, "outcome": "helped", "note": f"worked for {mark}"}
    ok(client.post("/v1/skills/deploy-steps/outcomes", json=outcome))
    snapshot = client.post(
        "/v1/snapshots", json={"namespace": namespace, "name": f"snap-{slug}", "include_children": False}
    )
    assert snapshot.status_code in (200, 201), snapshot.text
    return {"records": written, "session": session["id"]}


def _archive(files: dict[str, str]) -> str:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f".hermes/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def purge(client: Any, **target: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    planned = ok(client.post("/v1/admin/purges", json=target))
    return planned, ok(client.post(f"/v1/admin/purges/{planned['id']}/execute", json={"reason": REASON}))


def report(
    kind: str,
    runtime: str,
    before: tuple[int, int, list[str]],
    after: tuple[int, int, list[str]],
    hashes: tuple[str, str],
) -> None:
    print(
        f"\n[{runtime}] purge by {kind}: places searched {before[0]} before / {after[0]} after; copies found "
        f"before {before[1]}, after {after[1]}; control sha256 before {hashes[0][:16]}… after {hashes[1][:16]}…"
    )


# --------------------------------------------------------------------------- the purges


def test_a_subject_purge_leaves_no_byte_of_the_subject_and_keeps_skills_readable(planted_api: Api) -> None:
    mark = "Quillfeather-8812"
    alpha = planted_api.client(PURGER)
    for namespace in ("/planted/subject", "/planted/subject2"):
        plant(planted_api, PURGER, namespace, mark)
    control = control_parts(planted_api)
    before = census(planted_api, mark)
    assert before[1] > 20, before[2]
    exported = [
        ok(alpha.get("/v1/export", params={"namespace": ns}))
        for ns in ("/planted/subject", "/planted/subject2")
    ]
    assert all(copies(json.dumps(bundle).encode(), mark) for bundle in exported)

    planned, done = purge(alpha, kind="subject", subject=mark)
    assert planned["target"]["subject"] == mark  # the caller's own input, until completion
    assert done["state"] == "completed", (
        [s for s in done["verification"]["stores"] if s["items"]],
        census(planted_api, mark)[2],
    )
    assert fold(mark) not in fold(json.dumps(done)), "the completed plan holds the subject"
    after = census(planted_api, mark)
    control_after = control_parts(planted_api)
    hashes = (control_hash(planted_api, control), control_hash(planted_api, control_after))
    report("subject", planted_api.runtime, before, after, hashes)
    assert after[1] == 0, after[2]
    assert hashes[0] == hashes[1], changed(control, control_after)
    for namespace in ("/planted/subject", "/planted/subject2"):
        bundle = ok(alpha.get("/v1/export", params={"namespace": namespace}))  # an export made now
        assert copies(json.dumps(bundle).encode(), mark) == 0
        deploy = alpha.get("/v1/skills/deploy-steps", params={"namespace": namespace})
        assert deploy.status_code == 200, deploy.text  # front matter intact, description redacted
        text = json.dumps(deploy.json())
        assert "1. build" in text and "3. ship" in text and fold(mark) not in fold(text)
        gone = alpha.get(f"/v1/skills/{fold(mark)}", params={"namespace": namespace})
        assert gone.status_code == 404, gone.text


def test_a_memory_purge_follows_a_correction_made_after_the_plan(planted_api: Api) -> None:
    alpha = planted_api.client(PURGER)
    namespace = "/planted/mem"
    secret = "The vault code for Kestrel is amberwing-5521"
    written = alpha.post("/v1/memories", json={"namespace": namespace, "content": secret})
    assert written.status_code in (200, 201), written.text
    first = written.json()["memory"]
    ok(alpha.post("/v1/files/memory/entries", json={"namespace": namespace, "content": secret}))
    ok(alpha.post("/v1/daily-log", json={"namespace": namespace, "text": f"noted: {secret}"}))
    ok(alpha.post("/v1/sessions", json={"namespace": namespace}), 201)
    control = control_parts(planted_api)
    before = census(planted_api, secret)

    planned = ok(alpha.post("/v1/admin/purges", json={"kind": "memory", "record_id": first["id"]}))
    # Between plan and execute: a correction creates a successor the plan does not list.
    successor = ok(alpha.post(f"/v1/memories/{first['id']}/correct", json={"content": secret + " (rotated)"}))
    successor_id = successor["memory"]["id"]
    assert successor_id not in planned["record_ids"]
    done = ok(alpha.post(f"/v1/admin/purges/{planned['id']}/execute", json={"reason": REASON}))
    assert done["state"] == "completed", [s for s in done["verification"]["stores"] if s["items"]]
    assert successor_id in done["record_ids"] and done["regrown"] >= 1
    assert alpha.get(f"/v1/memories/{successor_id}").status_code == 404
    after = census(planted_api, secret)
    control_after = control_parts(planted_api)
    hashes = (control_hash(planted_api, control), control_hash(planted_api, control_after))
    report("memory", planted_api.runtime, before, after, hashes)
    assert after[1] == 0, after[2]
    assert hashes[0] == hashes[1], changed(control, control_after)


def test_a_namespace_purge_touches_no_child_no_sibling_and_no_ancestor_folder(planted_api: Api) -> None:
    mark = "Tidewrack-3307"
    alpha = planted_api.client(PURGER)
    namespace = "/planted/nb"
    plant(planted_api, PURGER, namespace, mark)
    # A key for /planted/nb/* cannot write into /planted/nb's own folders.
    for intruder in ("/planted/nb/skills/deploy-steps", "/planted/nb/memory"):
        refused = alpha.post("/v1/files/memory/entries", json={"namespace": intruder, "content": "sneaky"})
        assert refused.status_code == 422 and "cannot hold memory files" in refused.json()["message"], (
            refused.text
        )
    control = control_parts(planted_api)
    before = census(planted_api, mark)

    planned = ok(alpha.post("/v1/admin/purges", json={"kind": "namespace", "namespace": namespace}))
    files = next(f for f in planned["plan"] if f["store"] == "files")
    assert not [r for r in files["refs"] if "/kid/" in r or "nb-sib" in r], files["refs"]
    late = alpha.post("/v1/memories", json={"namespace": namespace, "content": f"late write {mark}"}).json()
    done = ok(alpha.post(f"/v1/admin/purges/{planned['id']}/execute", json={"reason": REASON}))
    assert done["state"] == "completed", [s for s in done["verification"]["stores"] if s["items"]]
    assert late["memory"]["id"] in done["record_ids"]  # written after the plan: caught by the re-plan
    after = census(planted_api, mark)
    control_after = control_parts(planted_api)
    hashes = (control_hash(planted_api, control), control_hash(planted_api, control_after))
    report("namespace", planted_api.runtime, before, after, hashes)
    assert after[1] == 0, after[2]
    assert hashes[0] == hashes[1], changed(control, control_after)


def test_a_tenant_purge_leaves_nothing_of_the_tenant_and_touches_no_other(planted_api: Api) -> None:
    mark = "Orchidvane-6620"
    for namespace in ("/offboard/one", "/offboard/two"):
        plant(planted_api, "gamma", namespace, mark)
    control = control_parts(planted_api)
    before = census(planted_api, mark)

    _planned, done = purge(planted_api.client("gamma"), kind="tenant")
    assert done["state"] == "completed", [s for s in done["verification"]["stores"] if s["items"]]
    assert done["retained"], "the report lists what cannot be erased at once"
    after = census(planted_api, mark)
    control_after = control_parts(planted_api)
    hashes = (control_hash(planted_api, control), control_hash(planted_api, control_after))
    report("tenant", planted_api.runtime, before, after, hashes)
    assert after[1] == 0, after[2]
    assert hashes[0] == hashes[1], changed(control, control_after)


def _erasure(api: Api) -> Any:
    if api.runtime == "local":
        return api.services.erasure  # type: ignore[attr-defined]
    from agent_memory.handlers.api import services

    return services().erasure


def test_writes_to_the_scope_of_a_running_purge_are_refused_until_it_finishes(
    planted_api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    alpha = planted_api.client(PURGER)
    namespace, sibling = "/fenced/ns", "/fenced/ns-sib"
    kept = alpha.post(
        "/v1/memories", json={"namespace": namespace, "content": "Fenced fact: gates shut at ten"}
    )
    record_id = kept.json()["memory"]["id"]
    planned = ok(alpha.post("/v1/admin/purges", json={"kind": "namespace", "namespace": namespace}))
    records_step = next(s for s in _erasure(planted_api).steps() if s.name == "records")

    def crash(*args: Any, **kwargs: Any) -> int:
        raise RuntimeError("the purge's process died here")

    monkeypatch.setattr(records_step, "erase", crash)  # the purge stops half-way: still `executing`
    assert alpha.post(f"/v1/admin/purges/{planned['id']}/execute", json={"reason": REASON}).status_code == 500
    assert ok(alpha.get(f"/v1/admin/purges/{planned['id']}"))["state"] == "executing"

    writes = [
        ("/v1/memories", {"namespace": namespace, "content": "A write racing the purge"}),
        ("/v1/memories/batch", {"items": [{"namespace": namespace, "content": "A batched racing write"}]}),
        (f"/v1/memories/{record_id}/correct", {"content": "Fenced fact: gates shut at eleven"}),
        ("/v1/files/memory/entries", {"namespace": namespace, "content": "a racing note"}),
        ("/v1/daily-log", {"namespace": namespace, "text": "a racing log line"}),
    ]
    for path, body in writes:
        refused = alpha.post(path, json=body)
        assert refused.status_code == 409 and refused.json()["error"] == "purge_in_progress", (
            path,
            refused.text,
        )
        assert planned["id"] in refused.json()["message"]
    elsewhere = alpha.post(
        "/v1/memories", json={"namespace": sibling, "content": "The sibling is not fenced"}
    )
    assert elsewhere.status_code in (200, 201), elsewhere.text
    assert ok(alpha.get(f"/v1/memories/{record_id}"))["id"] == record_id  # reads go on

    monkeypatch.undo()
    done = ok(alpha.post(f"/v1/admin/purges/{planned['id']}/execute", json={"reason": REASON}))
    assert done["state"] == "completed", done["verification"]
    assert done["records"] == 1  # none of the refused writes landed
    after = alpha.post("/v1/memories", json={"namespace": namespace, "content": "After the purge"})
    assert after.status_code in (200, 201), after.text
