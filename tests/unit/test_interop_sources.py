"""Real roots and session transcripts (issue 32): `~/.claude` with several projects and their session JSONL,
`~/.openclaw` with its workspace and session logs, `~/.hermes` with profiles; each project, other agent and
profile in its own namespace; every kept turn traced to its session and message."""

from __future__ import annotations

import io
import tarfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_memory.adapters.archive_tree import ArchiveSourceTree
from agent_memory.adapters.posix.source_tree import PosixSourceTree
from agent_memory.domain.interop.formats import detect, inventory
from agent_memory.domain.ports import RecordQuery
from agent_memory.settings.service import Settings
from agent_memory.wiring.local import build_local
from tests.conftest import FixedClock

DATA = Path(__file__).resolve().parents[1] / "data" / "interop"
TENANT = "acme"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def runtime(tmp_path):
    return build_local(Settings(data_dir=tmp_path / "data", embedder="hashing"), FixedClock(NOW))


def _run(runtime, tree, namespace):
    tree = PosixSourceTree(tree) if isinstance(tree, Path) else tree
    return runtime.services.imports.run(TENANT, tree, namespace, actor="test")


def _contents(runtime, namespace):
    page = runtime.store.list(TENANT, RecordQuery(namespaces=(namespace,), limit=500))
    return {r.content: r for r in page.items}


def test_claude_home_with_projects_and_session_transcripts(runtime):
    root = DATA / "claude-code" / "dot-claude"
    assert detect(PosixSourceTree(root)) == "claude-code"
    report = _run(runtime, root, "/me")
    # 6 turns are people or the assistant speaking in text; the /clear command record, the tool call, the tool
    # result, the sidechain turn, the summary and the snapshot are not turns.
    assert (report.inventory.turns, report.inventory.topics, report.inventory.entries) == (6, 1, 2)
    assert {k: v for k, v in report.decisions.model_dump().items() if v} == {
        "added": 6,
        "skipped_transient": 3,
    }
    assert {(s.line, s.reason.split(":")[0]) for s in report.skipped} == {
        (4, "transient"),  # "Understood."
        (8, "transient"),  # "thanks"
        (9, "transient"),  # "Right now I'm just poking around"
    }
    assert set(_contents(runtime, "/me")) == {"Answer in English even when I write in German."}
    shop = _contents(runtime, "/me/projects/home-dev-shop")
    adyen = shop["The payment gateway we use is Adyen, not Stripe; the old docs are wrong."]
    assert adyen.metadata["import_session"] == "7f3c1a2e-5b6d-4e8f-9a0b-1c2d3e4f5a6b"
    assert adyen.metadata["import_message_id"] == "u3" and adyen.metadata["import_role"] == "user"
    assert adyen.valid_from == datetime(2026, 10, 2, 9, 1, tzinfo=UTC)
    assert (
        adyen.source.ref
        == "claude-code:projects/-home-dev-shop/7f3c1a2e-5b6d-4e8f-9a0b-1c2d3e4f5a6b.jsonl:u3"
    )
    assert "From now on, always run gofmt before you show me Go code." in shop
    assert set(_contents(runtime, "/me/projects/home-dev-blog")) == {
        "The blog deploys to Netlify from the main branch."
    }


def test_openclaw_state_directory_with_workspace_and_session_logs(runtime):
    root = DATA / "openclaw" / "dot-openclaw"
    assert detect(PosixSourceTree(root)) == "openclaw"
    report = _run(runtime, root, "/me")
    assert report.inventory.files == [
        "agents/main/sessions/b7300bff-a214-4c11-97ae-eab26883c67a.jsonl",
        "workspace/MEMORY.md",
        "workspace/memory/2026-04-02.md",
    ]
    assert {s.path: s.reason for s in report.inventory.skipped_files}["workspace/AGENTS.md"] == (
        "agent guidance (instructions), not memory"
    )
    # user "My sister…", assistant "Noted!", user "hi": the tool result is not a turn.
    assert report.inventory.turns == 3 and report.decisions.skipped_transient == 2
    records = _contents(runtime, "/me")
    ana = records["My sister Ana lives in Porto and visits every August."]
    assert ana.metadata["import_session"] == "b7300bff-a214-4c11-97ae-eab26883c67a"
    assert ana.metadata["import_message_id"] == "m1"
    job = records["The user started a new job at Globex as a data engineer."]
    assert job.type.value == "episode" and job.valid_from == datetime(2026, 4, 2, tzinfo=UTC)
    assert runtime.services.files.read(TENANT, "/me", "memory").entries == [
        "The user's car is a 2019 Skoda Octavia estate."
    ]


def test_hermes_home_with_profiles(runtime):
    root = DATA / "hermes" / "dot-hermes"
    report = _run(runtime, root, "/me")
    assert report.format == "hermes" and report.decisions.added == 5
    assert set(_contents(runtime, "/me/profiles/work")) == {
        "The team ships on Thursdays after the 14:00 review.",
        "User wants meeting notes as bullet points.",
    }
    assert runtime.services.files.read(TENANT, "/me/profiles/work", "user").entries == [
        "User wants meeting notes as bullet points."
    ]
    assert len(_contents(runtime, "/me")) == 3


def _tar(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in files.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_an_archive_and_its_directory_give_the_same_inventory(tmp_path):
    files = {
        "billing/CLAUDE.md": "- Amounts are integers in cents.\n",
        "billing/.claude/rules/api.md": "- Every endpoint is idempotent on its request id.\n",
        "billing/node_modules/some-pkg/CLAUDE.md": "- A dependency's instructions, not ours.\n",
    }
    archive = ArchiveSourceTree(_tar(files), name="billing.tar.gz")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    directory = PosixSourceTree(tmp_path)
    found = [inventory(tree, "claude-code") for tree in (archive, directory)]
    assert [f.files for f in found] == [["billing/.claude/rules/api.md", "billing/CLAUDE.md"]] * 2
    assert [[i.content for i in f.items] for f in found] == [
        ["- Every endpoint is idempotent on its request id.", "Amounts are integers in cents."]
    ] * 2
