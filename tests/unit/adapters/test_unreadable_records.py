"""SQLite: a stored row that no longer loads is skipped and counted, never an error for its namespace, and
`agent-memory repair` fixes or quarantines it (issue 16, defect 1). The store behaviour is the shared
contract in tests/contract/unreadable_records_contract.py; the CLI is tested here."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.cli.main import main
from agent_memory.domain.records import MemoryRecord
from tests.contract.record_store_contract import BILLING, TENANT_A, make_change, make_recall, make_record
from tests.contract.unreadable_records_contract import UnreadableRecordsContract


def _rewrite(path: Path, table: str, tenant: str, row_id: str, edit: Any) -> None:
    with sqlite3.connect(path) as db:
        if isinstance(edit, str):
            body = edit
        else:
            (stored,) = db.execute(
                f"SELECT body FROM {table} WHERE tenant = ? AND id = ?", (tenant, row_id)
            ).fetchone()
            data = json.loads(stored)
            edit(data)
            body = json.dumps(data)
        db.execute(f"UPDATE {table} SET body = ? WHERE tenant = ? AND id = ?", (body, tenant, row_id))


class TestSqliteUnreadableRecords(UnreadableRecordsContract):
    @pytest.fixture
    def record_store(self, tmp_path: Path) -> Iterator[SqliteRecordStore]:
        store = SqliteRecordStore(tmp_path / "memory.db")
        yield store
        store.close()

    @pytest.fixture
    def damage(self, record_store: SqliteRecordStore) -> Any:
        def rewrite(record: MemoryRecord, edit: Any) -> None:
            _rewrite(record_store.path, "records", record.tenant, record.id, edit)

        return rewrite


def test_unreadable_change_and_recall_entries_are_skipped(tmp_path: Path) -> None:
    store = SqliteRecordStore(tmp_path / "memory.db")
    first, second = make_record("One"), make_record("Two")
    store.commit([], [make_change(first), make_change(second)])
    store.log_recall(bad_recall := make_recall())
    store.log_recall(good_recall := make_recall())
    _rewrite(store.path, "changes", TENANT_A, make_change_id(store, first.id), lambda d: d.update(at=None))
    _rewrite(store.path, "recalls", TENANT_A, bad_recall.id, lambda d: d.update(scores=[None]))

    page = store.list_changes(TENANT_A, namespace=BILLING)
    assert [c.record_id for c in page.items] == [second.id] and page.skipped == 1
    assert [r.id for r in store.list_recalls(TENANT_A, bad_recall.namespace, bad_recall.at)] == [
        good_recall.id
    ]


def make_change_id(store: SqliteRecordStore, record_id: str) -> str:
    with sqlite3.connect(store.path) as db:
        (change_id,) = db.execute("SELECT id FROM changes WHERE record_id = ?", (record_id,)).fetchone()
    return str(change_id)


# --------------------------------------------------------------------------- the CLI


@pytest.fixture
def run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    def invoke(*args: str) -> tuple[int, str, str]:
        code = main(["--data-dir", str(tmp_path), "--embedder", "hashing", *args])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return invoke


def test_cli_list_and_recall_survive_a_damaged_row_and_repair_makes_the_namespace_clean(run, tmp_path: Path):
    ns = "/projects/payroll"
    code, out, _ = run("remember", "Payroll runs on the 25th", "-n", ns, "-m", "team=hr")
    bad = json.loads(out)["memory"]
    code, out, _ = run("remember", "The payroll system is called Paylink", "-n", ns)
    good = json.loads(out)["memory"]

    def poison(data: dict[str, Any]) -> None:
        data["metadata"]["x"] = None  # a NaN stored by an older version
        data["half_life_hours"] = None

    _rewrite(tmp_path / "memory.db", "records", "local", bad["id"], poison)

    code, out, err = run("list", "-n", ns)
    assert code == 0 and good["id"] in out and bad["id"] not in out
    assert "1 stored memories could not be read" in err and "agent-memory repair" in err
    code, out, _ = run("recall", "payroll", "-n", ns)
    assert code == 0 and good["id"] in out and bad["id"] not in out

    code, out, _ = run("repair", "--dry-run")
    assert code == 0 and json.loads(out)["counts"] == {"fixed": 1}
    code, out, err = run("list", "-n", ns)
    assert bad["id"] not in out and "could not be read" in err

    code, out, _ = run("repair", "-n", ns)
    report = json.loads(out)
    assert code == 0 and report["counts"] == {"fixed": 1} and report["records"][0]["record_id"] == bad["id"]
    code, out, err = run("list", "-n", ns)
    assert code == 0 and bad["id"] in out and good["id"] in out and err == ""
    code, out, _ = run("get", bad["id"])
    repaired = json.loads(out)
    assert repaired["metadata"] == {"team": "hr"} and repaired["half_life_hours"] == 168.0
    code, out, _ = run("history", bad["id"])
    assert [c["operation"] for c in json.loads(out)["changes"]] == ["create", "repair"]
    code, out, _ = run("repair")
    assert json.loads(out)["found"] == 0


def test_cli_repair_refuses_an_invalid_namespace(run):
    code, _, err = run("repair", "-n", "not-a-path")
    assert code == 1 and "invalid namespace" in err


@pytest.mark.parametrize("naive", ["2030-01-01T00:00:00", "2030-01-01"])
def test_cli_recall_refuses_a_date_time_without_a_time_zone(run, naive):
    assert run("remember", "The office opens at nine", "-n", "/projects/office")[0] == 0
    with pytest.raises(SystemExit) as exit_info:
        run("recall", "office", "-n", "/projects/office", "--as-of", naive)
    assert exit_info.value.code == 2
    code, out, _ = run("recall", "office", "-n", "/projects/office", "--as-of", "2099-01-01T00:00:00Z")
    assert code == 0 and "office" in out
