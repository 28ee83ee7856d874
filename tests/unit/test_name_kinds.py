"""Issue 34: a memory naming a place is indexed for keyword search with what the place is an instance and a part
of (WordNet's instance hypernyms and part holonyms), so a question asking by the kind ("Which US state…") finds
a statement naming the instance ("…in Tampa"). bench/README.md, "fifth round"."""

from __future__ import annotations

import pytest

from agent_memory.adapters.clock import SystemClock
from agent_memory.adapters.lexicon.wordnet import WordNetLexicon
from agent_memory.adapters.local.embedders import HashingEmbedder
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.domain.memory.context import name_kinds
from agent_memory.domain.memory.service import MemoryService, RecallInput, RememberInput
from agent_memory.domain.records import MAX_CONTEXT_CHARS, MemoryType

LEXICON = WordNetLexicon()
NS = "/chat/one"


def test_a_place_name_gives_its_kinds_and_a_common_or_unknown_word_none() -> None:
    tampa = LEXICON.kinds_of_name("Tampa")
    assert {"city", "port", "florida", "american state"} <= tampa
    assert {"capital", "france", "european country"} <= LEXICON.kinds_of_name("paris")
    assert "tampa" not in tampa and "region" not in tampa  # not itself, nothing near the top ("region")
    assert LEXICON.kinds_of_name("pottery") == frozenset()  # a common noun is no instance
    assert LEXICON.kinds_of_name("Talkeetna") == frozenset()  # unknown to WordNet


def test_only_a_capitalised_word_inside_a_sentence_counts_as_a_name() -> None:
    words = name_kinds("Nice to see you. Oh, and I flew to Tampa last week.", LEXICON).split()
    assert "florida" in words and "city" in words
    assert "france" not in words  # "Nice" opens the text: the adjective, not the city
    assert "ohio" not in words  # "Oh" opens a sentence: not the state's abbreviation
    assert name_kinds("i flew to tampa last week", LEXICON) == ""  # no capital, no name
    assert name_kinds("I flew to Tampa last week", None) == ""


def _service(tmp_path, lexicon: WordNetLexicon | None) -> MemoryService:
    return MemoryService(
        store=SqliteRecordStore(tmp_path / "memory.db"),
        index=LocalSearchIndex(tmp_path / "index"),
        embedder=HashingEmbedder(),
        clock=SystemClock(),
        lexicon=lexicon,
    )


def _turn(text: str, **kwargs) -> RememberInput:
    return RememberInput(
        content=text, namespace=NS, type=MemoryType.EPISODE, metadata={"session_date": "s1"}, **kwargs
    )


@pytest.mark.parametrize("lexicon", [LEXICON, None], ids=["wordnet", "none"])
def test_a_question_asking_by_the_kind_finds_the_turn_naming_the_place(tmp_path, lexicon) -> None:
    memory = _service(tmp_path, lexicon)
    results = memory.remember_batch(
        "acme",
        [
            _turn("Jolene: My internship took me to Tampa for three weeks."),
            _turn("Deborah: Did you get any time off to relax?"),
            _turn("Jolene: Some weekends, yes, and the food was great.", context="explicit"),
        ],
        actor="test",
    )
    records = [r.record for r in results if r.record]
    found = memory.recall(
        "acme", RecallInput(query="Which US state did she visit?", namespaces=(NS,), k=1, mode="keyword")
    ).results
    if lexicon is None:
        assert "florida" not in records[0].context
        assert found == []  # no word of the question in any turn
    else:
        assert "florida" in records[0].context and "american state" in records[0].context
        assert [r.record.id for r in found] == [records[0].id]
        assert records[2].context == "explicit"  # no name in it: the caller's context as given


def test_the_kinds_never_push_out_the_callers_context(tmp_path) -> None:
    memory = _service(tmp_path, LEXICON)
    given = ("support group notes " * MAX_CONTEXT_CHARS)[: MAX_CONTEXT_CHARS - 2].strip()  # no room left
    roomy = memory.remember("acme", _turn("We moved to Boston in May.", context="the move"), actor="test")
    full = memory.remember("acme", _turn("We stayed in Boston for June.", context=given), actor="test")
    assert roomy.record is not None and full.record is not None
    assert "massachusetts" in roomy.record.context and roomy.record.context.endswith("the move")
    assert full.record.context == given
