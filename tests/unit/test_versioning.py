"""Export bundles, snapshots, diff, restore and references (domain/versioning) on the local runtime."""

from __future__ import annotations

import io
import json
import tarfile
from datetime import timedelta
from typing import Any

import pytest

from agent_memory.domain.errors import Conflict, NotFound, ValidationFailed
from agent_memory.domain.interop import bundle as bundles
from agent_memory.domain.memory.service import RecallInput, RememberInput
from agent_memory.domain.ports import RecordQuery
from agent_memory.domain.records import MemoryType, Status, content_hash
from agent_memory.domain.versioning.service import snapshot_entries
from agent_memory.settings.service import Settings
from agent_memory.wiring.local import LocalRuntime, build_local
from tests.conftest import FixedClock

NS = "/projects/billing"
ACTOR = "test"


def _runtime(tmp_path, name: str, clock: FixedClock) -> LocalRuntime:
    return build_local(Settings(data_dir=tmp_path / name, embedder="hashing"), clock)


def _remember(
    runtime: LocalRuntime, tenant: str, content: str, kind: MemoryType = MemoryType.DOMAIN_KNOWLEDGE
) -> str:
    result = runtime.services.memory.remember(
        tenant, RememberInput(content=content, namespace=NS, type=kind), actor=ACTOR
    )
    assert result.record is not None
    return result.record.id


def _all(runtime: LocalRuntime, tenant: str, namespace: str = NS) -> dict[str, Any]:
    page = runtime.services.memory.list(tenant, RecordQuery(namespaces=(namespace,), limit=100))
    return {record.id: record for record in page.items}


def _active(runtime: LocalRuntime, tenant: str) -> dict[str, str]:
    return {i: r.content_hash for i, r in _all(runtime, tenant).items() if r.status is Status.ACTIVE}


def _links(runtime: LocalRuntime, tenant: str) -> set[tuple[str, str | None, str | None, str | None]]:
    return {(r.id, r.supersedes, r.superseded_by, r.corrected_from) for r in _all(runtime, tenant).values()}


@pytest.fixture
def world(tmp_path):
    """Tenant `alpha` with active, corrected, archived records and memory files."""
    clock = FixedClock()
    runtime = _runtime(tmp_path, "source", clock)
    memory, files = runtime.services.memory, runtime.services.files
    ids = {
        "deploy": _remember(runtime, "alpha", "Deploys of billing run on Tuesdays after the freeze"),
        "db": _remember(runtime, "alpha", "The billing database is Postgres 15 on RDS"),
        "old": _remember(runtime, "alpha", "Invoices are rendered with wkhtmltopdf"),
    }
    clock.advance(minutes=5)
    _, corrected = memory.correct(
        "alpha", ids["db"], "The billing database is Postgres 16 on Aurora", actor=ACTOR
    )
    ids["db2"] = corrected.id
    memory.archive("alpha", ids["old"], actor=ACTOR, reason="no longer used")
    files.add("alpha", NS, "memory", "Billing owner: the payments team")
    files.add("alpha", NS, "user", "Prefers short answers")
    files.append_daily("alpha", NS, "Looked at the invoice queue")
    clock.advance(minutes=5)
    return runtime, clock, ids


# --------------------------------------------------------------------------- bundle format


