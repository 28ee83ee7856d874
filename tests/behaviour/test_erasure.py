"""Erasure (issue 18) on both runtimes: purge a memory with its lineage, a subject and a whole tenant; the
verification finds zero remaining copies, and unrelated namespaces and tenants are untouched (their records'
ids and content hashes, counts and files compared before and after). A running session whose snapshot names
purged content fails its next turn with `session_purged`."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.behaviour.conftest import Api, serve_api
from tests.contract.chat_fakes import FakeChatModel, text_reply

PURGER = "alpha-purger"


@pytest.fixture(scope="module", params=["local", "aws"])
def purge_api(request, tmp_path_factory) -> Iterator[Api]:
    model = FakeChatModel(script=[text_reply("Noted.") for _ in range(20)])
    yield from serve_api(request.param, tmp_path_factory, chat_model=model)


def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def remember(
    client: Any, namespace: str, content: str, headers: dict[str, str] | None = None, **extra: Any
) -> dict[str, Any]:
    body = {"namespace": namespace, "content": content, "type": "domain_knowledge", **extra}
    response = client.post("/v1/memories", json=body, headers=headers)
    assert response.status_code in (200, 201), response.text
    return response.json()["memory"]


def view(api: Api, who: str, namespaces: list[str]) -> dict[str, Any]:
    """What a tenant holds in `namespaces`: records (id → content hash, status), counts, memory files."""
    client = api.client(who)
    out: dict[str, Any] = {}
    for namespace in namespaces:
        records = {}
        for status in ("active", "superseded", "archived", "pending", "quarantined"):
            page = ok(
                client.get("/v1/memories", params={"namespace": namespace, "status": status, "limit": 100})
            )
            records.update({r["id"]: (r["content_hash"], r["status"], r["version"]) for r in page["items"]})
        stats = ok(client.get("/v1/stats", params={"namespace": namespace}))
        files = {
            kind: ok(client.get(f"/v1/files/{kind}", params={"namespace": namespace}))["text"]
            for kind in ("memory", "user")
        }
        out[namespace] = {"records": records, "by_status": stats["by_status"], "files": files}
    return out


def recalled_ids(client: Any, namespace: str, query: str) -> set[str]:
    body = {"query": query, "namespaces": [namespace], "k": 20}
    return {r["memory"]["id"] for r in ok(client.post("/v1/recall", json=body))["results"]}


def plan(client: Any, **target: Any) -> dict[str, Any]:
    return ok(client.post("/v1/admin/purges", json=target))


def execute(client: Any, plan_id: str, reason: str = "data subject request #42") -> dict[str, Any]:
    return ok(client.post(f"/v1/admin/purges/{plan_id}/execute", json={"reason": reason}))


def store(plan: dict[str, Any], name: str) -> dict[str, Any]:
    return next(f for f in plan["plan"] if f["store"] == name)


def test_purge_needs_admin_and_the_purge_scope(purge_api: Api) -> None:
    body = {"kind": "subject", "subject": "nobody at all"}
    refused = purge_api.client("alpha").post("/v1/admin/purges", json=body)  # admin, but no purge scope
    assert refused.status_code == 403 and refused.json()["details"]["required"] == "purge", refused.text
    limited = purge_api.client("alpha-projects-rw").get("/v1/admin/purges")
    assert limited.status_code == 403, limited.text
    assert purge_api.client(PURGER).get("/v1/admin/purges/purge_" + "0" * 32).status_code == 404


def test_purging_a_memory_removes_its_lineage_everywhere_and_nothing_else(purge_api: Api) -> None:
    alpha = purge_api.client(PURGER)
    ns, other = "/erase/mem", "/erase/other"
    secret = "Project kestrel codename is amber-falcon-7731"
    key = {"Idempotency-Key": f"erase-{uuid.uuid4()}"}  # its stored response holds the content
    first = remember(alpha, ns, secret, headers=key)
    corrected = ok(
        alpha.post(f"/v1/memories/{first['id']}/correct", json={"content": secret + " (rotated monthly)"})
    )["memory"]
    ok(alpha.post("/v1/files/memory/entries", json={"namespace": ns, "content": secret}))
    ok(alpha.post("/v1/daily-log", json={"namespace": ns, "text": f"noted: {secret}"}))
    keep = remember(alpha, ns, "The billing service deploys on Tuesdays")
    remember(alpha, other, "Standups start at nine sharp")
    beta = purge_api.client("beta")
    remember(beta, ns, "Beta keeps its own notes about kestrels")
    taken = alpha.post("/v1/snapshots", json={"namespace": ns, "name": "before-erasure"})
    assert taken.status_code in (200, 201), taken.text  # an export bundle holding the content
    ok(alpha.post("/v1/snapshots", json={"namespace": other, "name": "unrelated"}), taken.status_code)
    before = view(purge_api, PURGER, [other])
    before_beta = view(purge_api, "beta", [ns])

    planned = plan(alpha, kind="memory", record_id=corrected["id"])
    assert planned["state"] == "planned"
    assert set(planned["record_ids"]) == {first["id"], corrected["id"]}  # the corrected-from version too
    assert keep["id"] not in planned["record_ids"]
    assert store(planned, "files")["items"] >= 2  # the MEMORY.md entry and the daily-log line
    assert store(planned, "index")["items"] == 2
    assert store(planned, "idempotency")["items"] == 1
    assert store(planned, "snapshots")["refs"] == [f"{ns}@before-erasure"]
    assert secret not in str(planned)  # the answer names ids, lines and hashes, never the content

    done = execute(alpha, planned["id"])
    assert done["state"] == "completed", done
    assert done["verification"]["remaining"] == 0, done["verification"]
    assert sorted(done["done"]) == sorted(f["store"] for f in done["plan"])
    assert execute(alpha, planned["id"]) == done  # idempotent

    for record_id in planned["record_ids"]:
        assert alpha.get(f"/v1/memories/{record_id}").status_code == 404
    assert not recalled_ids(alpha, ns, "kestrel codename amber falcon") & set(planned["record_ids"])
    files = ok(alpha.get("/v1/files/memory", params={"namespace": ns}))["text"]
    assert "amber-falcon" not in files
    changes = ok(alpha.get("/v1/changes", params={"namespace": ns, "limit": 100}))["items"]
    tombstones = [c for c in changes if c["record_id"] in planned["record_ids"]]
    assert tombstones and all(c["operation"] == "purge" for c in tombstones), tombstones
    assert all(c["reason"] == "data subject request #42" and c["before"] is None for c in tombstones)
    assert "amber-falcon" not in str(changes)
    # Untouched: the other memory of the namespace, the other namespace, the other tenant.
    gone = alpha.get("/v1/snapshots/before-erasure", params={"namespace": ns})
    assert gone.status_code == 404, gone.text
    assert alpha.get("/v1/snapshots/unrelated", params={"namespace": other}).status_code == 200
    assert ok(alpha.get(f"/v1/memories/{keep['id']}"))["content"] == keep["content"]
    assert view(purge_api, PURGER, [other]) == before
    assert view(purge_api, "beta", [ns]) == before_beta
    status = ok(alpha.get(f"/v1/admin/purges/{planned['id']}"))
    assert status["state"] == "completed" and status["content_hashes"] == planned["content_hashes"]
    # The idempotency record went too: the same key now remembers anew instead of replaying the purged answer.
    replay = alpha.post(
        "/v1/memories", json={"namespace": ns, "content": secret, "type": "domain_knowledge"}, headers=key
    )
    assert replay.status_code == 201 and replay.json()["memory"]["id"] != first["id"]  # not the stored answer


def test_purging_a_subject_invalidates_a_running_session_that_holds_it(purge_api: Api) -> None:
    alpha = purge_api.client(PURGER)
    ns, other = "/erase/people", "/erase/team"
    subject = "Ingrid Holmqvist"
    named = remember(alpha, ns, f"{subject} prefers answers in Swedish")
    tagged = remember(alpha, other, "Prefers tea over coffee in meetings", metadata={"person": subject})
    unrelated = remember(alpha, other, "The team retro happens every other Friday")
    ok(
        alpha.post(
            "/v1/files/user/entries", json={"namespace": ns, "content": f"{subject} is on call Fridays"}
        )
    )
    ok(alpha.post("/v1/files/user/entries", json={"namespace": ns, "content": "Prefers short replies"}))
    session = ok(alpha.post("/v1/sessions", json={"namespace": ns}), 201)["session"]
    assert ok(alpha.post(f"/v1/sessions/{session['id']}/turns", json={"message": "hi"}))["reply"] == "Noted."
    before_beta = view(purge_api, "beta", [ns, other])

    planned = plan(alpha, kind="subject", subject=subject)
    assert set(planned["record_ids"]) == {named["id"], tagged["id"]}, planned
    assert unrelated["id"] not in planned["record_ids"]
    assert store(planned, "sessions")["refs"] == [session["id"]]
    assert store(planned, "files")["items"] == 1

    done = execute(alpha, planned["id"])
    assert done["state"] == "completed" and done["verification"]["remaining"] == 0, done

    turn = alpha.post(f"/v1/sessions/{session['id']}/turns", json={"message": "still there?"})
    assert turn.status_code == 409, turn.text
    assert turn.json()["error"] == "session_purged" and "start a new session" in turn.json()["message"]
    user = ok(alpha.get("/v1/files/user", params={"namespace": ns}))["text"]
    assert subject not in user and "Prefers short replies" in user
    assert ok(alpha.get(f"/v1/memories/{unrelated['id']}"))["content"] == unrelated["content"]
    assert not recalled_ids(alpha, ns, subject) & {named["id"], tagged["id"]}
    assert view(purge_api, "beta", [ns, other]) == before_beta
    fresh = ok(alpha.post("/v1/sessions", json={"namespace": ns}), 201)["session"]
    assert subject not in str(ok(alpha.get(f"/v1/sessions/{fresh['id']}")))


def test_purging_an_imported_memory_redacts_the_import_report_too(purge_api: Api) -> None:
    from tests.behaviour.test_imports import _archive

    alpha = purge_api.client(PURGER)
    ns = "/erase/imported"
    text = "User prefers British English spelling in documentation."
    report = ok(alpha.post("/v1/imports", json={"namespace": ns, "archive": _archive("hermes/.hermes")}))[
        "report"
    ]
    assert "british" in json.dumps(report).lower()  # a recall probe's paraphrased query holds the content
    record = next(
        r
        for r in ok(alpha.get("/v1/memories", params={"namespace": ns, "limit": 100}))["items"]
        if r["content"] == text
    )
    before_beta = view(purge_api, "beta", [ns])

    planned = plan(alpha, kind="memory", record_id=record["id"])
    assert store(planned, "imports")["items"] >= 1, planned
    assert "British" not in str(planned)
    done = execute(alpha, planned["id"])
    assert done["state"] == "completed" and done["verification"]["remaining"] == 0, done
    assert next(f for f in done["verification"]["stores"] if f["store"] == "imports")["items"] == 0

    after = ok(alpha.get(f"/v1/imports/{report['id']}"))
    assert "british" not in json.dumps(after).lower(), after  # entry, probe query: all redacted
    assert after["report"]["decisions"] == report["decisions"]  # the report still adds up
    assert after["report"]["purges"] == [planned["id"]]
    assert view(purge_api, "beta", [ns]) == before_beta
    rolled = ok(alpha.post(f"/v1/imports/{report['id']}/rollback"))["report"]["rollback"]
    assert (rolled["archived"], rolled["files_removed"], rolled["skills_archived"]) == (4, 4, 1)


def _archived_vectors(api: Api, tenant: str) -> list[dict[str, Any]]:
    """Every vector line of the tenant's embedding-migration archives (local folder, or the archive bucket)."""
    if api.runtime == "local":
        folder = api.data_dir / "archive" / tenant
        texts = [part.read_text() for part in sorted(folder.rglob("*.jsonl"))]
    else:
        import boto3

        from tests.behaviour.conftest import MIGRATION_ARCHIVE_BUCKET, REGION

        s3 = boto3.client("s3", region_name=REGION)
        listed = s3.list_objects_v2(Bucket=MIGRATION_ARCHIVE_BUCKET, Prefix=f"{tenant}/").get("Contents", [])
        texts = [
            s3.get_object(Bucket=MIGRATION_ARCHIVE_BUCKET, Key=o["Key"])["Body"].read().decode()
            for o in listed
            if o["Key"].endswith(".jsonl")
        ]
    return [json.loads(line) for text in texts for line in text.splitlines() if line.strip()]


