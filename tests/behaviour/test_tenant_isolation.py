"""Tenant isolation, driven by the API's own OpenAPI document (docs/openapi.json), on both runtimes.

Tenant `alpha` fills one namespace with every kind of data the API holds: records (active, archived, in an
open conflict, short-term), MEMORY.md and USER.md entries, a daily log, a session with a turn, an
Idempotency-Key. Tenant `beta` then calls EVERY operation of the document with alpha's ids, group, session and
namespace, using a key with every scope (admin included) on every namespace of its own tenant. Nothing may
succeed on alpha's data: id-addressed calls are 404 (not 403, which would confirm the id exists), namespace
reads see an empty namespace, namespace writes land in beta's own tenant, admin jobs never touch alpha, and
alpha's view of its data is byte-for-byte the same afterwards.

An operation added to the API without an attack below fails `test_every_operation_is_attacked` (and the
isolation test itself): add an attack to ATTACKS, or, only for an operation that holds no tenant data, an
entry with the reason to NOT_TENANT_SCOPED.
"""

from __future__ import annotations

import base64
import io
import json
import tarfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent_memory.domain.jobs.config import JobConfig
from agent_memory.domain.memory.policy import MemoryPolicy
from tests.behaviour.conftest import Api, serve_api
from tests.contract.chat_fakes import FakeChatModel, text_reply

SPEC = json.loads((Path(__file__).resolve().parents[2] / "docs" / "openapi.json").read_text(encoding="utf-8"))
SPEC_OPERATIONS = {
    (method.upper(), path)
    for path, item in SPEC["paths"].items()
    for method in item
    if method in {"get", "put", "post", "delete", "patch"}
}

# The only operations no other tenant is sent to, each with the reason. Keep this list short and explicit.
NOT_TENANT_SCOPED: dict[tuple[str, str], str] = {
    ("GET", "/v1/health"): "public liveness probe: no key, no tenant, returns only the service version",
}

# Forgetting job: every active record not accessed since "now" is eligible, so alpha's records are exactly
# what a job leaking across tenants would archive (alpha's own dry run shows it).
POLICY = MemoryPolicy(archive_unused_days=0, archive_below_strength=1.0)
JOB_THRESHOLD = 4


@pytest.fixture(scope="module", params=["local", "aws"])
def isolation_api(request, tmp_path_factory) -> Iterator[Api]:
    # A scripted chat model answers alpha's one turn; beta's turns must be refused before any model call
    # (the script has nothing left for them).
    model = FakeChatModel(script=[text_reply("Noted.")])
    # Alpha's job only has to exist: a batch over a low threshold (beta's own two-item batch stays synchronous).
    jobs = JobConfig(batch_threshold=JOB_THRESHOLD)
    yield from serve_api(request.param, tmp_path_factory, policy=POLICY, chat_model=model, jobs=jobs)


# --------------------------------------------------------------------------- alpha's data


@dataclass
class AlphaWorld:
    ns: str
    memory: dict[str, Any]
    """Active record; its content names the codename."""
    archived: dict[str, Any]
    short_term: dict[str, Any]
    conflict_group: str
    conflict_ids: list[str]
    session_id: str
    day: str
    idempotency_key: str
    remembered: dict[str, Any]
    """The body alpha sent with `idempotency_key`."""
    skill: str = "heron-deploy"
    """Alpha's skill (versions 1 and 2), curated today: `.curator/<day>/run.json` exists in alpha's tenant."""
    curated_day: str = ""
    import_id: str = ""
    """Alpha's import of a Mem0 export into its namespace (domain/interop)."""
    job_id: str = "job_0123456789abcdef01234567"
    """Alpha's job (a large batch: the local job worker, or the AWS job function)."""

    @property
    def record_ids(self) -> list[str]:
        return [self.memory["id"], self.archived["id"], self.short_term["id"], *self.conflict_ids]


SKILL_FOLDER = "heron-folder"
SKILL_FILE = "references/notes.md"
SNAPSHOT = "iso-snapshot"
"""The name of alpha's snapshot of its namespace."""

# Words that exist only in alpha's data: none may appear in an answer to beta (except where beta's own
# request carried them).
SECRETS = ("BLUE HERON", "GREY OWL", "favourite drink is coffee", "terse answers", "ops/heron.md")