def test_round_trip_into_an_empty_tenant_keeps_records_files_and_links(world, tmp_path) -> None:
    source, clock, ids = world
    bundle = source.services.versioning.export("alpha", [NS])
    assert bundle.counts()["records"] == 4 and bundle.counts()["active_records"] == 2
    data = bundles.pack_tar(bundle)  # through the single-file form
    target = _runtime(tmp_path, "target", clock)
    report = target.services.versioning.import_bundle("gamma", bundles.unpack_tar(data), actor=ACTOR)
    assert sorted(report.created) == sorted(ids.values()) and not report.conflicts and not report.rejected
    assert _active(target, "gamma") == _active(source, "alpha")
    assert _links(target, "gamma") == _links(source, "alpha")
    for path in ("MEMORY.md", "USER.md"):
        assert target.services.files.read_file("gamma", NS, path) == source.services.files.read_file(
            "alpha", NS, path
        )
    (day,) = source.services.files.list_daily("alpha", NS)
    assert target.services.files.read_daily("gamma", NS, day) == source.services.files.read_daily(
        "alpha", NS, day
    )
    # history came along, and the imported records are searchable
    _, history = target.services.memory.history("gamma", ids["db2"])
    assert [c.operation.value for c in history] == [
        c.operation.value for c in source.services.memory.history("alpha", ids["db2"])[1]
    ]
    hits = target.services.memory.recall(
        "gamma", RecallInput(query="billing database Aurora", namespaces=(NS,))
    )
    assert ids["db2"] in [hit.record.id for hit in hits.results]
    # a second import changes nothing
    again = target.services.versioning.import_bundle("gamma", bundles.unpack_tar(data), actor=ACTOR)
    assert len(again.unchanged) == 4 and not again.created and len(again.files_unchanged) == 3


def test_import_reports_an_existing_id_with_other_content_and_keeps_it(world) -> None:
    runtime, _, ids = world
    bundle = runtime.services.versioning.export("alpha", [NS])
    line = next(r for r in bundle.records if r.id == ids["deploy"])
    line.record["content"] = "Deploys run on Fridays"
    line.record["content_hash"] = content_hash("Deploys run on Fridays")
    runtime.services.memory.get("alpha", ids["deploy"])
    report = runtime.services.versioning.import_bundle("alpha", bundle, actor=ACTOR)
    assert [c["id"] for c in report.conflicts] == [ids["deploy"]]
    assert runtime.services.memory.get("alpha", ids["deploy"]).content.startswith("Deploys of billing")


def test_reader_refuses_tampered_or_unknown_bundles(world) -> None:
    runtime, _, _ = world
    members = bundles.to_members(runtime.services.versioning.export("alpha", [NS]))
    assert bundles.from_members(members).counts()["records"] == 4
    tampered = dict(members, **{bundles.RECORDS: members[bundles.RECORDS].replace(b"Tuesdays", b"Fridays!")})
    with pytest.raises(ValidationFailed, match="size or hash"):
        bundles.from_members(tampered)
    with pytest.raises(ValidationFailed, match="does not list"):
        bundles.from_members(dict(members, **{"files/x/MEMORY.md": b"extra"}))
    manifest = json.loads(members[bundles.MANIFEST])
    manifest["version"] = 99
    with pytest.raises(ValidationFailed, match="version 99"):
        bundles.from_members(dict(members, **{bundles.MANIFEST: json.dumps(manifest).encode()}))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        info = tarfile.TarInfo("../escape.md")
        info.size = 1
        archive.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(ValidationFailed, match="plain relative"):
        bundles.unpack_tar(buffer.getvalue())
    assert (
        "alpha" not in members[bundles.RECORDS].decode() and "alpha" not in members[bundles.MANIFEST].decode()
    )


# --------------------------------------------------------------------------- snapshots, diff, restore


