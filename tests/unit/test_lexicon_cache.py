"""adapters/lexicon/vocabulary_cache.py: the lexicon lives as long as its process, so its caches keep only
WordNet's own words; a word of a memory WordNet does not know (a name, a codename) is never a cache key and
outlives no purge. The answers are those of a lexicon without caches."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

import agent_memory.adapters.lexicon as lexicon_package
import agent_memory.adapters.lexicon.vocabulary_cache as vocabulary_cache_module
from agent_memory.adapters.lexicon.vocabulary_cache import cached_keys, clear_caches, vocabulary_cache
from agent_memory.adapters.lexicon.wordnet import WordNetLexicon

LEXICON = Path(lexicon_package.__file__).parent

ALLOWED_FUNCTOOLS_CACHES = {
    (
        "wordnet_table.py",
        "_whole",
    ): "the layer build's one pass over every lemma (infra), never a memory's word",
}
"""functools caches the package may hold: none in a process that answers requests."""

MADE_UP = ("zorbulax", "okafor")
PARTS = {"noun", "verb", "adj", "adv"}


def _ask(lexicon: WordNetLexicon, first: str, second: str) -> tuple[object, ...]:
    """Every public question of the lexicon about a pair of words."""
    return (
        lexicon.same_sense(first, second),
        lexicon.antonyms(first),
        lexicon.base_forms(first),
        lexicon.defines(first, second),
        lexicon.defines(second, first),
        lexicon.one_kind(first, second),
        lexicon.kin_through(first, second),
        lexicon.kinds_of_name(first),
    )


def _every_word_of(key: tuple[object, ...]) -> set[str]:
    return {str(part).casefold() for part in key}


def test_a_made_up_name_asked_with_real_words_is_in_no_cache_key() -> None:
    # Given a lexicon asked about made-up names paired with real words, both ways, inflected too
    lexicon = WordNetLexicon()
    for name, word in (("Zorbulax", "river"), ("okafor", "doctor"), ("Okafors", "doctors")):
        _ask(lexicon, name, word)
        _ask(lexicon, word, name)
    # Then the real words were cached, and no key of any cache holds a made-up name or a form of it
    keys = cached_keys(lexicon)
    assert ("river",) in keys["base_forms"] and ("doctor",) in keys["_first_senses"]
    leaked = [
        (cache, key)
        for cache, held in keys.items()
        for key in held
        if any(made_up in word for word in _every_word_of(key) for made_up in MADE_UP)
    ]
    assert not leaked
    # And every key is WordNet's: each word is in its vocabulary, each other argument an identifier
    unknown = [
        (cache, key)
        for cache, held in keys.items()
        for key in held
        for word in key
        if word not in PARTS and not (len(word) == 8 and word.isdigit()) and not lexicon._known(word)
    ]
    assert not unknown


def test_a_real_pair_is_cached_and_a_second_call_is_a_hit(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a lexicon asked once whether "car" is defined through "vehicle"
    lexicon = WordNetLexicon()
    assert lexicon.defines("drive", "car")
    assert ("drive", "car") in cached_keys(lexicon)["defines"]
    # When it is asked again with its file look-ups made to fail
    monkeypatch.setattr(WordNetLexicon, "_lemmas", lambda self, word: pytest.fail(f"recomputed {word}"))
    # Then the answer comes from the cache
    assert lexicon.defines("drive", "car")


def test_a_made_up_name_is_computed_again_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    lexicon = WordNetLexicon()
    assert lexicon.base_forms("Zorbulax") == frozenset()
    asked: list[str] = []
    lemmas = WordNetLexicon._lemmas
    monkeypatch.setattr(
        WordNetLexicon, "_lemmas", lambda self, word: asked.append(word) or lemmas(self, word)
    )
    assert lexicon.base_forms("Zorbulax") == frozenset()
    assert "Zorbulax" in asked


def test_a_made_up_name_is_looked_up_once_per_question_and_held_by_none_after_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a lexicon that knows everything about "doctor" already
    lexicon = WordNetLexicon()
    lexicon.defines("Okafor", "doctor")
    reads: list[int] = []
    exceptions = WordNetLexicon._exception_lists
    monkeypatch.setattr(WordNetLexicon, "_exception_lists", lambda self: reads.append(1) or exceptions(self))
    # When it is asked again (each `_lemmas` computed reads the exception lists once)
    assert not lexicon.defines("Okafor", "doctor") and not lexicon.one_kind("doctor", "Okafor")
    # Then the name was looked up once in each question, through all the cached methods the question asks
    assert len(reads) == 2
    # And the question's scope is gone once it has returned
    assert getattr(vocabulary_cache_module._QUESTION, "entries", None) is None


SAMPLE = [
    "cilantro", "coriander", "replies", "answers", "mom", "child", "drive", "car", "bus", "pediatric",
    "children", "flight", "fly", "Tampa", "Paris", "dark", "light", "Okafor", "Zorbulax", "river",
    "doctor", "nurse", "seat", "sit", "chief executive officer", "CEO", "went", "kitten", "cat",
]  # fmt: skip


def test_answers_equal_an_uncached_lexicon_on_a_sample_of_pairs() -> None:
    # Given one lexicon whose caches fill across the whole sample, and one emptied before every question
    warm, cold = WordNetLexicon(), WordNetLexicon()
    pairs = list(itertools.permutations(SAMPLE, 2))
    warm_answers = [_ask(warm, first, second) for first, second in pairs]
    cold_answers = []
    for first, second in pairs:
        clear_caches(cold)
        cold_answers.append(_ask(cold, first, second))
    # Then every answer is the same, and some are not the empty answer (the sample exercises the bridges)
    assert warm_answers == cold_answers
    assert sum(bool(answer[3]) for answer in warm_answers) >= 5
    assert sum(bool(answer[5]) for answer in warm_answers) >= 5


def test_the_cache_keeps_only_public_keys_and_drops_its_oldest_entry_at_maxsize() -> None:
    class Owner:
        def __init__(self) -> None:
            self.calls: list[tuple[str, ...]] = []

        def _known(self, word: str) -> bool:
            return word in {"river", "doctor", "bank"}

        @vocabulary_cache(2, words=(0,))
        def ask(self, word: str, part: str) -> str:
            self.calls.append((word, part))
            return word.upper()

    owner = Owner()
    for word, part in [("river", "noun"), ("Okafor", "noun"), ("river", "12345678"), ("bank", "river")]:
        assert owner.ask(word, part) == word.upper()
    assert {key for keys in cached_keys(owner).values() for key in keys} == {
        ("river", "noun"),
        ("river", "12345678"),
    }
    owner.ask("doctor", "verb")  # a third public key: the oldest goes
    assert cached_keys(owner) == {"ask": [("river", "12345678"), ("doctor", "verb")]}
    assert len(owner.calls) == 5  # every question computed once: none was asked twice


def _functools_caches() -> list[tuple[str, str, str]]:
    """(file, enclosing function, source) of every functools cache of the package, as a decorator or a call,
    and of every method a vocabulary cache wraps."""
    found = []
    for path in sorted(LEXICON.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            decorators = [ast.unparse(decorator) for decorator in function.decorator_list]
            calls = [ast.unparse(node) for node in ast.walk(function) if isinstance(node, ast.Call)]
            for text in decorators + calls:
                if any(
                    name in text for name in ("lru_cache", "functools.cache", "cached_property", "cache(")
                ):
                    found.append((path.relative_to(LEXICON).as_posix(), function.name, text))
    return found


def test_every_cache_of_the_lexicon_is_a_vocabulary_cache() -> None:
    caches = {
        (file, name) for file, name, text in _functools_caches() if not text.startswith("vocabulary_cache(")
    }
    unknown = caches - set(ALLOWED_FUNCTOOLS_CACHES)
    assert not unknown, (
        f"{sorted(unknown)}: a functools cache in the lexicon keeps every word it is asked about, a purged "
        "memory's names included, for the process's life; use `@vocabulary_cache` (vocabulary_cache.py)"
    )
    assert set(ALLOWED_FUNCTOOLS_CACHES) <= caches, "the allow-list names a cache that is gone: remove it"
    wrapped = {name for _, name, text in _functools_caches() if text.startswith("vocabulary_cache(")}
    assert {"defines", "one_kind", "_offsets", "_first_senses", "sense"} <= wrapped  # the scan sees them
