"""The purge of import state (domain/erasure/imports.py, issue 18 gap 1): the content fields of an import's
report and outcomes are redacted in place for a memory, subject or namespace purge (counts, decisions, ids and
rollback kept), a tenant purge deletes the tenant's imports, and the verification finds nothing afterwards.
`check_import_rows` is the contract every `ImportRows` adapter passes (SQLite here, DynamoDB on moto in
tests/aws/test_erasure_aws.py)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_memory.adapters.local.import_store import SqliteImportStore
from agent_memory.adapters.posix.source_tree import PosixSourceTree
from agent_memory.domain.erasure.imports import REDACTED, ImportContent, ImportRows
from agent_memory.domain.erasure.model import EraseScope, PurgeKind, PurgeState, PurgeTarget
from agent_memory.domain.interop.model import (
    DecayCheck,
    ImportReport,
    ImportState,
    InventoryView,
    ItemOutcome,
    RecallCheck,
    RecallProbe,
)
from agent_memory.settings.service import Settings
from agent_memory.wiring.local import LocalRuntime, build_local
from tests.conftest import FixedClock

DATA = Path(__file__).resolve().parents[1] / "data" / "imports"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
SECRET = "Quill harbour gate code is 4417"
OTHER = "The ferry leaves at noon"


def _report(tenant: str, import_id: str, namespace: str) -> ImportReport:
    return ImportReport(
        id=import_id,
        tenant=tenant,
        namespace=namespace,
        format="hermes",
        source="home.tgz",
        dry_run=False,
        state=ImportState.COMPLETED,
        actor="t",
        started_at=NOW,
        inventory=InventoryView(
            format="hermes",
            files=["MEMORY.md"],
            entries=3,
            notes=0,
            turns=0,
            memories=0,
            skills=0,
            items=3,
            skipped_files=[],
        ),
        preference_recall=RecallCheck(
            sampled=2,
            hits=2,
            hit_rate=1.0,
            probes=[
                RecallProbe(ref="MEMORY.md#a", query="what about 4417 code gate harbour quill", hit=True),
                RecallProbe(ref="MEMORY.md#b", query="what about noon ferry", hit=True),
            ],
        ),
        decay=DecayCheck(ref="MEMORY.md#c", query=f"Old note: {SECRET}", excluded=True),
    )


def _outcomes(namespace: str) -> list[ItemOutcome]:
    return [
        ItemOutcome(
            ref="MEMORY.md#a",
            namespace=namespace,
            decision="added",
            record_id="rec_secret",
            created=True,
            file_kind="memory",
            file_entry=SECRET,
        ),
        ItemOutcome(
            ref="MEMORY.md#b",
            namespace=namespace,
            decision="added",
            record_id="rec_other",
            created=True,
            file_kind="memory",
            file_entry=OTHER,
        ),
        ItemOutcome(ref="MEMORY.md#c", namespace=namespace, decision="skipped_expired"),
    ]


def _seed(rows: ImportRows, store, tenant: str, import_id: str, namespace: str) -> None:
    store.save(_report(tenant, import_id, namespace))
    store.add_outcomes(tenant, import_id, namespace, _outcomes(namespace))


def _scope(kind: PurgeKind, tenant: str = "acme", **extra) -> EraseScope:
    defaults: dict = {"record_ids": (), "needles": (), "namespaces": ()}
    defaults.update(extra)
    return EraseScope(tenant=tenant, kind=kind, **defaults)


def check_import_rows(store) -> None:
    """The contract: `store` is an empty `ImportStore` that is also the purge's `ImportRows`."""
    _seed(store, store, "acme", "imp_1", "/a")
    _seed(store, store, "acme", "imp_2", "/b")
    _seed(store, store, "beta", "imp_1", "/a")
    content = ImportContent(store)
    assert store.import_ids("acme") == ["imp_1", "imp_2"]

    # A memory purge of the record one item became: its file entry, its probe and (by text) the decay query.
    memory = _scope(PurgeKind.MEMORY, record_ids=("rec_secret",), needles=(SECRET,), namespaces=("/a", "/b"))
    found = content.find(memory)
    assert found.items == 2 * 3 and all(SECRET not in ref for ref in found.refs)
    assert content.erase(memory, actor="a", reason="r", plan_id="purge_1") == 6
    assert content.find(memory).items == 0
    for import_id in ("imp_1", "imp_2"):
        report = store.get("acme", import_id)
        assert report is not None and report.purges == ["purge_1"]
        assert SECRET not in report.model_dump_json()
        assert report.preference_recall.probes[0].query == REDACTED
        assert report.preference_recall.probes[1].query == "what about noon ferry"  # not purged: kept
        assert report.decay.query == REDACTED and report.decay.excluded is True
        assert report.preference_recall.hits == 2  # counts kept
        outcomes = {o.ref: o for o in store.outcomes("acme", import_id)}
        assert len(outcomes) == 3
        assert outcomes["MEMORY.md#a"].file_entry is None
        assert outcomes["MEMORY.md#a"].record_id == "rec_secret"  # ids and decisions kept
        assert outcomes["MEMORY.md#a"].decision == "added"
        assert outcomes["MEMORY.md#b"].file_entry == OTHER
    # Another tenant's import of the same content is untouched.
    beta = store.get("beta", "imp_1")
    assert beta is not None and SECRET in beta.model_dump_json() and not beta.purges
    assert {o.file_entry for o in store.outcomes("beta", "imp_1")} >= {SECRET}

    # A namespace purge: every import into the namespace, whole (its report holds the source's label and
    # paths), and its imported refs; an import into another namespace is kept.
    assert store.seen("acme", "/b", ["MEMORY.md#b"]) == {"MEMORY.md#b"}
    namespace = _scope(PurgeKind.NAMESPACE, namespaces=("/b",))
    found = content.find(namespace)
    assert found.items == 1 + 3 and found.refs == ["import:imp_2", "import-refs:/b:3"]
    content.erase(namespace, actor="a", reason="r", plan_id="purge_2")
    assert content.find(namespace).items == 0
    assert store.seen("acme", "/b", ["MEMORY.md#b"]) == set()
    assert store.seen("acme", "/a", ["MEMORY.md#b"]) == {"MEMORY.md#b"}  # other namespace: kept
    assert store.get("acme", "imp_2") is None and store.outcomes("acme", "imp_2") == []
    assert store.import_ids("acme") == ["imp_1"]

    # A tenant purge deletes the tenant's imports and refs, nobody else's.
    tenant = _scope(PurgeKind.TENANT, namespaces=("/a", "/b"))
    assert content.find(tenant).items == 1 + 3
    content.erase(tenant, actor="a", reason="r", plan_id="purge_3")
    assert content.find(tenant).items == 0
    assert store.import_ids("acme") == [] and store.get("acme", "imp_1") is None
    assert store.outcomes("acme", "imp_1") == []
    assert store.seen("acme", "/a", ["MEMORY.md#a"]) == set()
    assert store.import_ids("beta") == ["imp_1"] and len(store.outcomes("beta", "imp_1")) == 3


