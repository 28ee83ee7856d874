"""`agent-memory import`: dry run, report files, progress bar, rollback and show, clear errors (cli/imports.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from agent_memory.cli.main import main

DATA = Path(__file__).resolve().parents[1] / "data" / "imports"


def _cli(tmp_path: Path, *args: str) -> int:
    return main(["--data-dir", str(tmp_path / "data"), "--embedder", "hashing", "import", *args])


def test_dry_run_then_import_with_report_then_show_and_rollback(tmp_path, capsys):
    assert _cli(tmp_path, "auto", str(DATA / "hermes/.hermes"), "-n", "/me", "--dry-run") == 0
    out = capsys.readouterr().out
    assert "(dry run: nothing written)" in out and "3 files: 6 entries" in out

    report_path = tmp_path / "import.json"
    assert (
        _cli(
            tmp_path,
            "hermes",
            str(DATA / "hermes/.hermes"),
            "-n",
            "/me",
            "--report",
            str(report_path),
            "--progress",
        )
        == 0
    )
    captured = capsys.readouterr()
    assert "7/7 items" in captured.err and "ETA" in captured.err  # the progress bar on stderr
    report = json.loads(report_path.read_text())
    assert report["state"] == "completed" and report["decisions"]["skills_added"] == 1
    assert sum(report["decisions"].values()) == report["inventory"]["items"] == 7
    assert report_path.with_suffix(".md").read_text().startswith(f"# Import {report['id']}")

    assert _cli(tmp_path, "show", report["id"]) == 0
    assert f"# Import {report['id']}" in capsys.readouterr().out
    assert _cli(tmp_path, "rollback", report["id"]) == 0
    assert "## Rollback" in capsys.readouterr().out
    assert _cli(tmp_path, "rollback", report["id"]) == 1
    assert "already rolled back" in capsys.readouterr().err


def test_archive_path_and_default_namespace(tmp_path, capsys):
    archive = shutil.make_archive(str(tmp_path / "chat"), "gztar", DATA / "jsonl")
    assert _cli(tmp_path, "auto", archive, "--quiet") == 0
    out = capsys.readouterr().out
    assert "→ `/imported/jsonl`" in out and "11 turns" in out


def test_clear_errors(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.md").write_text("- a note\n")
    assert _cli(tmp_path, "auto", str(tmp_path / "empty")) == 1
    assert "unknown_layout" in capsys.readouterr().err
    assert _cli(tmp_path, "openclaw", str(tmp_path / "missing")) == 1
    assert "cannot read" in capsys.readouterr().err
    assert _cli(tmp_path, "letta", str(tmp_path / "empty")) == 2
    assert "unknown format 'letta'" in capsys.readouterr().err
    assert _cli(tmp_path, "bundle", str(tmp_path / "empty")) == 2
    assert "bundle" in capsys.readouterr().err
    assert _cli(tmp_path, "show", "imp_0") == 1
    assert "no import with id" in capsys.readouterr().err