def test_purging_a_memory_rewrites_an_embedding_migration_archive(purge_api: Api) -> None:
    from tests.behaviour.test_embedding_migration import run_backfill_task, wait_for_state

    delta = purge_api.client("delta")
    ns = "/erase/archived"
    secret = "The vault night code is wren-4471-delta"
    purged = remember(delta, ns, secret)
    kept = [remember(delta, ns, f"Archived fact {n}: the tide turns at {n} bells") for n in range(3)]
    ok(delta.post("/v1/admin/migration/plan", json={"embedder": "hashing@128", "batch_size": 8}))
    ok(delta.post("/v1/admin/migration/start"))
    run_backfill_task(purge_api, delta)
    wait_for_state(delta, "verifying")
    ok(delta.post("/v1/admin/migration/switch"))
    archived = ok(delta.post("/v1/admin/migration/archive"))
    assert archived["state"] == "archived" and archived["archive"]["vectors"] >= 4
    keys = {line.get("id") or line.get("key") for line in _archived_vectors(purge_api, "delta")}
    assert purged["id"] in keys and {k["id"] for k in kept} <= keys

    planned = plan(delta, kind="memory", record_id=purged["id"])
    assert store(planned, "archives")["items"] == 1 and store(planned, "archives")["unreachable"] == []
    done = execute(delta, planned["id"])
    assert done["state"] == "completed" and done["verification"]["remaining"] == 0, done
    assert done["verification"]["unreachable"] == 0
    lines = _archived_vectors(purge_api, "delta")
    keys = {line.get("id") or line.get("key") for line in lines}
    assert purged["id"] not in keys and {k["id"] for k in kept} <= keys  # only the purged vector went
    assert "wren-4471" not in json.dumps(lines)