def test_diff_between_snapshots_names_added_changed_archived_with_their_changes(world) -> None:
    runtime, clock, ids = world
    versioning, memory = runtime.services.versioning, runtime.services.memory
    versioning.create_snapshot("alpha", NS, "before", actor=ACTOR)
    with pytest.raises(Conflict):
        versioning.create_snapshot("alpha", NS, "before", actor=ACTOR)
    clock.advance(minutes=1)
    new_id = _remember(runtime, "alpha", "Refunds need a second approver")
    memory.archive("alpha", ids["deploy"], actor=ACTOR, reason="deploys are continuous now")
    memory.update("alpha", ids["db2"], actor=ACTOR, score=0.99)
    runtime.services.files.add("alpha", NS, "memory", "Refund limit is 500 EUR")
    clock.advance(minutes=1)
    versioning.create_snapshot("alpha", NS, "after", actor=ACTOR)
    assert [s.name for s in versioning.list_snapshots("alpha", NS)] == ["before", "after"]

    diff = versioning.diff_snapshots("alpha", NS, "before", "after")
    kinds = {item.id: item.kind for item in diff.records}
    assert kinds == {new_id: "added", ids["deploy"]: "archived", ids["db2"]: "changed"}
    explained = {item.id: [c["operation"] for c in item.changes] for item in diff.records}
    assert explained == {new_id: ["create"], ids["deploy"]: ["archive"], ids["db2"]: ["update"]}
    archived = next(item for item in diff.records if item.id == ids["deploy"])
    assert archived.changes[0]["reason"] == "deploys are continuous now"
    assert diff.files is not None
    (memory_md,) = [f for f in diff.files if f.path == "MEMORY.md"]
    assert memory_md.kind == "changed" and memory_md.entries_added == ["Refund limit is 500 EUR"]

    # the same changes between two points in time, from the change log
    since = versioning.get_snapshot("alpha", NS, "before")[0].created_at
    by_time = versioning.diff_times("alpha", NS, since, clock.now())
    assert {item.id: item.kind for item in by_time.records} == kinds and by_time.files is None
    assert versioning.diff_times("alpha", NS, clock.now(), None).records == []
    with pytest.raises(ValidationFailed):
        versioning.diff_times("alpha", NS, clock.now(), clock.now() - timedelta(days=1))
    with pytest.raises(NotFound):
        versioning.diff_snapshots("alpha", NS, "nope", None)


def test_restore_brings_the_snapshot_back_as_new_versions(world) -> None:
    runtime, clock, ids = world
    versioning, memory, files = runtime.services.versioning, runtime.services.memory, runtime.services.files
    versioning.create_snapshot("alpha", NS, "good", actor=ACTOR)
    memory_md = files.read_file("alpha", NS, "MEMORY.md")
    clock.advance(minutes=1)
    memory.archive("alpha", ids["deploy"], actor=ACTOR)
    _, wrong = memory.correct("alpha", ids["db2"], "The billing database is MySQL", actor=ACTOR)
    added = _remember(runtime, "alpha", "Billing runs on Kubernetes now")
    files.add("alpha", NS, "memory", "A wrong note")
    day_path = files.append_daily("alpha", NS, "A later log line")
    before_restore = {i: r.version for i, r in _all(runtime, "alpha").items()}
    clock.advance(minutes=1)

    plan = versioning.restore_snapshot("alpha", NS, "good", actor=ACTOR, dry_run=True)
    assert plan.safety_snapshot is None
    assert {
        i: r.version for i, r in _all(runtime, "alpha").items()
    } == before_restore  # a dry run writes nothing

    report = versioning.restore_snapshot("alpha", NS, "good", actor=ACTOR)
    actions = {a.get("id") or a.get("file"): a["action"] for a in report.actions}
    assert actions[ids["deploy"]] == "unarchived"
    assert actions[ids["db2"]] == "corrected"
    assert actions[added] == "archived"
    assert actions["MEMORY.md"] == "file_restored"
    assert actions[day_path] == "skipped"  # daily logs are append-only: never rewritten
    assert "A later log line" in files.read_file("alpha", NS, day_path)
    assert {a["action"] for a in plan.actions} == {a["action"] for a in report.actions}
    # the active contents are the snapshot's again ...
    active = {r.content for r in _all(runtime, "alpha").values() if r.status is Status.ACTIVE}
    assert active == {
        "Deploys of billing run on Tuesdays after the freeze",
        "The billing database is Postgres 16 on Aurora",
    }
    assert files.read_file("alpha", NS, "MEMORY.md") == memory_md
    # ... as new versions: nothing overwritten, the wrong correction kept in history, linked
    records = _all(runtime, "alpha")
    assert records[wrong.id].status is Status.ARCHIVED and records[wrong.id].superseded_by
    restored = records[records[wrong.id].superseded_by]
    assert restored.corrected_from == wrong.id and restored.content.endswith("Postgres 16 on Aurora")
    assert all(records[i].version >= v for i, v in before_restore.items())
    # and the state it left is a snapshot of its own
    assert report.safety_snapshot in [s.name for s in versioning.list_snapshots("alpha", NS)]
    back = versioning.diff_snapshots("alpha", NS, report.safety_snapshot, None)
    assert {item.id for item in back.records if item.kind == "archived"} >= {added, wrong.id}