def seed_alpha(api: Api) -> AlphaWorld:
    alpha = api.client("alpha")
    ns = f"/projects/iso-{uuid.uuid4().hex[:8]}"

    def ok(response: Any, status: int = 200) -> dict[str, Any]:
        assert response.status_code == status, response.text
        return response.json()

    key = f"alpha-{uuid.uuid4()}"
    remembered = {"content": "Alpha's launch codename is BLUE HERON", "namespace": ns}
    memory = ok(alpha.post("/v1/memories", json=remembered, headers={"Idempotency-Key": key}), 201)["memory"]
    old = ok(
        alpha.post("/v1/memories", json={"content": "Alpha's old vendor was GREY OWL", "namespace": ns}), 201
    )
    archived = ok(alpha.post(f"/v1/memories/{old['memory']['id']}/archive", json={"reason": "old"}))
    moment = "2026-11-02T09:00:00+00:00"  # two values dated to one moment: held for review (issue 27)
    first = ok(
        alpha.post(
            "/v1/memories",
            json={"content": "The user's favourite drink is coffee", "namespace": ns, "valid_from": moment},
        ),
        201,
    )
    second = ok(
        alpha.post(
            "/v1/memories",
            json={"content": "The user's favourite drink is tea", "namespace": ns, "valid_from": moment},
        ),
        201,
    )
    assert second["decision"] == "pending", second
    group = second["memory"]["conflict_group"]
    short_term = ok(
        alpha.post(
            "/v1/memories",
            json={
                "content": "Right now I'm debugging the BLUE HERON invoice export, just for today",
                "namespace": ns,
            },
        ),
        201,
    )["memory"]
    for query in ("BLUE HERON invoice export", "invoice export debugging", "what is blue heron"):
        ok(alpha.post("/v1/recall", json={"query": query, "namespaces": [ns]}))
    ok(
        alpha.post(
            "/v1/files/memory/entries",
            json={"namespace": ns, "content": "BLUE HERON checklist: ops/heron.md"},
        )
    )
    ok(
        alpha.post(
            "/v1/files/user/entries", json={"namespace": ns, "content": "Alpha's admin wants terse answers"}
        )
    )
    day = ok(
        alpha.post("/v1/daily-log", json={"namespace": ns, "text": "Shipped the BLUE HERON invoice fix"})
    )
    session = ok(alpha.post("/v1/sessions", json={"namespace": ns}), 201)["session"]
    assert (
        ok(alpha.post(f"/v1/sessions/{session['id']}/turns", json={"message": "hello"}))["reply"] == "Noted."
    )

    world = AlphaWorld(
        ns=ns,
        memory=memory,
        archived=archived,
        short_term=short_term,
        conflict_group=group,
        conflict_ids=[first["memory"]["id"], second["memory"]["id"]],
        session_id=session["id"],
        day=day["path"].removeprefix("memory/").removesuffix(".md"),
        idempotency_key=key,
        remembered=remembered,
    )
    skill = {
        "namespace": ns,
        "name": world.skill,
        "description": "BLUE HERON deploy",
        "body": "## Steps\nship",
    }
    ok(alpha.post("/v1/skills", json=skill), 201)
    ok(
        alpha.post(
            f"/v1/skills/{world.skill}/patch", json={"namespace": ns, "heading": "Steps", "content": "go"}
        )
    )
    world.curated_day = ok(alpha.post("/v1/admin/curate", json={"namespace": ns}))["runs"][0]["day"]
    # A snapshot of alpha's namespace (domain/versioning): beta's snapshot calls name it.
    ok(alpha.post("/v1/snapshots", json={"namespace": ns, "name": SNAPSHOT}), 201)
    # Controls: what beta's admin jobs would reach if they crossed tenants. Alpha's own dry runs (which
    # write nothing) find alpha's records for the forgetting job and alpha's notes for the dreaming sweep.
    decay = ok(alpha.post("/v1/admin/archive-decayed", json={"namespace": ns, "dry_run": True}))
    assert {r["id"] for r in decay["archived"]} >= {memory["id"], short_term["id"]}
    dream = ok(alpha.post("/v1/admin/dream", json={"namespace": ns, "dry_run": True}))
    assert any("BLUE HERON" in c["text"] for run in dream["runs"] for c in run["candidates"])
    mem0 = json.dumps({"results": [{"id": "m-1", "memory": "Alpha's ops runbook is ops/heron.md"}]})
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        info = tarfile.TarInfo("mem0-export.json")
        info.size = len(mem0.encode())
        tar.addfile(info, io.BytesIO(mem0.encode()))
    upload = {"namespace": ns, "archive": base64.b64encode(archive.getvalue()).decode("ascii")}
    world.import_id = ok(alpha.post("/v1/imports", json=upload))["report"]["id"]
    # A skill folder with a file beside its SKILL.md (GET /v1/skills/{name}/file): alpha reads it back.
    folder = {
        f"skills/{SKILL_FOLDER}/SKILL.md": b"---\nname: heron-folder\ndescription: BLUE HERON\n---\n\nSee notes.\n",
        f"skills/{SKILL_FOLDER}/{SKILL_FILE}": b"# BLUE HERON notes\n",
        "MEMORY.md": b"- Alpha's heron folder holds the deploy notes.\n",
    }
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        for member, data in folder.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    upload = {"namespace": ns, "archive": base64.b64encode(archive.getvalue()).decode("ascii")}
    ok(alpha.post("/v1/imports", json=upload))
    kept = ok(alpha.get(f"/v1/skills/{SKILL_FOLDER}/file", params={"namespace": ns, "path": SKILL_FILE}))
    assert "BLUE HERON" in kept["text"]
    # A job of alpha's (the local job worker; in AWS the job function): beta's GET /v1/jobs/{id} must not
    # reach it.
    items = [
        {"namespace": ns, "content": f"Alpha job fact {n}: heron queue {n}"} for n in range(JOB_THRESHOLD + 1)
    ]
    with api.client("alpha", follow_jobs=False) as raw:
        job = ok(raw.post("/v1/memories/batch", json={"items": items}), 202)
        while job["status"] not in ("succeeded", "failed"):  # settled before alpha's view is taken
            job = ok(raw.get(job["location"]))
        assert job["status"] == "succeeded", job
        world.job_id = job["id"]
    # A real sweep: its audit (run.json, with alpha's notes in it) is what beta's run listing must not reach.
    swept = ok(alpha.post("/v1/admin/dream", json={"namespace": ns}))["runs"][0]
    runs = ok(alpha.get("/v1/admin/dream/runs", params={"namespace": ns}))["runs"]
    assert [run["run_id"] for run in runs] == [swept["run_id"]]
    assert any("BLUE HERON" in c["text"] for c in runs[0]["candidates"])
    return world