def test_purging_a_tenant_erases_all_of_it_and_no_other_tenant(purge_api: Api) -> None:
    gamma = purge_api.client("gamma")
    namespaces = ["/offboard/a", "/offboard/b"]
    for n, namespace in enumerate(namespaces):
        remember(gamma, namespace, f"Gamma fact number {n}: the orchid protocol runs at dawn")
        ok(
            gamma.post(
                "/v1/files/memory/entries", json={"namespace": namespace, "content": f"orchid note {n}"}
            )
        )
    ok(gamma.post("/v1/sessions", json={"namespace": namespaces[0]}), 201)
    alpha_ns = ["/erase/other", "/erase/mem"]
    remember(purge_api.client(PURGER), "/erase/other", "Alpha: the orchid protocol is not ours")
    before_alpha = view(purge_api, PURGER, alpha_ns)
    before_beta = view(purge_api, "beta", ["/erase/mem"])

    planned = plan(gamma, kind="tenant")
    assert planned["namespaces"] == namespaces and len(planned["record_ids"]) == planned["records"] == 2
    assert store(planned, "files")["items"] >= 2 and store(planned, "sessions")["items"] == 1
    done = execute(gamma, planned["id"], reason="tenant offboarding")
    assert done["state"] == "completed" and done["verification"]["remaining"] == 0, done

    after = view(purge_api, "gamma", namespaces)
    for namespace in namespaces:
        assert after[namespace]["records"] == {} and sum(after[namespace]["by_status"].values()) == 0
        assert not any(after[namespace]["files"].values()), after[namespace]["files"]
        assert recalled_ids(gamma, namespace, "orchid protocol") == set()
    assert ok(gamma.get("/v1/changes", params={"namespace": namespaces[0]}))["items"] == []
    # The tombstone stays: who, when, why and the content hashes, no content.
    kept = ok(gamma.get(f"/v1/admin/purges/{planned['id']}"))
    assert kept["reason"] == "tenant offboarding" and kept["content_hashes"] and "orchid" not in str(kept)
    assert view(purge_api, PURGER, alpha_ns) == before_alpha
    assert view(purge_api, "beta", ["/erase/mem"]) == before_beta


