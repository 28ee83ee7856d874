"""The review console's flows end to end in headless Chromium against the local server: open the overview,
resolve a conflict, release and reject quarantined memories, browse a lineage, and a read-only key that is
shown no action buttons. Screenshots of the main pages go to tests/artifacts/console/."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from .conftest import ARTIFACTS, NAMESPACE, Console

pytestmark = pytest.mark.xdist_group("browser")  # one server and one browser: keep these on one worker


def open_console(page: Any, console: Console, who: str = "admin", hash_: str = "overview") -> None:
    page.goto(f"{console.url}/console#{hash_}")
    page.get_by_label("API key").fill(console.keys[who])
    page.get_by_label("Namespace", exact=True).fill(NAMESPACE)
    page.get_by_role("button", name="Open").click()
    expect(page.locator("#whoami")).to_contain_text("Tenant local")


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_overview_shows_counts_file_caps_and_recent_changes(page, console):
    with console.client() as client:  # two recalls: the server's latency window for the namespace
        for query in ("coffee", "release train"):
            assert (
                client.post("/v1/recall", json={"query": query, "namespaces": [NAMESPACE]}).status_code == 200
            )
    open_console(page, console)
    overview = page.locator("#page-overview")
    expect(overview.locator("#recall-latency")).to_contain_text(re.compile(r"p50 [\d.]+ ms · p95 [\d.]+ ms"))
    expect(overview.get_by_role("heading", name=f"Overview of {NAMESPACE}")).to_be_visible()
    expect(overview.get_by_role("region", name="Memory files")).to_contain_text("MEMORY.md (1 entries)")
    expect(overview.get_by_role("meter").first).to_be_visible()
    expect(overview.get_by_role("region", name="By status")).to_contain_text("quarantined")
    expect(overview.get_by_role("region", name="Recent changes")).to_contain_text("correct")
    # The key is in sessionStorage only: never in the address, never in localStorage or a cookie.
    key = console.keys["admin"]
    assert key not in page.url
    assert page.evaluate("sessionStorage.getItem('agent-memory.api-key')") == key
    assert page.evaluate("localStorage.length") == 0 and page.context.cookies() == []
    shot(page, "overview")
    # Keyboard: the skip link comes first, then the key field; the page tabs are links reached by Tab.
    page.reload()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "api-key"
    # Forget key: gone from the session, nothing more is shown.
    page.get_by_role("button", name="Forget key").click()
    assert page.evaluate("sessionStorage.getItem('agent-memory.api-key')") is None
    expect(page.locator("#main")).to_contain_text("Key forgotten.")
    assert page.errors == []


def test_resolve_a_conflict_side_by_side(page, console):
    seeded = console.seeded["conflict"]
    open_console(page, console, hash_="review")
    group = page.locator(f'.conflict[data-group="{seeded["group"]}"]')
    expect(group.locator("article.memory")).to_have_count(2)
    shot(page, "review")
    group.locator(f'article[data-id="{seeded["newer"]}"]').get_by_label("Keep this one").check()
    group.get_by_label("Reason").fill("the newer statement is right")
    group.get_by_role("button", name=re.compile("^Resolve")).click()

    expect(page.locator("#status")).to_contain_text(f"Resolved group {seeded['group']}: done")
    expect(page.locator(f'.conflict[data-group="{seeded["group"]}"]')).to_have_count(0)
    with console.client() as client:
        older = client.get(f"/v1/memories/{seeded['older']}").json()
        newer = client.get(f"/v1/memories/{seeded['newer']}").json()
    assert older["status"] == "superseded" and older["superseded_by"] == seeded["newer"]
    assert newer["status"] == "active"
    assert page.errors == []


def test_release_and_reject_quarantined_memories(page, console):
    released_id = console.seeded["quarantined"]
    rejected_id = console.seeded["quarantined_other"]
    open_console(page, console, hash_="review")
    queue = page.locator("#queue-quarantine")
    released = queue.locator(f'article[data-id="{released_id}"]')
    released.get_by_label("Reason").fill("it is the user's real preference")
    released.get_by_role("button", name="Release").click()
    expect(page.locator("#status")).to_contain_text(f"Released {released_id}: done")
    # the page redraws from the API after an action: wait for it, or the next click can land on the old page
    expect(page.locator(f'#queue-quarantine article[data-id="{released_id}"]')).to_have_count(0)
    expect(page.locator("#main")).not_to_have_attribute("aria-busy", "true")

    rejected = page.locator(f'#queue-quarantine article[data-id="{rejected_id}"]')
    rejected.get_by_label("Reason").fill("an injected instruction, not a preference")
    rejected.get_by_role("button", name="Reject").click()
    expect(page.locator("#status")).to_contain_text(f"Rejected {rejected_id}: done")
    expect(page.locator("#queue-quarantine article.memory")).to_have_count(0)

    with console.client() as client:
        now_released = client.get(f"/v1/memories/{released_id}").json()
        now_rejected = client.get(f"/v1/memories/{rejected_id}").json()
        recalled = client.post(
            "/v1/recall", json={"query": "answer in French", "namespaces": [NAMESPACE]}
        ).json()
    assert now_released["status"] == "active"
    assert released_id in [hit["memory"]["id"] for hit in recalled["results"]]
    assert now_rejected["status"] == "archived"
    assert (
        now_rejected["status_reason"] == "rejected from quarantine: an injected instruction, not a preference"
    )
    assert page.errors == []


def test_browse_lineage_graph_and_change_log(page, console):
    old, new = console.seeded["corrected_old"], console.seeded["corrected_new"]
    open_console(page, console, hash_=f"browse:{new}")
    detail = page.locator("#memory-detail")
    expect(detail).to_contain_text("PostgreSQL 16")
    graph = detail.locator("svg.lineage")
    expect(graph.locator("g.node")).to_have_count(2)
    expect(graph.locator(f'g.node.selected[data-id="{new}"]')).to_have_count(1)
    expect(graph.locator("path.edge.correct")).to_have_count(1)
    expect(graph).to_have_attribute("aria-label", re.compile(f"{old} correct → {new}"))
    changes = detail.locator(".changes tbody tr")
    expect(changes.filter(has_text="upgraded in November")).not_to_have_count(0)
    shot(page, "lineage")

    page.get_by_label("Query").fill("billing PostgreSQL")
    page.get_by_role("button", name="Recall").click()
    hit = page.locator(f'article.hit[data-id="{new}"]')
    expect(hit).to_contain_text("found by the")
    expect(hit.get_by_role("meter")).to_have_count(3)
    assert page.errors == []


def test_memory_files_render_markdown_without_markup_injection(page, console):
    with console.client() as client:
        added = client.post(
            "/v1/files/memory/entries",
            json={"namespace": NAMESPACE, "content": "Note <img src=x id=injected> stays text"},
        )
        assert added.status_code == 200, added.text
    open_console(page, console, hash_="files")
    file = page.locator("#page-files section.file").first
    expect(file.locator("strong", has_text="Deploys")).to_be_visible()
    expect(file.locator("code", has_text="make deploy")).to_be_visible()
    expect(file).to_contain_text("<img src=x id=injected>")
    expect(page.locator("#injected")).to_have_count(0)
    shot(page, "files")
    assert page.errors == []


def test_dreaming_report_shows_signals_and_gates(page, console):
    with console.client() as client:  # a real sweep: its audit is what "Last runs" lists
        swept = client.post("/v1/admin/dream", json={"namespace": NAMESPACE})
        assert swept.status_code == 200, swept.text
    open_console(page, console, hash_="dreaming")
    recorded = page.locator("#dream-runs section.card")
    expect(recorded).to_have_count(1)
    expect(recorded.first).to_contain_text(f"Run of {swept.json()['runs'][0]['day']} (completed)")
    page.get_by_role("button", name="Explain the sweep").click()
    run = page.locator("#dream-explained section.card").first
    expect(run).to_contain_text("dry run")
    candidate = run.locator("article.candidate").first
    expect(candidate.locator(".scores").get_by_role("meter")).to_have_count(6)  # the six signals
    expect(candidate.get_by_role("table", name="Gates")).to_contain_text("min_score")
    expect(candidate).to_contain_text(re.compile("promoted|blocked|deferred|excluded"))
    shot(page, "dreaming")
    assert page.errors == []


def test_read_only_key_sees_no_actions(page, console):
    open_console(page, console, who="readonly", hash_="review")
    expect(page.locator("#whoami")).to_contain_text("read-only: no actions")
    expect(page.locator("#queue-conflicts")).to_be_visible()
    expect(page.locator("#page-review button")).to_have_count(0)
    expect(page.locator("#page-review input[type=checkbox]")).to_have_count(0)
    page.goto(f"{console.url}/console#dreaming")
    expect(page.locator("#page-dreaming")).to_contain_text("needs a key with the admin scope")
    expect(page.locator("#page-dreaming button")).to_have_count(0)
    shot(page, "read-only")
    # The API refuses the action anyway.
    with console.client("readonly") as client:
        refused = client.post(f"/v1/memories/{console.seeded['corrected_new']}/archive", json={})
    assert refused.status_code == 403
    assert page.errors == []


def test_heavily_reused_memory_is_marked_reviewed(page, console):
    with console.client() as client:
        for _ in range(3):
            recalled = client.post(
                "/v1/recall", json={"query": "release train Tuesday", "namespaces": [NAMESPACE]}
            )
            assert recalled.status_code == 200, recalled.text
        listing = client.get("/v1/memories/reused", params={"namespace": NAMESPACE})
        assert listing.status_code == 200, listing.text
        target = next(i for i in listing.json()["items"] if "release train" in i["memory"]["content"])
        assert target["reviewed_at"] is None
    memory_id = target["memory"]["id"]
    open_console(page, console, hash_="review")
    card = page.locator(f'#queue-reused article[data-id="{memory_id}"]')
    expect(card).to_contain_text("reviewed never")
    card.get_by_role("button", name="Mark reviewed").click()
    expect(page.locator("#status")).to_contain_text(f"Marked {memory_id} reviewed: done")
    expect(page.locator(f'#queue-reused article[data-id="{memory_id}"]')).not_to_contain_text(
        "reviewed never"
    )
    with console.client() as client:
        items = client.get("/v1/memories/reused", params={"namespace": NAMESPACE}).json()["items"]
    assert next(i for i in items if i["memory"]["id"] == memory_id)["reviewed_at"] is not None
    assert page.errors == []


def test_session_view_shows_the_chosen_cache_ttls_and_the_cost(page, console):
    """Issue 33: the session's TTL setting, the TTLs its last turn chose, and what it cost against no caching.
    The local server has no chat model, so the two turns are stored as the chat service stores them."""
    from datetime import UTC, datetime

    from agent_memory.adapters.local.session_store import SqliteSessionStore
    from agent_memory.domain.sessions.ports import TurnCacheTtl, TurnRecord

    with console.client() as client:
        started = client.post("/v1/sessions", json={"namespace": NAMESPACE})
    assert started.status_code == 201, started.text
    session_id = started.json()["session"]["id"]
    assert console.data_dir is not None
    store = SqliteSessionStore(console.data_dir / "sessions.db")
    for index, (ttl, cost, uncached) in enumerate(
        (
            (TurnCacheTtl(system="1h", history="5m"), 0.004, 0.01),
            (TurnCacheTtl(system="1h", history="1h"), 0.001, 0.03),
        )
    ):
        store.append_turn(
            TurnRecord(
                tenant="local",
                session_id=session_id,
                index=index,
                messages=[{"role": "user", "content": [{"text": f"turn {index}"}]}],
                usage={
                    "inputTokens": 0,
                    "outputTokens": 5,
                    "cacheReadInputTokens": 900 * index,
                    "cacheWriteInputTokens": 1200,
                },
                cost_usd=cost,
                cost_without_cache_usd=uncached,
                created_at=datetime.now(UTC),
                cache_ttl=ttl,
                cache_ttl_switch=index == 1,
            ),
            now=datetime.now(UTC),
        )

    open_console(page, console, hash_=f"session:{session_id}")
    view = page.locator("#page-session")
    expect(view.get_by_role("heading", name=session_id)).to_be_visible()
    expect(view.locator("#session-ttl-mode")).to_contain_text("auto")
    expect(view.locator("#session-ttls")).to_contain_text(
        "snapshot cache point 1 hour, history cache points 1 hour"
    )
    cache = view.get_by_role("region", name="Prompt cache")
    expect(cache).to_contain_text("History at 1 hour1 of 2 turns (50%)")
    expect(cache).to_contain_text("TTL switches1")
    expect(cache).to_contain_text("Cost$0.0050")
    expect(cache).to_contain_text("Cost without caching$0.0400")
    expect(cache).to_contain_text("Cost vs no caching12.5%")
    shot(page, "session")