def alpha_view(api: Api, world: AlphaWorld) -> dict[str, Any]:
    """Everything alpha can read about its data, through read-only calls."""
    alpha = api.client("alpha")
    ns = {"namespace": world.ns}

    def read(path: str, params: dict[str, str] | None = None) -> Any:
        response = alpha.get(path, params=params)
        assert response.status_code == 200, (path, response.text)
        return response.json()

    session = read(f"/v1/sessions/{world.session_id}")
    # "open" turns into "expired" with the clock alone; only "ended" is something beta could have caused.
    session["session"]["status"] = session["session"]["status"] == "ended"
    return {
        "records": {record_id: read(f"/v1/memories/{record_id}") for record_id in world.record_ids},
        "history": read(f"/v1/memories/{world.memory['id']}/history"),
        "listed": {
            status: read("/v1/memories", {**ns, **({"status": status} if status else {})})
            for status in ("", "active", "archived", "pending", "superseded")
        },
        "changes": read("/v1/changes", ns),
        "conflicts": read("/v1/conflicts", ns),
        "files": {kind: read(f"/v1/files/{kind}", ns) for kind in ("memory", "user")},
        "daily": read("/v1/daily-log", {**ns, "date": world.day}),
        "stats": read("/v1/stats", ns),
        "session": session,
        "skills": read("/v1/skills", ns),
        "skill": read(f"/v1/skills/{world.skill}", {**ns, "record": "false"}),
        "skill_history": read(f"/v1/skills/{world.skill}/history", ns),
        "skill_v1": read(f"/v1/skills/{world.skill}/versions/1", ns),
        "curator_run": read("/v1/admin/curator/runs", {**ns, "day": world.curated_day}),
        "dream_runs": read("/v1/admin/dream/runs", ns),
        "import": read(f"/v1/imports/{world.import_id}"),
    }


# --------------------------------------------------------------------------- beta's attacks


@dataclass
class Probe:
    """Beta's client; records which spec operation each call exercised."""

    api: Api
    world: AlphaWorld
    exercised: set[tuple[str, str]] = field(default_factory=set)
    beta_records: list[str] = field(default_factory=list)

    def call(
        self,
        method: str,
        template: str,
        *,
        path: dict[str, str] | None = None,
        body: Any = None,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        echoes_own_input: bool = False,
    ) -> Any:
        url = template.format(**(path or {}))
        response = self.api.client("beta").request(method, url, json=body, params=params, headers=headers)
        self.exercised.add((method, template))
        if not echoes_own_input:
            leaked = [secret for secret in SECRETS if secret in response.text]
            assert not leaked, (method, url, leaked, response.text)
        return response

    def refused(self, method: str, template: str, **kwargs: Any) -> None:
        """404 from the API's own error handler: "no such thing" in beta's tenant, never the router's "no
        such route" (its body has no `error`), never 403 (which would confirm that the id exists)."""
        response = self.call(method, template, **kwargs)
        assert response.status_code == 404, (method, template, kwargs, response.text)
        assert response.json()["error"] == "not_found", response.text

    def ok(self, method: str, template: str, status: int = 200, **kwargs: Any) -> Any:
        response = self.call(method, template, **kwargs)
        assert response.status_code == status, (method, template, kwargs, response.text)
        return response.json()


def read_memory(p: Probe) -> None:
    for record_id in p.world.record_ids:
        p.refused("GET", "/v1/memories/{memory_id}", path={"memory_id": record_id})


def read_history(p: Probe) -> None:
    for record_id in p.world.record_ids:
        p.refused("GET", "/v1/memories/{memory_id}/history", path={"memory_id": record_id})


def list_memories(p: Probe) -> None:
    for status in (None, "active", "archived", "pending"):
        params = {"namespace": p.world.ns, **({"status": status} if status else {})}
        assert p.ok("GET", "/v1/memories", params=params)["items"] == []
    # A subtree listing (children included by default) of a parent of alpha's namespace, page by page:
    # beta's own records at most, never one of alpha's (the probe also checks every answer for its words)
    for children in ("true", "false"):
        cursor: str | None = None
        while True:
            params = {"namespace": "/projects", "include_children": children, "limit": "2"}
            page = p.ok("GET", "/v1/memories", params={**params, **({"cursor": cursor} if cursor else {})})
            assert not {m["id"] for m in page["items"]} & set(p.world.record_ids)
            cursor = page["next_cursor"]
            if cursor is None:
                break


def list_changes(p: Probe) -> None:
    assert p.ok("GET", "/v1/changes", params={"namespace": p.world.ns})["items"] == []


def list_conflicts(p: Probe) -> None:
    assert p.ok("GET", "/v1/conflicts", params={"namespace": p.world.ns})["conflicts"] == []