def test_a_purge_above_the_inline_limit_runs_as_the_workflow_in_aws_and_is_refused_locally(
    purge_api: Api,
) -> None:
    alpha = purge_api.client(PURGER)
    ns = "/erase/large"
    subject = "Torvald Brekke"
    ids = {remember(alpha, ns, f"{subject} note {n}: {word}")["id"] for n, word in enumerate(["sea", "sky"])}
    keep = remember(alpha, ns, "Unrelated: the ferry leaves at noon")
    services = _services(purge_api)
    erasure = services.erasure
    limit = erasure.inline_record_limit
    erasure.inline_record_limit = 1
    try:
        planned = plan(alpha, kind="subject", subject=subject)
        assert set(planned["record_ids"]) == ids
        response = alpha.post(f"/v1/admin/purges/{planned['id']}/execute", json={"reason": "large purge"})
        if purge_api.runtime == "local":  # the job worker runs every purge the API executes, any size
            done = ok(response)
            assert done["state"] == "completed" and done["execution"].startswith("job_"), done
            assert set(done["record_ids"]) == ids
            return
        started = ok(response)
        assert started["state"] == "executing" and started["done"] == [], started
        execution = purge_api.stepfunctions.describe_execution(executionArn=started["execution"])
        assert execution["name"] == planned["id"]  # one execution per plan: a second start finds it
        assert json.loads(execution["input"]) == {"tenant": "alpha", "plan_id": planned["id"]}
        # The workflow's task, as the state machine runs it: one step per invocation until it is not executing.
        from agent_memory.handlers import dreaming, purge

        purge.configure(lambda: erasure)
        try:
            steps = 0
            while True:
                result = dreaming.handler(
                    {"task": "purge_step", "tenant": "alpha", "plan_id": planned["id"]}, _TaskContext()
                )
                steps += 1
                if result["state"] != "executing":
                    break
        finally:
            purge.configure(None)
        assert result == {"state": "completed", "done": result["done"], "remaining": 0}
        assert steps == len(result["done"]) + 1  # one invocation per step, then the verification
        done = ok(alpha.get(f"/v1/admin/purges/{planned['id']}"))
        assert done["state"] == "completed" and done["reason"] == "large purge"
        assert all(alpha.get(f"/v1/memories/{record_id}").status_code == 404 for record_id in ids)
        assert ok(alpha.get(f"/v1/memories/{keep['id']}"))["content"] == keep["content"]
    finally:
        erasure.inline_record_limit = limit


class _TaskContext:
    function_name = "agent-memory-dreaming"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:eu-central-1:123456789012:function:agent-memory-dreaming"
    aws_request_id = "purge-step"

    def get_remaining_time_in_millis(self) -> int:
        return 600_000


def _services(api: Api) -> Any:
    if api.runtime == "local":
        return api.services  # type: ignore[attr-defined]
    from agent_memory.handlers.api import services

    return services()
