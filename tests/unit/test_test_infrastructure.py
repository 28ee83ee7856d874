"""The test run's own machinery (docs/decisions/0007-test-run-budget.md): the worker groups of `--dist
loadgroup` and the CDK synth shared by every process of a run. If these break, the run gets slower without
any test failing, so they are tested here."""

from __future__ import annotations

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