def read_files(p: Probe) -> None:
    for kind in ("memory", "user"):
        file = p.ok("GET", "/v1/files/{kind}", path={"kind": kind}, params={"namespace": p.world.ns})
        assert (file["entries"], file["used"]) == ([], 0)


def read_daily_log(p: Probe) -> None:
    p.refused("GET", "/v1/daily-log", params={"namespace": p.world.ns, "date": p.world.day})


def read_stats(p: Probe) -> None:
    stats = p.ok("GET", "/v1/stats", params={"namespace": p.world.ns})
    assert stats["by_status"] == {} and {f["used"] for f in stats["files"].values()} == {0}


def recall(p: Probe) -> None:
    for mode_query in ("BLUE HERON launch codename", "coffee and tea", "GREY OWL vendor"):
        body = {
            "query": mode_query,
            "namespaces": [p.world.ns],
            "statuses": ["active", "archived", "pending"],
        }
        assert p.ok("POST", "/v1/recall", body=body)["results"] == []


def read_session(p: Probe) -> None:
    p.refused("GET", "/v1/sessions/{session_id}", path={"session_id": p.world.session_id})


def update_memory(p: Probe) -> None:
    for record_id in p.world.record_ids:
        p.refused("PATCH", "/v1/memories/{memory_id}", path={"memory_id": record_id}, body={"score": 0.01})


def correct_memory(p: Probe) -> None:
    for record_id in p.world.record_ids:
        body = {"content": "Alpha's codename was leaked", "reason": "beta"}
        p.refused("POST", "/v1/memories/{memory_id}/correct", path={"memory_id": record_id}, body=body)


def archive_memory(p: Probe) -> None:
    for record_id in p.world.record_ids:
        p.refused("POST", "/v1/memories/{memory_id}/archive", path={"memory_id": record_id}, body={})


def restore_memory(p: Probe) -> None:
    for record_id in p.world.record_ids:
        p.refused("POST", "/v1/memories/{memory_id}/restore", path={"memory_id": record_id}, body={})


def resolve_conflict_keeping_alphas_records(p: Probe) -> None:
    for keep in ([p.world.conflict_ids[0]], p.world.conflict_ids):
        p.refused(
            "POST",
            "/v1/conflicts/{group}/resolve",
            path={"group": p.world.conflict_group},
            body={"keep": keep},
        )


def end_session(p: Probe) -> None:
    p.refused("POST", "/v1/sessions/{session_id}/end", path={"session_id": p.world.session_id}, body={})


def chat_turn(p: Probe) -> None:
    # The model is configured (alpha's turn got an answer), so a 404 here is the session check, not a 503.
    p.refused(
        "POST",
        "/v1/sessions/{session_id}/turns",
        path={"session_id": p.world.session_id},
        body={"message": "print the memory snapshot"},
    )


def archive_decayed(p: Probe) -> None:
    for body in ({"namespace": p.world.ns}, {}):  # alpha's namespace, then "all namespaces of my tenant"
        report = p.ok("POST", "/v1/admin/archive-decayed", body=body)
        assert (report["examined"], report["archived"]) == (0, []), report


def dream(p: Probe) -> None:
    for body in ({"namespace": p.world.ns, "force": True}, {"force": True}):
        report = p.ok("POST", "/v1/admin/dream", body=body)
        assert all(run["candidates"] == [] for run in report["runs"]), report
        assert all(run["summary"]["candidates"] == 0 for run in report["runs"]), report


def read_import(p: Probe) -> None:
    p.refused("GET", "/v1/imports/{import_id}", path={"import_id": p.world.import_id})


def read_import_items(p: Probe) -> None:
    p.refused("GET", "/v1/imports/{import_id}/items", path={"import_id": p.world.import_id})


def roll_back_import(p: Probe) -> None:
    p.refused("POST", "/v1/imports/{import_id}/rollback", path={"import_id": p.world.import_id})


def read_job(p: Probe) -> None:
    p.refused("GET", "/v1/jobs/{job_id}", path={"job_id": p.world.job_id})


def start_import(p: Probe) -> None:
    """Beta imports into the namespace name alpha uses: it lands in beta's tenant, next to nothing of alpha's."""
    jsonl = b'{"role": "user", "content": "Beta prefers dark mode in every editor", "timestamp": "2026-11-30T10:00:00Z"}\n'
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        info = tarfile.TarInfo("chat.jsonl")
        info.size = len(jsonl)
        tar.addfile(info, io.BytesIO(jsonl))
    body = {"namespace": p.world.ns, "archive": base64.b64encode(archive.getvalue()).decode("ascii")}
    report = p.ok("POST", "/v1/imports", body=body)["report"]
    assert report["id"] != p.world.import_id and report["decisions"]["merged"] == 0, report


def whoami(p: Probe) -> None:
    """The caller's own identity, from its key: beta is told it is beta."""
    assert p.ok("GET", "/v1/whoami")["tenant"] == "beta"


def read_dream_runs(p: Probe) -> None:
    """Beta's own tenant's runs only (its forced sweeps may have made some): never alpha's audit."""
    runs = p.ok("GET", "/v1/admin/dream/runs", params={"namespace": p.world.ns, "limit": 30})["runs"]
    assert not any("BLUE HERON" in c["text"] for run in runs for c in run["candidates"]), runs


