"""The test run's own machinery (docs/decisions/0007-test-run-budget.md): the worker groups of `--dist
loadgroup` and the CDK synth shared by every process of a run. If these break, the run gets slower without
any test failing, so they are tested here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import conftest as root_conftest
from tests.iam import synth

ROOT = Path(__file__).resolve().parents[2]


class _Config:
    def __init__(self, dist: str) -> None:
        self.dist = dist
        self.option = type("Option", (), {"loadscopereorder": True, "maxworkerrestart": None})()

    def getvalue(self, name: str) -> Any:
        return {"dist": self.dist, "numprocesses": 2, "maxprocesses": None, "tx": ["2*popen"]}.get(name)


def test_every_worker_group_names_tests_that_exist() -> None:
    for prefix in root_conftest.WORKER_GROUPS:
        assert (ROOT / prefix.rstrip("/")).exists(), f"WORKER_GROUPS names {prefix}, which is gone"


def test_the_scheduler_keeps_each_group_on_one_worker_and_spreads_the_rest() -> None:
    scheduler: Any = root_conftest.pytest_xdist_make_scheduler(_Config("loadgroup"), None)  # type: ignore[arg-type]
    scope = scheduler._split_scope
    assert scope("tests/infra/test_infra_cost.py::test_x[lean]") == "cdk"
    assert scope("tests/infra/test_infra_dreaming.py::test_y") == "cdk"
    assert scope("tests/unit/test_docs_claims.py::test_z") == "cdk"
    assert scope("tests/browser/test_console.py::test_overview") == "browser"
    assert scope("tests/unit/test_service.py::test_a") == "tests/unit/test_service.py::test_a"
    assert scope("tests/unit/test_service.py::test_b@solo") == "solo"  # an xdist `@group` still counts
    assert root_conftest.pytest_xdist_make_scheduler(_Config("load"), None) is None  # type: ignore[arg-type]


def test_a_synth_is_made_once_per_run_and_read_by_every_other_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[Path] = []

    def fake_synthesize(context: dict[str, Any], outdir: Path) -> dict[str, Any]:
        made.append(outdir)
        return {"template": {"Resources": {}}, "context": context}

    monkeypatch.setattr(synth, "_synthesize", fake_synthesize)
    monkeypatch.setattr(synth, "_IN_PROCESS", {})
    monkeypatch.setenv(synth.SYNTH_DIR_ENV, str(tmp_path))
    first = synth.synthesize({"agent-memory": {"profile": "lean"}})
    monkeypatch.setattr(synth, "_IN_PROCESS", {})  # another process of the same run
    second = synth.synthesize({"agent-memory": {"profile": "lean"}})
    other = synth.synthesize({"agent-memory": {"profile": "isolated"}})
    assert first == second and other["context"]["agent-memory"]["profile"] == "isolated"
    assert len(made) == 2, made  # lean once, isolated once
    assert all(path.parent == tmp_path for path in made)


def test_without_a_shared_directory_a_process_still_synthesizes_only_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(synth, "_synthesize", lambda context, outdir: calls.append(context) or {"n": 1})
    monkeypatch.setattr(synth, "_IN_PROCESS", {})
    monkeypatch.delenv(synth.SYNTH_DIR_ENV, raising=False)
    assert synth.synthesize({"a": 1}) == synth.synthesize({"a": 1}) == {"n": 1}
    assert len(calls) == 1


def test_collecting_the_infra_tests_starts_no_jsii_kernel() -> None:
    """Every xdist worker collects every test file; importing `aws_cdk` at a file's top starts the jsii kernel
    (~10 s of CPU) in the worker that never runs the `cdk` group too. The infra tests import it at first use
    (`infra_support.Deferred`), so importing all of them, as collection does, loads none of it."""
    script = (
        "import importlib, pathlib, sys\n"
        "sys.path[:0] = ['tests/infra', '.', 'functions']\n"
        "for path in sorted(pathlib.Path('tests/infra').glob('test_*.py')):\n"
        "    importlib.import_module(path.stem)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('aws_cdk', 'jsii', 'constructs')\n"
        "      or m in ('infra.constructs', 'infra.bundling', 'infra.stacks')))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]", f"collecting tests/infra imported {loaded}"


def test_a_deferred_module_is_imported_at_its_first_use_only() -> None:
    if str(ROOT / "tests" / "infra") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests" / "infra"))
    import infra_support

    deferred = infra_support.Deferred("json")
    assert deferred.dumps([1]) == "[1]"
    with pytest.raises(AttributeError):
        deferred.__wrapped__  # noqa: B018 (pytest's collection probes such names: they must not import)
