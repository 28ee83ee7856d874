"""Imports keep what lasts (issue 27): old daily notes become dated episodes, nothing is skipped without being
listed with its ref and reason, one bad item never fails its file, Mem0 JSONL and Mem0's own fields are kept,
a Claude Code topic file or rule stays one memory with its rationale and front matter, and each Claude Code
project goes to its own namespace."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_memory.adapters.posix.source_tree import PosixSourceTree
from agent_memory.domain.interop.formats import detect, inventory, markdown_entries
from agent_memory.domain.interop.model import ItemKind
from agent_memory.domain.interop.service import render_markdown
from agent_memory.domain.memory.service import RecallInput
from agent_memory.domain.ports import RecordQuery
from agent_memory.domain.records import MemoryType, Status
from agent_memory.settings.service import Settings
from agent_memory.wiring.local import build_local
from tests.conftest import FixedClock

DATA = Path(__file__).resolve().parents[1] / "data"
TENANT = "acme"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
NOT_WRITTEN = (
    "rejected",
    "skipped_transient",
    "skipped_expired",
    "skipped_not_fact",
    "skipped_seen",
    "skipped_skill_file",
)


@pytest.fixture
def runtime(tmp_path):
    return build_local(Settings(data_dir=tmp_path / "data", embedder="hashing"), FixedClock(NOW))


def _run(runtime, root: Path, namespace: str = "/imported/test", **kwargs):
    return runtime.services.imports.run(TENANT, PosixSourceTree(root), namespace, actor="test", **kwargs)


def _records(runtime, namespace, statuses=()):
    query = RecordQuery(namespaces=(namespace,), statuses=statuses, limit=500)
    return runtime.store.list(TENANT, query).items


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _every_item_not_written_is_listed(report) -> None:
    counted = sum(getattr(report.decisions, name) for name in NOT_WRITTEN)
    assert len(report.rejected) + len(report.skipped) == counted
    markdown = render_markdown(report)
    for item in [*report.rejected, *report.skipped]:
        assert item.ref in markdown and item.reason in markdown


# --------------------------------------------------------------------------- old daily notes


def test_old_daily_notes_are_dated_episodes_not_expired(runtime):
    report = _run(runtime, DATA / "interop" / "openclaw" / "march-2026")
    assert report.decisions.skipped_expired == 0
    assert report.decisions.total() == report.inventory.items
    records = {r.content: r for r in _records(runtime, "/imported/test")}
    sam = records["Sam moved to Toronto for the new job at Shopify."]
    assert sam.type is MemoryType.EPISODE and sam.status is Status.ACTIVE
    assert sam.valid_from == datetime(2026, 3, 1, 9, 10, tzinfo=UTC)  # the date, at its section's time
    java = records["The user asked me to never suggest Java for side projects again."]
    assert java.type is MemoryType.EPISODE and java.valid_from == datetime(2026, 3, 2, tzinfo=UTC)
    assert java.metadata["import_path"] == "memory/2026-03-02.md"
    # Small talk and a temporary note are still left out, but each one is listed with where it is and why.
    _every_item_not_written_is_listed(report)
    skipped = {(s.path, s.line): s for s in report.skipped}
    assert skipped[("memory/2026-03-01.md", 5)].decision == "skipped_transient"
    assert "small talk" in skipped[("memory/2026-03-01.md", 5)].reason
    assert skipped[("memory/2026-03-04.md", 5)].reason == (
        "transient: a temporary note (right now), not a lasting fact"
    )
    # Curated entries keep no date of their own and the classifier's type.
    assert records["Prefers short answers with the command first, explanation after."].valid_from == NOW


# --------------------------------------------------------------------------- Mem0


def test_one_bad_mem0_memory_never_fails_its_file(runtime, tmp_path):
    rows = [
        {"id": "m1", "memory": "Prefers tea over coffee", "user_id": "ana"},
        {"id": "m2", "memory": "   ", "user_id": "ana"},
        "not an object",
        {"id": "m4", "memory": "Works night shifts at the hospital", "user_id": "ana"},
        {"id": "m5", "memory": "Owns a bicycle", "created_at": "last tuesday", "user_id": "ana"},
    ]
    root = _write(tmp_path / "src", {"export.json": json.dumps({"results": rows})})
    report = _run(runtime, root, "/imported/mem0")
    assert report.decisions.added == 2 and report.decisions.rejected == 3
    reasons = {r.ref: r.reason for r in report.rejected}
    assert reasons == {
        "export.json#id:m2": "item 2: a Mem0 memory needs a non-empty 'memory' text",
        "export.json#item3": "item 3: a Mem0 memory must be a JSON object",
        "export.json#id:m5": "item 5: its updated_at/created_at is not a time (ISO 8601 or epoch seconds)",
    }
    assert {r.rule for r in report.rejected} == {"invalid_item"}
    assert {r.content for r in _records(runtime, "/imported/mem0/users/ana")} == {
        "Prefers tea over coffee",
        "Works night shifts at the hospital",
    }
    _every_item_not_written_is_listed(report)


def test_mem0_jsonl_is_accepted_and_keeps_metadata_categories_and_app_id(runtime, tmp_path):
    lines = [
        json.dumps(
            {
                "id": "j1",
                "memory": "Prefers vegetarian restaurants",
                "user_id": "ana",
                "app_id": "concierge",
                "categories": ["food", "preferences"],
                "metadata": {"source": "onboarding", "confidence": 0.9},
            }
        ),
        json.dumps({"id": "j2", "memory": "Plays the cello in a community orchestra", "user_id": "ana"}),
        '{"id": "j3", "memory": "Has two daugh',  # truncated by a crash mid-write
    ]
    root = _write(tmp_path / "src", {"memories.jsonl": "\n".join(lines) + "\n"})
    assert detect(PosixSourceTree(root)).value == "mem0"
    report = _run(runtime, root, "/imported/mem0")
    assert report.format == "mem0" and report.inventory.memories == 3
    assert report.decisions.added == 2 and report.decisions.rejected == 1
    [bad] = report.rejected
    assert (bad.path, bad.line) == ("memories.jsonl", 3) and "not a JSON line" in bad.reason
    record = next(r for r in _records(runtime, "/imported/mem0/users/ana") if r.content.startswith("Prefers"))
    assert json.loads(str(record.metadata["mem0_metadata"])) == {"confidence": 0.9, "source": "onboarding"}
    assert record.metadata["mem0_categories"] == "food, preferences"
    assert record.metadata["mem0_app_id"] == "concierge"


def test_a_mem0_expiration_date_is_the_only_expiry_and_it_is_listed(runtime):
    report = _run(runtime, DATA / "imports" / "mem0", "/imported/mem0")
    [expired] = [s for s in report.skipped if s.decision == "skipped_expired"]
    assert expired.ref.endswith("8a1f2c3e-0004-4b50-8888-8dd25736052a")
    assert expired.reason == "expired: its expiration_date 2026-10-20 had passed before the import"
    assert report.decay.excluded is True
    _every_item_not_written_is_listed(report)


def test_a_chat_log_line_that_is_not_json_is_reported_and_the_rest_imports(runtime, tmp_path):
    log = [
        {"role": "user", "content": "I always deploy the API with blue-green releases.", "id": "c1"},
        "{broken",
        {"role": "user", "content": "Our staging database runs PostgreSQL 16.", "id": "c3"},
    ]
    text = "\n".join(row if isinstance(row, str) else json.dumps(row) for row in log)
    report = _run(runtime, _write(tmp_path / "src", {"chat.jsonl": text}), fmt="jsonl")
    assert report.decisions.added == 2 and report.decisions.rejected == 1
    assert report.rejected[0].line == 2 and report.rejected[0].ref == "chat.jsonl#L2"


def test_a_rerun_lists_every_item_it_skips_as_seen(runtime):
    root = DATA / "imports" / "openclaw" / "workspace"
    first = _run(runtime, root)
    again = _run(runtime, root)
    assert again.decisions.skipped_seen == first.inventory.items == len(again.skipped)
    assert all(s.reason.startswith("already imported into /imported/test") for s in again.skipped)


# --------------------------------------------------------------------------- Claude Code

TOPIC = """---
name: integration-tests-real-db
description: Integration tests hit a real database
type: feedback
---