def start_dream(p: Probe) -> None:
    for body in ({"namespaces": [p.world.ns]}, {}):
        response = p.call("POST", "/v1/admin/dream/start", body=body)
        if p.api.runtime == "local":  # the sweep runs on the server's thread, in beta's tenant only
            assert response.status_code == 202, response.text
            launcher = p.api.services.dream_launcher
            swept = launcher.started[response.json()["execution"]].result(timeout=120)
            assert swept == (body.get("namespaces") or p.api.services.dreaming.namespaces("beta")), swept
            continue
        assert response.status_code == 202, response.text
        execution = p.api.stepfunctions.describe_execution(executionArn=response.json()["execution"])
        started = json.loads(execution["input"])
        assert started["tenants"] == ["beta"], started  # the workflow sweeps beta's tenant only
        assert started.get("namespaces", []) == body.get("namespaces", []), started


def replace_file_entry(p: Probe) -> None:
    for kind, match in (("memory", "BLUE HERON"), ("user", "terse")):
        body = {"namespace": p.world.ns, "match": match, "content": "Beta was here"}
        # (the 404 names the text beta asked for)
        p.refused(
            "POST", "/v1/files/{kind}/entries/replace", path={"kind": kind}, body=body, echoes_own_input=True
        )


def remove_file_entry(p: Probe) -> None:
    for kind, match in (("memory", "BLUE HERON"), ("user", "terse")):
        body = {"namespace": p.world.ns, "match": match}
        p.refused(
            "POST", "/v1/files/{kind}/entries/remove", path={"kind": kind}, body=body, echoes_own_input=True
        )


def add_file_entry(p: Probe) -> None:
    for kind in ("memory", "user"):
        body = {"namespace": p.world.ns, "content": f"Beta's own {kind} note"}
        file = p.ok("POST", "/v1/files/{kind}/entries", path={"kind": kind}, body=body)
        assert file["entries"] == [f"Beta's own {kind} note"], file  # beta's file, with only beta's entry


def append_daily_log(p: Probe) -> None:
    appended = p.ok("POST", "/v1/daily-log", body={"namespace": p.world.ns, "text": "Beta's standup"})
    assert "Beta's standup" in appended["text"]


def start_session(p: Probe) -> None:
    started = p.ok("POST", "/v1/sessions", 201, body={"namespace": p.world.ns})
    snapshot = json.dumps(started["system"])
    # The snapshot holds the namespace's memory files: beta's (added above), never alpha's.
    assert "Beta's own memory note" in snapshot and "Beta's own user note" in snapshot


def remember(p: Probe) -> None:
    # What would join alpha's conflict group, or supersede alpha's record, inside one tenant
    for content in ("The user no longer likes coffee", "Alpha's launch codename is no longer BLUE HERON"):
        body = {"content": content, "namespace": p.world.ns}
        result = p.ok("POST", "/v1/memories", 201, body=body, echoes_own_input=True)
        assert result["decision"] == "added" and result["related"] == [], result
        p.beta_records.append(result["memory"]["id"])
    # Alpha's exact body and Idempotency-Key: a key shared across tenants would replay alpha's answer
    replayed = p.ok(
        "POST",
        "/v1/memories",
        201,
        body=p.world.remembered,
        headers={"Idempotency-Key": p.world.idempotency_key},
        echoes_own_input=True,
    )
    assert replayed["memory"]["tenant"] == "beta" and replayed["memory"]["id"] != p.world.memory["id"]
    assert {related["id"] for related in replayed["related"]} <= set(p.beta_records), replayed


def remember_batch(p: Probe) -> None:
    items = [
        {"content": "alpha's launch codename is BLUE HERON", "namespace": p.world.ns},  # a merge in alpha
        {"content": "The user likes coffee and tea no more", "namespace": p.world.ns},
    ]
    batch = p.ok("POST", "/v1/memories/batch", body={"items": items}, echoes_own_input=True)
    for result in batch["results"]:
        assert result["memory"]["tenant"] == "beta" and result["memory"]["id"] not in p.world.record_ids
        assert all(related["tenant"] == "beta" for related in result["related"]), result


def list_skills(p: Probe) -> None:
    assert p.ok("GET", "/v1/skills", params={"namespace": p.world.ns})["skills"] == []


def read_skill(p: Probe) -> None:
    for record in ("true", "false"):
        params = {"namespace": p.world.ns, "record": record}
        p.refused("GET", "/v1/skills/{name}", path={"name": p.world.skill}, params=params)


def read_skill_file(p: Probe) -> None:
    params = {"namespace": p.world.ns, "path": SKILL_FILE}
    p.refused("GET", "/v1/skills/{name}/file", path={"name": SKILL_FOLDER}, params=params)


def read_skill_history(p: Probe) -> None:
    p.refused(
        "GET", "/v1/skills/{name}/history", path={"name": p.world.skill}, params={"namespace": p.world.ns}
    )


def read_skill_version(p: Probe) -> None:
    for version in ("1", "2"):
        path = {"name": p.world.skill, "version": version}
        p.refused("GET", "/v1/skills/{name}/versions/{version}", path=path, params={"namespace": p.world.ns})


def change_skill(action: str, body: dict[str, Any]) -> Callable[[Probe], None]:
    def attack(p: Probe) -> None:
        path = {"name": p.world.skill}
        p.refused("POST", f"/v1/skills/{{name}}/{action}", path=path, body={"namespace": p.world.ns, **body})

    return attack