# --------------------------------------------------------------------------- references


def test_reused_counts_recalls_and_sessions_and_marks_reviews(world) -> None:
    runtime, clock, ids = world
    versioning, memory = runtime.services.versioning, runtime.services.memory
    note = _remember(runtime, "alpha", "Billing owner: the payments team")  # also a MEMORY.md entry
    for _ in range(3):
        memory.recall("alpha", RecallInput(query="when do billing deploys run", namespaces=(NS,), k=1))
    assert runtime.services.sessions is not None
    for _ in range(2):
        runtime.services.sessions.start("alpha", NS, actor=ACTOR)
    items = versioning.reused("alpha", NS, limit=10)
    by_id = {item.memory.id: item for item in items}
    assert by_id[ids["deploy"]].recalls == 3
    assert by_id[note].sessions == 2 and by_id[note].reviewed_at is None
    assert items[0].recalls + items[0].sessions >= items[-1].recalls + items[-1].sessions
    heavy = {i.memory.id for i in versioning.reused("alpha", NS, min_uses=3)}
    assert heavy == {i.memory.id for i in items if i.recalls + i.sessions >= 3} and ids["deploy"] in heavy
    assert [i.memory.id for i in versioning.reused("alpha", NS, limit=1)] == [items[0].memory.id]
    # recalls outside the window are not counted
    clock.advance(days=versioning.recall_window_days + 1)
    assert {i.memory.id: i.recalls for i in versioning.reused("alpha", NS)}.get(ids["deploy"], 0) == 0
    assert versioning.reused("beta", NS) == []
    reviewed = versioning.mark_reviewed("alpha", note)
    assert reviewed.sessions == 2
    assert reviewed.reviewed_at == clock.now()
    assert {i.memory.id: i.reviewed_at for i in versioning.reused("alpha", NS)}[note] == clock.now()
    with pytest.raises(NotFound):
        versioning.mark_reviewed("beta", note)


def test_snapshot_entries_parse_the_rendered_snapshot(world) -> None:
    runtime, _, _ = world
    assert runtime.services.sessions is not None
    text = runtime.services.sessions.render_snapshot("alpha", NS)
    assert snapshot_entries(text) == ["Billing owner: the payments team", "Prefers short answers"]


def test_cli_export_import_and_snapshots(tmp_path, capsys) -> None:
    from agent_memory.cli.main import main

    data = ["--data-dir", str(tmp_path / "data"), "--embedder", "hashing"]
    assert main([*data, "remember", "Deploys of billing run on Tuesdays", "-n", NS]) == 0
    assert main([*data, "snapshot", "create", "s1", "-n", NS]) == 0
    assert main([*data, "remember", "Refunds need a second approver", "-n", NS]) == 0
    capsys.readouterr()
    assert main([*data, "snapshot", "diff", "s1", "-n", NS]) == 0
    assert "1 added" in capsys.readouterr().out
    archive, directory = tmp_path / "b.tar.gz", tmp_path / "bundle"
    assert main([*data, "export", "--out", str(archive)]) == 0
    assert main([*data, "export", "-n", NS, "--out", str(directory)]) == 0
    assert (directory / "manifest.json").is_file() and (directory / "records.jsonl").is_file()
    capsys.readouterr()
    assert main([*data, "--tenant", "other", "import-bundle", str(archive)]) == 0
    assert json.loads(capsys.readouterr().out)["counts"]["created"] == 2
    assert main([*data, "--tenant", "other", "import-bundle", str(directory)]) == 0
    assert json.loads(capsys.readouterr().out)["counts"]["unchanged"] == 2
    (directory / "records.jsonl").write_text("{}\n")
    assert main([*data, "--tenant", "third", "import-bundle", str(directory)]) == 1  # refused: hash mismatch
    capsys.readouterr()
    assert main([*data, "snapshot", "restore", "s1", "-n", NS]) == 0
    assert json.loads(capsys.readouterr().out)["counts"] == {"unchanged": 1, "archived": 1}