Integration tests must hit a real database, not mocks.

**Why:** last quarter the mocked tests passed while the prod migration failed.

**How to apply:** when a test touches persistence, start the docker compose Postgres.
"""

RULE = """---
paths:
  - "src/api/**/*.ts"
  - "src/shared/**"
---

# API rules

- All endpoints validate their input with zod.
- Errors use the RFC 9457 problem format.
  **Why:** the mobile client parses `type` and `detail`.
"""


def test_a_topic_file_or_rule_stays_one_memory_with_its_why_and_front_matter(runtime, tmp_path):
    root = _write(
        tmp_path / "claude",
        {
            "projects/-home-dev-shop/memory/feedback_testing.md": TOPIC,
            "projects/-home-dev-shop/memory/MEMORY.md": "- [Testing](feedback_testing.md) — real DB\n",
            ".claude/rules/api.md": RULE,
        },
    )
    found = inventory(PosixSourceTree(root), "claude-code")
    assert found.count(ItemKind.TOPIC) == 2 and found.count(ItemKind.NOTE) == 0
    report = _run(runtime, root, "/imported/claude")
    assert report.decisions.added == 2 and report.decisions.pending == 0
    [topic] = _records(runtime, "/imported/claude/projects/home-dev-shop")
    assert topic.content.startswith("Integration tests must hit a real database, not mocks.")
    assert "**Why:** last quarter" in topic.content and "**How to apply:**" in topic.content
    assert topic.type is MemoryType.USER_PREFERENCE  # `type: feedback`
    assert topic.metadata["claude_name"] == "integration-tests-real-db"
    assert topic.metadata["claude_description"] == "Integration tests hit a real database"
    [rule] = _records(runtime, "/imported/claude")
    assert (
        "zod" in rule.content and "RFC 9457" in rule.content and "**Why:** the mobile client" in rule.content
    )
    assert rule.metadata["claude_paths"] == "src/api/**/*.ts, src/shared/**"
    assert not _records(runtime, "/imported/claude", (Status.PENDING,))


def test_each_claude_code_project_goes_to_its_own_namespace(runtime, tmp_path):
    root = _write(
        tmp_path / "claude",
        {
            "CLAUDE.md": "- Answer in English even when asked in German.\n",
            "projects/-home-dev-shop/memory/MEMORY.md": "- The shop's checkout is written in Go.\n",
            "projects/-home-dev-blog/memory/MEMORY.md": "- The blog is built with Hugo and deployed to Netlify.\n",
            "projects/-home-dev-blog/memory/style.md": "---\nname: style\ntype: user\n---\n\nThe user writes "
            "posts in British English.\n",
        },
    )
    report = _run(runtime, root, "/imported/claude")
    assert report.decisions.added == 4
    assert [r.content for r in _records(runtime, "/imported/claude")] == [
        "Answer in English even when asked in German."
    ]
    assert [r.content for r in _records(runtime, "/imported/claude/projects/home-dev-shop")] == [
        "The shop's checkout is written in Go."
    ]
    blog = {r.content for r in _records(runtime, "/imported/claude/projects/home-dev-blog")}
    assert blog == {
        "The blog is built with Hugo and deployed to Netlify.",
        "The user writes posts in British English.",
    }
    files = runtime.services.files.read(TENANT, "/imported/claude/projects/home-dev-blog", "memory").entries
    assert files == ["The blog is built with Hugo and deployed to Netlify."]


def test_a_rationale_paragraph_stays_with_the_entry_it_explains():
    text = "## Testing\n\n- Never mock the payment provider.\n\n**Why:** mocks hid a refund bug.\n\n- Use pytest.\n"
    assert markdown_entries(text) == [
        (3, "Never mock the payment provider.\n**Why:** mocks hid a refund bug.", "Testing"),
        (7, "Use pytest.", "Testing"),
    ]


# --------------------------------------------------------------------------- not facts, clear errors

USER_TEMPLATE = """# USER.md - About Your Human