def read_curator_run(p: Probe) -> None:
    params = {"namespace": p.world.ns, "day": p.world.curated_day}
    p.refused("GET", "/v1/admin/curator/runs", params=params)


def curate(p: Probe) -> None:
    for body in ({"namespace": p.world.ns, "force": True}, {"force": True}):
        runs = p.ok("POST", "/v1/admin/curate", body=body)["runs"]
        assert all(run["decisions"] == [] for run in runs), runs


def accept_proposal(p: Probe) -> None:
    body = {"namespace": p.world.ns, "day": p.world.curated_day, "proposal_id": "p-anything"}
    p.refused("POST", "/v1/admin/curator/accept", body=body)


def create_skill(p: Probe) -> None:
    body = {
        "namespace": p.world.ns,
        "name": p.world.skill,
        "description": "Beta's own",
        "body": "## Steps\nbeta",
    }
    created = p.ok("POST", "/v1/skills", 201, body=body)
    assert (created["version"], created["description"]) == (1, "Beta's own"), created  # beta's, not alpha's


def resolve_conflict_keeping_own_record(p: Probe) -> None:
    # Beta keeps a record of its own: the group is looked up in beta's tenant, where it does not exist.
    body = {"keep": [p.beta_records[0]]}
    p.refused("POST", "/v1/conflicts/{group}/resolve", path={"group": p.world.conflict_group}, body=body)


# In order: reads first, then id-addressed writes and admin jobs (beta still owns nothing), then beta's own
# writes under alpha's namespace name (after which beta's own answers may contain what beta wrote).
def _migration_status(p: Probe) -> dict[str, Any]:
    status = p.ok("GET", "/v1/admin/migration/status")
    assert status["tenant"] == "beta", status
    return status


def _migrate_to_verified(p: Probe) -> dict[str, Any]:
    """Beta moves its own vectors to another model: the count, the backfill and the indexes are beta's."""
    from tests.behaviour.test_embedding_migration import run_backfill_task, wait_for_state

    started = p.ok("POST", "/v1/admin/migration/start")
    assert started["tenant"] == "beta", started
    run_backfill_task(p.api, p.api.client("beta"))
    status = wait_for_state(p.api.client("beta"), "verifying")
    assert status["records"] == status["target_vectors"], status  # beta's records, beta's new index
    return status


def plan_migration(p: Probe) -> None:
    planned = p.ok("POST", "/v1/admin/migration/plan", body={"embedder": "hashing@128"})
    assert planned["tenant"] == "beta" and planned["state"] == "planned", planned


def migration_status(p: Probe) -> None:
    assert _migration_status(p)["state"] == "planned"


def start_migration(p: Probe) -> None:
    _migrate_to_verified(p)


def retry_migration(p: Probe) -> None:
    assert p.ok("POST", "/v1/admin/migration/retry")["state"] == "verifying"


def switch_migration(p: Probe) -> None:
    assert p.ok("POST", "/v1/admin/migration/switch")["state"] == "switched"


def rollback_migration(p: Probe) -> None:
    assert (
        p.ok("POST", "/v1/admin/migration/rollback", body={"reason": "isolation"})["state"] == "rolled_back"
    )


def archive_migration(p: Probe) -> None:
    plan_migration(p)
    verified = _migrate_to_verified(p)
    switch_migration(p)
    archived = p.ok("POST", "/v1/admin/migration/archive")
    # Only beta's vectors were exported (and only beta's old index deleted): alpha's view is checked after.
    assert archived["archive"]["vectors"] == verified["records"], archived


def _purge(p: Probe, method: str, template: str, **kwargs: Any) -> Any:
    """Beta with the purge scope (admin alone does not grant it): beta's purges see and erase only beta."""
    url = template.format(**kwargs.pop("path", {}))
    p.exercised.add((method, template))
    return p.api.client("beta-purger").request(method, url, **kwargs)


def plan_purges(p: Probe) -> None:
    refused = _purge(
        p, "POST", "/v1/admin/purges", json={"kind": "memory", "record_id": p.world.memory["id"]}
    )
    assert refused.status_code == 404 and refused.json()["error"] == "not_found", refused.text
    for target in (
        {"kind": "namespace", "namespace": p.world.ns},
        {"kind": "subject", "subject": "BLUE HERON"},
    ):
        planned = _purge(p, "POST", "/v1/admin/purges", json=target)
        assert planned.status_code == 200, planned.text
        body = planned.json()
        assert body["tenant"] == "beta" and body["record_ids"] == [], body
        assert all(finding["items"] == 0 for finding in body["plan"]), body  # alpha's copies are not beta's
    p.purge_plan = body["id"]  # type: ignore[attr-defined]


def execute_purge(p: Probe) -> None:
    path = {"plan_id": p.purge_plan}  # type: ignore[attr-defined]
    done = _purge(p, "POST", "/v1/admin/purges/{plan_id}/execute", path=path, json={"reason": "isolation"})
    assert done.status_code == 200 and done.json()["verification"]["remaining"] == 0, done.text


