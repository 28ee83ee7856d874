"""Issue 28, unit level: the raw-byte verification sees what the stores' own checks cannot (a deleted row left
in a free page), a plan keeps no path that names the subject, skills keep their front matter, a namespace's
files are its own (never a child's, never an ancestor's folder), and a correction made between plan and execute
is purged too."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from agent_memory.adapters.local.raw_scan import LedgerSeal, RawDataScan
from agent_memory.adapters.posix.file_store import PosixFileStore
from agent_memory.domain.erasure.files import purge_text
from agent_memory.domain.erasure.model import (
    EraseScope,
    PurgeKind,
    PurgeState,
    PurgeTarget,
    StoreFinding,
    safe_ref,
)
from agent_memory.domain.errors import ValidationFailed
from agent_memory.domain.memory.service import RememberInput
from agent_memory.domain.skills.document import parse
from agent_memory.settings.service import Settings
from agent_memory.wiring.local import build_local

SUBJECT = "Quillfeather-8812"


def scope(kind: PurgeKind = PurgeKind.SUBJECT, namespaces: tuple[str, ...] = ("/a",)) -> EraseScope:
    return EraseScope("acme", kind, (), (SUBJECT,), namespaces, subject=SUBJECT)


def test_a_record_names_the_subject_in_any_field_a_user_wrote() -> None:
    s = scope()
    base = {"id": "m1", "content": "nothing", "status": "archived", "namespace": "/a"}
    assert not s.names_record(base)
    assert s.names_record(base | {"source": {"kind": "file", "ref": f"notes/{SUBJECT}.md"}})
    assert s.names_record(base | {"status_reason": f"archived: {SUBJECT.upper()}"})  # case folded
    assert s.names_record(base | {"metadata": {SUBJECT: "tag"}})  # a metadata key
    assert s.names_record(base | {"content": "ｑｕｉｌｌｆｅａｔｈｅｒ-８８１２ ships"})  # NFKC


def test_a_reference_that_names_the_subject_is_kept_as_a_hash() -> None:
    ref = safe_ref(scope(), f"/a/skills/{SUBJECT.lower()}/SKILL.md")
    assert ref.startswith("sha256:") and SUBJECT.lower() not in ref
    assert safe_ref(scope(), "/a/MEMORY.md:3") == "/a/MEMORY.md:3"


def test_a_skill_keeps_valid_front_matter_when_its_description_and_a_step_name_the_subject() -> None:
    skill = (
        "---\nname: deploy-steps\ndescription: Deploy, mind Quillfeather-8812\nprovenance: agent\n"
        "author: key-1\ncreated: '2026-11-30T12:00:00+00:00'\nupdated: '2026-11-30T12:00:00+00:00'\n"
        "version: 1\nstatus: active\nstatus_since: '2026-11-30T12:00:00+00:00'\npinned: false\n---\n\n"
        "# Steps\n\n1. build\n2. check quillfeather-8812\n3. ship\n"
    )
    purged = purge_text(scope(), "skills/deploy-steps/SKILL.md", skill)
    meta, body = parse(purged)  # raises MalformedSkill if the front matter broke
    assert meta.name == "deploy-steps" and meta.description == "[purged]"
    assert "1. build" in body and "3. ship" in body and "quillfeather" not in purged.lower()
    changes = json.dumps([{"note": f"edited for {SUBJECT}", "version": 2}])
    redacted = json.loads(purge_text(scope(), "skills/deploy-steps/changes.json", changes))
    assert redacted == [{"note": "[purged]", "version": 2}]


def test_a_namespace_lists_only_its_own_files_and_cannot_write_into_an_ancestor(tmp_path: Path) -> None:
    files = PosixFileStore(tmp_path)
    files.update("acme", "/projects/nb", "MEMORY.md", lambda _: "parent")
    files.update("acme", "/projects/nb", "skills/deploy/SKILL.md", lambda _: "skill")
    files.update("acme", "/projects/nb", "memory/2026-12-01.md", lambda _: "log")
    files.update("acme", "/projects/nb/kid", "MEMORY.md", lambda _: "child")
    files.update("acme", "/projects/nb/skills", "memory/2026-12-01.md", lambda _: "a child named skills")
    own = ["MEMORY.md", "memory/2026-12-01.md", "skills/deploy/SKILL.md"]
    assert files.list("acme", "/projects/nb") == own  # no child file taken for the parent's
    assert files.list("acme", "/projects/nb/skills") == ["memory/2026-12-01.md"]
    for intruder in ("/projects/nb/skills/deploy", "/projects/nb/memory", "/projects/nb/MEMORY.md"):
        with pytest.raises(ValidationFailed, match="cannot hold memory files"):
            files.update("acme", intruder, "MEMORY.md", lambda _: "sneaky")
    assert files.read("acme", "/projects/nb", "skills/deploy/SKILL.md") == "skill"
    assert not (tmp_path / "acme/projects/nb/skills/deploy/MEMORY.md").exists()


def test_a_namespace_purge_keeps_the_child_namespace_files(tmp_path: Path) -> None:
    runtime = build_local(Settings(data_dir=tmp_path, embedder="hashing"))
    files, erasure = runtime.services.files, runtime.services.erasure
    assert erasure is not None
    files.add("acme", "/projects/nb", "memory", "parent note")
    files.add("acme", "/projects/nb/kid", "memory", "child note")
    plan = erasure.plan("acme", PurgeTarget(kind=PurgeKind.NAMESPACE, namespace="/projects/nb"), actor="t")
    done = erasure.execute("acme", plan.id, reason="test", actor="t")
    assert done.state is PurgeState.COMPLETED, done.verification
    assert files.read("acme", "/projects/nb/kid", "memory").entries == ["child note"]
    assert files.read("acme", "/projects/nb", "memory").entries == []


def test_the_raw_scan_finds_a_deleted_row_left_in_a_free_page_until_compacted(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA secure_delete = OFF")
    conn.execute("CREATE TABLE notes (tenant TEXT, body TEXT)")
    rows = [("acme", f"row {n}") for n in range(10)]
    conn.executemany("INSERT INTO notes VALUES (?, ?)", [*rows[:5], ("acme", f"{SUBJECT} note"), *rows[5:]])
    conn.commit()
    conn.execute("DELETE FROM notes WHERE body LIKE 'Quill%'")
    conn.commit()
    conn.close()
    raw = RawDataScan(tmp_path)
    left = raw.find(scope())
    assert left.items > 0 and all(ref == "other.db:free-pages-or-wal" for ref in left.refs), left
    raw.erase(scope(), actor="t", reason="r", plan_id="p")
    assert raw.find(scope()).items == 0
    assert SUBJECT.encode() not in db.read_bytes()


def test_the_raw_scan_counts_a_live_row_of_the_tenant_and_ignores_another_tenants(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "rows.db")
    conn.execute("CREATE TABLE notes (tenant TEXT, namespace TEXT, body TEXT)")
    conn.execute("INSERT INTO notes VALUES ('other', '/a', ?)", (f"about {SUBJECT}",))
    conn.commit()
    assert RawDataScan(tmp_path).find(scope()).items == 0
    conn.execute("INSERT INTO notes VALUES ('acme', '/b', ?)", (f"about {SUBJECT.lower()}",))
    conn.commit()
    conn.close()
    assert RawDataScan(tmp_path).find(scope()).refs == ["rows.db:notes"]
    (tmp_path / "stray.txt").write_text(f"a copy of {SUBJECT}")  # under no tenant's folder
    assert "stray.txt" in RawDataScan(tmp_path).find(scope()).refs


def test_the_ledger_seal_finds_the_texts_a_completed_plan_once_held(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "purges.db")
    conn.execute("CREATE TABLE purges (body TEXT)")
    conn.execute("INSERT INTO purges VALUES (?)", (json.dumps({"needles": [SUBJECT]}),))
    conn.commit()
    assert LedgerSeal(tmp_path / "purges.db").seal(scope()).items == 1
    conn.execute("UPDATE purges SET body = ?", (json.dumps({"needles": []}),))
    conn.commit()
    conn.close()
    assert LedgerSeal(tmp_path / "purges.db").seal(scope()).items == 0


def test_a_correction_made_between_plan_and_execute_is_purged_too(tmp_path: Path) -> None:
    runtime = build_local(Settings(data_dir=tmp_path, embedder="hashing"))
    memory, erasure = runtime.services.memory, runtime.services.erasure
    assert erasure is not None
    first = memory.remember("acme", RememberInput("The vault code is amberwing-5521", "/v"), actor="t").record
    plan = erasure.plan("acme", PurgeTarget(kind=PurgeKind.MEMORY, record_id=first.id), actor="t")
    successor = memory.correct("acme", first.id, "The vault code is amberwing-5522", actor="t")[1]
    done = erasure.execute("acme", plan.id, reason="test", actor="t")
    assert done.state is PurgeState.COMPLETED and successor.id in done.record_ids and done.regrown == 1
    assert runtime.store.get("acme", successor.id) is None
    assert b"amberwing-552" not in (tmp_path / "memory.db").read_bytes()


def test_a_write_acknowledged_while_the_verification_runs_makes_the_purge_incomplete(tmp_path: Path) -> None:
    runtime = build_local(Settings(data_dir=tmp_path, embedder="hashing"))
    memory, erasure = runtime.services.memory, runtime.services.erasure
    assert erasure is not None
    memory.remember("acme", RememberInput("The harbour opens at six", "/gone"), actor="t")
    plan = erasure.plan("acme", PurgeTarget(kind=PurgeKind.NAMESPACE, namespace="/gone"), actor="t")
    written: list[str] = []

    class WriterDuringVerification:
        def seal(self, scope: EraseScope) -> StoreFinding:
            if not written:  # a writer racing the purge's last read
                written.append(
                    memory.remember("acme", RememberInput("Late tide note", "/gone"), actor="t").record.id
                )
            return StoreFinding(store="ledger")

    erasure._sealers.append(WriterDuringVerification())
    first = erasure.execute("acme", plan.id, reason="test", actor="t")
    assert first.state is PurgeState.INCOMPLETE and first.verification is not None
    assert [(f.store, f.refs) for f in first.verification.stores if f.store == "writes"] == [
        ("writes", written)
    ]
    again = erasure.execute("acme", plan.id, reason="test", actor="t")
    assert again.state is PurgeState.COMPLETED and written[0] in again.record_ids
    assert runtime.store.get("acme", written[0]) is None