*Learn about the person you're helping. Update this as you go.*

- **Name:** Sam Rivera
- **What to call them:**
- **Pronouns:** *(optional)*
- **Timezone:** America/Toronto

## Context

*(What do they care about? What projects are they working on?)*

```
echo "a snippet on its own"
```

- Builds furniture on weekends.
"""


def test_template_placeholders_and_lone_code_blocks_are_listed_not_stored(runtime, tmp_path):
    report = _run(runtime, _write(tmp_path / "ws", {"USER.md": USER_TEMPLATE}))
    assert report.decisions.added == 3 and report.decisions.skipped_not_fact == 5
    assert {r.content for r in _records(runtime, "/imported/test")} == {
        "**Name:** Sam Rivera",
        "**Timezone:** America/Toronto",
        "Builds furniture on weekends.",
    }
    reasons = {s.line: s.reason for s in report.skipped}
    assert reasons[3] == "not a fact: a template's instruction in italics"
    assert (
        reasons[6] == reasons[7] == "not a fact: an empty template field (nothing filled in after the label)"
    )
    assert reasons[14] == "not a fact: a code block with no statement before it in its section"
    _every_item_not_written_is_listed(report)


def test_a_skill_with_broken_yaml_is_rejected_by_name_and_the_rest_imports(runtime, tmp_path):
    root = _write(
        tmp_path / "ws",
        {
            "MEMORY.md": "- The staging cluster is in eu-central-1.\n",
            "skills/deploy/SKILL.md": "---\nname: deploy\ndescription: [unclosed\n---\n\nRun the deploy.\n",
        },
    )
    report = _run(runtime, root)
    assert report.decisions.added == 1 and report.decisions.rejected == 1
    [bad] = report.rejected
    assert bad.path == "skills/deploy/SKILL.md" and bad.rule == "invalid_item"
    assert bad.reason.startswith("SKILL.md: its front matter is not valid YAML at line ")


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        (
            "export.json",
            b'{"results": [{"id": "m1", "memory": "Likes te',
            "not valid JSON (truncated or broken?)",
        ),
        ("export.json", '[{"memory": "Café au lait"}]'.encode("latin-1"), "iconv -f WINDOWS-1252"),
        ("chat.jsonl", '{"role": "user", "content": "hé"}\n'.encode("utf-16"), "looks like UTF-16"),
        ("MEMORY.md", "- Café\n".encode("utf-16"), "iconv -f UTF-16 -t UTF-8"),
    ],
)
def test_unreadable_files_are_named_under_auto(runtime, tmp_path, name, data, message):
    from agent_memory.domain.errors import ValidationFailed

    (tmp_path / name).write_bytes(data)
    with pytest.raises(ValidationFailed) as raised:
        _run(runtime, tmp_path, fmt="auto")
    assert name in raised.value.message and message in raised.value.message
    assert raised.value.code != "unknown_layout"


def test_a_truncated_mem0_export_named_as_mem0_says_why_nothing_was_found(runtime, tmp_path):
    from agent_memory.domain.errors import ValidationFailed

    (tmp_path / "memories.json").write_bytes(b'{"results": [{"id": "m1", "memory": "Prefers dark mo')
    with pytest.raises(ValidationFailed) as raised:
        _run(runtime, tmp_path, fmt="mem0")
    assert "no Mem0 memories found" in raised.value.message
    assert "memories.json: not valid JSON (truncated or broken?)" in raised.value.message


def test_openclaw_user_md_template_text_is_not_stored_and_its_filled_fields_are(runtime, tmp_path):
    template = (
        "# USER.md - About Your Human\n\n_Learn about the person you're helping. Update this as you go._\n\n"
        "- **Name:** Sam\n- **What to call them:**\n- **Pronouns:** _(optional)_\n- **Timezone:** Europe/Berlin\n"
        "- **Notes:**\n\n## Context\n\n_(What do they care about? What projects are they working on? What "
        "annoys them? What makes them laugh? Build this over time.)_\n\n---\n\nThe more you know, the better "
        "you can help. But remember — you're learning about a person, not building a dossier. Respect the "
        "difference.\n"
    )
    report = _run(runtime, _write(tmp_path / "ws", {"USER.md": template}))
    stored = {record.content for record in _records(runtime, "/imported/test")}
    assert stored == {"**Name:** Sam", "**Timezone:** Europe/Berlin"}
    reasons = [item.reason for item in report.skipped]
    assert "not a fact: the tool's template text (the same in every new file)" in reasons
    assert report.decisions.skipped_not_fact == 6


def test_a_short_statement_is_a_fact_and_only_chat_words_are_small_talk(runtime, tmp_path):
    note = "- The user is vegetarian.\n- Allergic to peanuts\n- Lives in Lisbon\n- ok thanks\n- Sounds like a plan\n"
    report = _run(runtime, _write(tmp_path / "ws", {"memory/2026-03-02.md": note}))
    stored = {record.content for record in _records(runtime, "/imported/test")}
    assert stored == {"The user is vegetarian.", "Allergic to peanuts", "Lives in Lisbon"}
    assert sorted(item.line for item in report.skipped if "small talk" in item.reason) == [4, 5]


# --------------------------------------------------------------------------- exact counts, rollback and back


def test_counts_are_the_records_final_state(runtime, tmp_path):
    memory = (
        "- The user likes long meetings.\n- The user does not like long meetings.\n- The API uses REST.\n"
    )
    report = _run(runtime, _write(tmp_path / "ws", {"MEMORY.md": memory}))
    d = report.decisions
    # The second line supersedes the first: the first was added, and ends as history (replaced).
    assert (d.added, d.superseded, d.replaced) == (1, 1, 1)
    by_status = {
        s: len(_records(runtime, "/imported/test", (s,))) for s in (Status.ACTIVE, Status.SUPERSEDED)
    }
    assert by_status == {Status.ACTIVE: d.added + d.superseded, Status.SUPERSEDED: d.replaced}


def test_a_reimport_after_rollback_restores_records_and_skills(runtime):
    root = DATA / "imports" / "openclaw" / "workspace"
    first = _run(runtime, root)
    runtime.services.imports.rollback(TENANT, first.id, actor="admin")
    assert _records(runtime, "/imported/test", (Status.ACTIVE,)) == []
    again = _run(runtime, root)
    d = again.decisions
    assert (d.added, d.reactivated, d.skills_restored, d.skipped_seen) == (0, first.decisions.added, 1, 0)
    assert len(_records(runtime, "/imported/test", (Status.ACTIVE,))) == first.decisions.added
    skill = runtime.services.skills.get(TENANT, "/imported/test", "deploy-checklist")
    assert skill.meta.status.value == "active"
    assert again.files.entries_added == first.files.entries_added
    # Rolled back again, the reactivated records and the restored skill are archived again.
    rolled = runtime.services.imports.rollback(TENANT, again.id, actor="admin").rollback
    assert (rolled.archived, rolled.skills_archived) == (first.decisions.added, 1)


def test_beyond_the_listing_cap_items_are_counted_and_said_to_be_unlisted(runtime, tmp_path):
    from agent_memory.domain.interop.model import MAX_LISTED_ITEMS

    lines = "".join(f"- ok {n}\n" for n in range(MAX_LISTED_ITEMS + 25))
    report = _run(runtime, _write(tmp_path / "ws", {"memory/2026-03-01.md": lines}))
    assert report.decisions.skipped_transient == MAX_LISTED_ITEMS + 25
    assert (len(report.skipped), report.unlisted) == (MAX_LISTED_ITEMS, 25)
    assert "25 more skipped or rejected items are counted above but not listed here." in render_markdown(
        report
    )
    outcomes = runtime.services.imports.store.outcomes(TENANT, report.id)
    assert sum(1 for o in outcomes if o.reason and o.reason.startswith("transient")) == MAX_LISTED_ITEMS + 25


def test_an_entry_keeps_its_heading_as_context(runtime, tmp_path):
    memory = "# Infrastructure\n\n## Databases\n\n- Orders live in PostgreSQL 16.\n"
    _run(runtime, _write(tmp_path / "ws", {"MEMORY.md": memory}))
    [record] = _records(runtime, "/imported/test")
    assert record.context == "Databases" and record.metadata["import_section"] == "Databases"
    found = runtime.services.memory.recall(
        TENANT, RecallInput(query="databases", namespaces=("/imported/test",), k=3, mode="keyword")
    )
    assert [r.record.id for r in found.results] == [record.id]