def read_purges(p: Probe) -> None:
    listed = _purge(p, "GET", "/v1/admin/purges").json()["purges"]
    assert listed and all(plan["tenant"] == "beta" for plan in listed), listed
    shown = _purge(p, "GET", "/v1/admin/purges/{plan_id}", path={"plan_id": p.purge_plan})  # type: ignore[attr-defined]
    assert shown.status_code == 200 and shown.json()["tenant"] == "beta", shown.text


def export_namespace(p: Probe) -> None:
    exported = p.ok("GET", "/v1/export", params={"namespace": p.world.ns})
    assert exported["manifest"]["counts"]["records"] == 0 and exported["manifest"]["counts"]["files"] == 0


def list_snapshots(p: Probe) -> None:
    assert p.ok("GET", "/v1/snapshots", params={"namespace": p.world.ns})["items"] == []


def read_snapshot(p: Probe) -> None:
    params = {"namespace": p.world.ns}
    p.refused("GET", "/v1/snapshots/{snapshot}", path={"snapshot": SNAPSHOT}, params=params)
    p.refused("GET", "/v1/snapshots/{snapshot}/diff", path={"snapshot": SNAPSHOT}, params=params)


def restore_snapshot(p: Probe) -> None:
    body = {"namespace": p.world.ns}
    p.refused("POST", "/v1/snapshots/{snapshot}/restore", path={"snapshot": SNAPSHOT}, body=body)


def diff_times(p: Probe) -> None:
    diff = p.ok("GET", "/v1/diff", params={"namespace": p.world.ns, "from": "2000-01-01T00:00:00Z"})
    assert diff["records"] == [], diff


def reused_memories(p: Probe) -> None:
    assert p.ok("GET", "/v1/memories/reused", params={"namespace": p.world.ns})["items"] == []


def mark_reviewed(p: Probe) -> None:
    for record_id in p.world.record_ids:
        p.refused("POST", "/v1/memories/{memory_id}/reviewed", path={"memory_id": record_id})


def create_snapshot(p: Probe) -> None:
    # Beta's snapshot of the same namespace name holds beta's records only.
    taken = p.ok("POST", "/v1/snapshots", 201, body={"namespace": p.world.ns, "name": SNAPSHOT})
    assert taken["counts"]["records"] >= len(p.beta_records), taken  # beta's own writes of the attacks above
    path, params = {"snapshot": SNAPSHOT}, {"namespace": p.world.ns}
    detail = p.ok("GET", "/v1/snapshots/{snapshot}", path=path, params=params, echoes_own_input=True)
    assert not {r["id"] for r in detail["records"]} & set(p.world.record_ids), detail


def import_bundle(p: Probe) -> None:
    """Beta imports a bundle whose record carries alpha's record id: it lands in beta's tenant."""
    from datetime import UTC, datetime

    from agent_memory.domain.interop import bundle as bundles
    from agent_memory.domain.records import MemoryRecord, MemoryType, content_hash

    now = datetime.now(UTC)
    content = "Beta's imported note"
    record = MemoryRecord(
        id=p.world.memory["id"],
        tenant="beta",
        namespace=p.world.ns,
        type=MemoryType.DOMAIN_KNOWLEDGE,
        content=content,
        content_hash=content_hash(content),
        created_at=now,
        updated_at=now,
        last_access_at=now,
        valid_from=now,
        recorded_at=now,
    )
    bundle = bundles.new_bundle([p.world.ns], [bundles.record_entry(record, [], None)], [], now)
    report = p.ok("POST", "/v1/export/import", body={"bundle": bundles.to_inline(bundle)})
    assert report["created"] == [p.world.memory["id"]], report
    path = {"memory_id": p.world.memory["id"]}
    assert p.ok("GET", "/v1/memories/{memory_id}", path=path)["tenant"] == "beta"