def test_the_sqlite_import_store_passes_the_purge_contract(tmp_path: Path) -> None:
    check_import_rows(SqliteImportStore(tmp_path / "imports.db"))
    conn = sqlite3.connect(tmp_path / "imports.db")
    assert conn.execute("SELECT COUNT(*) FROM import_items WHERE tenant = 'acme'").fetchone() == (0,)


@pytest.fixture
def runtime(tmp_path: Path) -> LocalRuntime:
    return build_local(Settings(data_dir=tmp_path / "data", embedder="hashing"), FixedClock(NOW))


def _import(runtime: LocalRuntime, source: str, namespace: str) -> ImportReport:
    imports = runtime.services.imports
    assert imports is not None
    return imports.run("acme", PosixSourceTree(DATA / source), namespace, actor="t")


def test_purging_an_imported_memory_redacts_the_import_and_rollback_still_undoes_the_rest(
    runtime: LocalRuntime,
) -> None:
    erasure = runtime.services.erasure
    assert erasure is not None
    namespace = "/imported/hermes"
    report = _import(runtime, "hermes/.hermes", namespace)
    text = "User prefers British English spelling in documentation."
    record_id = next(
        o.record_id
        for o in runtime.services.imports.store.outcomes("acme", report.id)
        if o.file_entry == text
    )
    assert record_id
    plan = erasure.plan("acme", PurgeTarget(kind=PurgeKind.MEMORY, record_id=record_id), actor="key:admin")
    imports_finding = next(f for f in plan.plan if f.store == "imports")
    assert imports_finding.items >= 1 and all("British" not in ref for ref in imports_finding.refs)
    done = erasure.execute("acme", plan.id, reason="erasure request", actor="key:admin")
    assert done.verification is not None
    assert done.state is PurgeState.COMPLETED, [
        (f.store, f.refs) for f in done.verification.stores if f.items
    ]
    assert done.verification.remaining == 0
    assert next(f for f in done.verification.stores if f.store == "imports").items == 0

    after = runtime.services.imports.report("acme", report.id)
    assert "British English" not in after.model_dump_json()
    assert "british" not in after.model_dump_json().lower()  # the paraphrased probe query too
    assert after.decisions == report.decisions and after.purges == [plan.id]
    stored = (
        sqlite3.connect(runtime.data_dir / "imports.db").execute("SELECT body FROM import_items").fetchall()
    )
    assert stored and all("British English" not in row[0] for row in stored)

    rolled = runtime.services.imports.rollback("acme", report.id, actor="t")
    assert rolled.rollback is not None
    assert (rolled.rollback.archived, rolled.rollback.files_removed) == (4, 4)  # the purged one is gone
    assert rolled.rollback.skills_archived == 1


def test_a_subject_purge_redacts_the_decay_check_of_an_expired_item_never_imported(
    runtime: LocalRuntime,
) -> None:
    erasure = runtime.services.erasure
    assert erasure is not None
    report = _import(runtime, "mem0", "/imported/mem0")
    assert report.decay.query and "Lisbon" in report.decay.query
    plan = erasure.plan("acme", PurgeTarget(kind=PurgeKind.SUBJECT, subject="Lisbon"), actor="key:admin")
    assert plan.record_ids == []  # the expired item never became a record
    assert next(f for f in plan.plan if f.store == "imports").refs == [f"import:{report.id}:decay"]
    done = erasure.execute("acme", plan.id, reason="erasure request", actor="key:admin")
    assert done.state is PurgeState.COMPLETED and done.verification.remaining == 0
    after = runtime.services.imports.report("acme", report.id)
    assert after.decay.query == REDACTED and "Lisbon" not in after.model_dump_json()
    assert after.decay.ref == report.decay.ref and after.decay.excluded is True
