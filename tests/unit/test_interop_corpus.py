"""The realistic workspaces of tests/data/interop against their expected outcome per item
(tests/data/interop/expected.json): every item a person would keep ends in a record of its namespace with its
meaning (a rule with its rationale in one memory), nothing a person would drop is stored, and every item not
written is listed in the report. The same measure `bench/import.py` prints as per-source fidelity."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPEC = json.loads((ROOT / "tests" / "data" / "interop" / "expected.json").read_text(encoding="utf-8"))


def _fidelity_module():
    spec = importlib.util.spec_from_file_location("import_fidelity", ROOT / "bench" / "import_fidelity.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("source", SPEC["sources"], ids=[s["path"] for s in SPEC["sources"]])
def test_each_corpus_workspace_keeps_what_a_person_would_keep(source, tmp_path):
    result = _fidelity_module().measure(source, tmp_path)
    assert result.missed == [] and result.kept == result.wanted
    assert result.wanted == len(source["keep"]) + len(source.get("skill_files", {}))
    assert result.leaked == []
    assert result.unlisted == 0