ATTACKS: list[tuple[tuple[str, str], Callable[[Probe], None]]] = [
    # First, while beta holds nothing: beta's purges must find and erase nothing of alpha's.
    (("POST", "/v1/admin/purges"), plan_purges),
    (("POST", "/v1/admin/purges/{plan_id}/execute"), execute_purge),
    (("GET", "/v1/admin/purges"), read_purges),
    (("GET", "/v1/admin/purges/{plan_id}"), read_purges),
    (("GET", "/v1/export"), export_namespace),
    (("GET", "/v1/snapshots"), list_snapshots),
    (("GET", "/v1/snapshots/{snapshot}"), read_snapshot),
    (("GET", "/v1/snapshots/{snapshot}/diff"), read_snapshot),
    (("POST", "/v1/snapshots/{snapshot}/restore"), restore_snapshot),
    (("GET", "/v1/diff"), diff_times),
    (("GET", "/v1/memories/reused"), reused_memories),
    (("POST", "/v1/memories/{memory_id}/reviewed"), mark_reviewed),
    (("GET", "/v1/memories/{memory_id}"), read_memory),
    (("GET", "/v1/memories/{memory_id}/history"), read_history),
    (("GET", "/v1/memories"), list_memories),
    (("GET", "/v1/changes"), list_changes),
    (("GET", "/v1/conflicts"), list_conflicts),
    (("GET", "/v1/files/{kind}"), read_files),
    (("GET", "/v1/daily-log"), read_daily_log),
    (("GET", "/v1/stats"), read_stats),
    (("POST", "/v1/recall"), recall),
    (("GET", "/v1/sessions/{session_id}"), read_session),
    (("PATCH", "/v1/memories/{memory_id}"), update_memory),
    (("POST", "/v1/memories/{memory_id}/correct"), correct_memory),
    (("POST", "/v1/memories/{memory_id}/archive"), archive_memory),
    (("POST", "/v1/memories/{memory_id}/restore"), restore_memory),
    (("POST", "/v1/conflicts/{group}/resolve"), resolve_conflict_keeping_alphas_records),
    (("POST", "/v1/sessions/{session_id}/end"), end_session),
    (("POST", "/v1/sessions/{session_id}/turns"), chat_turn),
    (("POST", "/v1/admin/archive-decayed"), archive_decayed),
    (("POST", "/v1/admin/dream"), dream),
    (("POST", "/v1/admin/dream/start"), start_dream),
    (("GET", "/v1/admin/dream/runs"), read_dream_runs),
    (("GET", "/v1/whoami"), whoami),
    (("GET", "/v1/imports/{import_id}"), read_import),
    (("GET", "/v1/imports/{import_id}/items"), read_import_items),
    (("POST", "/v1/imports/{import_id}/rollback"), roll_back_import),
    (("POST", "/v1/imports"), start_import),
    (("GET", "/v1/jobs/{job_id}"), read_job),
    (("GET", "/v1/skills"), list_skills),
    (("GET", "/v1/skills/{name}"), read_skill),
    (("GET", "/v1/skills/{name}/file"), read_skill_file),
    (("GET", "/v1/skills/{name}/history"), read_skill_history),
    (("GET", "/v1/skills/{name}/versions/{version}"), read_skill_version),
    (("POST", "/v1/skills/{name}/edit"), change_skill("edit", {"body": "## Steps\nbeta"})),
    (("POST", "/v1/skills/{name}/patch"), change_skill("patch", {"heading": "Steps", "content": "beta"})),
    (("POST", "/v1/skills/{name}/archive"), change_skill("archive", {})),
    (("POST", "/v1/skills/{name}/restore"), change_skill("restore", {})),
    (("POST", "/v1/skills/{name}/pin"), change_skill("pin", {"pinned": True})),
    (("POST", "/v1/skills/{name}/use"), change_skill("use", {})),
    (("POST", "/v1/skills/{name}/outcomes"), change_skill("outcomes", {"outcome": "misled"})),
    (("GET", "/v1/admin/curator/runs"), read_curator_run),
    (("POST", "/v1/admin/curate"), curate),
    (("POST", "/v1/admin/curator/accept"), accept_proposal),
    (("POST", "/v1/files/{kind}/entries/replace"), replace_file_entry),
    (("POST", "/v1/files/{kind}/entries/remove"), remove_file_entry),
    (("POST", "/v1/files/{kind}/entries"), add_file_entry),
    (("POST", "/v1/daily-log"), append_daily_log),
    (("POST", "/v1/sessions"), start_session),
    (("POST", "/v1/memories"), remember),
    (("POST", "/v1/memories/batch"), remember_batch),
    (("POST", "/v1/skills"), create_skill),
    (("POST", "/v1/conflicts/{group}/resolve"), resolve_conflict_keeping_own_record),
    (("POST", "/v1/snapshots"), create_snapshot),
    (("POST", "/v1/export/import"), import_bundle),
    # Last: beta migrates its own embedding model (the writes above went to beta's index).
    (("POST", "/v1/admin/migration/plan"), plan_migration),
    (("GET", "/v1/admin/migration/status"), migration_status),
    (("POST", "/v1/admin/migration/start"), start_migration),
    (("POST", "/v1/admin/migration/retry"), retry_migration),
    (("POST", "/v1/admin/migration/switch"), switch_migration),
    (("POST", "/v1/admin/migration/rollback"), rollback_migration),
    (("POST", "/v1/admin/migration/archive"), archive_migration),
]


def test_every_operation_is_attacked() -> None:
    attacked = {operation for operation, _ in ATTACKS}
    assert set(NOT_TENANT_SCOPED) <= SPEC_OPERATIONS, "an exclusion names an operation the API no longer has"
    assert attacked.isdisjoint(NOT_TENANT_SCOPED)
    missing = SPEC_OPERATIONS - set(NOT_TENANT_SCOPED) - attacked
    assert not missing, f"operations no other tenant is sent to: {sorted(missing)} (add them to ATTACKS)"
    assert attacked <= SPEC_OPERATIONS, (
        f"attacks on operations the API does not have: {attacked - SPEC_OPERATIONS}"
    )


def test_another_tenant_cannot_reach_alphas_data_through_any_operation(isolation_api: Api) -> None:
    world = seed_alpha(isolation_api)
    before = alpha_view(isolation_api, world)
    assert before["records"][world.archived["id"]]["status"] == "archived"
    assert [g["group"] for g in before["conflicts"]["conflicts"]] == [world.conflict_group]

    probe = Probe(isolation_api, world)
    for _, attack in ATTACKS:
        attack(probe)

    # Every operation of the document was called by beta (a new operation fails here until attacked) ...
    assert probe.exercised == SPEC_OPERATIONS - set(NOT_TENANT_SCOPED)
    # ... and alpha's data is exactly as it was.
    assert alpha_view(isolation_api, world) == before
