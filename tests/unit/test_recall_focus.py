"""Recall focus (issue 34, domain/memory/focus.py): a question naming a person ranks that person's own turns
above what others said, and a question asking when ranks turns that say when above those that do not; both
only lower relevance, so select_top's bounded hydration still returns exactly the full re-rank's top k. The
vector half embeds the question without its names (the sixth round)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_memory.adapters.local.embedders import HashingEmbedder
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.domain.memory.focus import Focus, asks_when, focus_of, named, says_when, without_names
from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.domain.memory.recall import Fused, rerank, select_top
from agent_memory.domain.memory.service import MemoryService, RecallInput, RememberInput
from agent_memory.domain.records import MemoryRecord, MemoryType

NOW = datetime(2025, 6, 1, tzinfo=UTC)


def record(record_id: str, content: str) -> MemoryRecord:
    return MemoryRecord(
        id=record_id, tenant="acme", namespace="/p", type=MemoryType.EPISODE, content=content,
        created_at=NOW, updated_at=NOW, last_access_at=NOW, valid_from=NOW, recorded_at=NOW,
    )  # fmt: skip


def fused(record_id: str, relevance: float) -> Fused:
    return Fused(record_id, 0.0, None, None, None, None, relevance)


def test_names_are_the_capitalised_words_that_are_not_question_words():
    assert named("What activities does Melanie partake in?") == {"melanie"}
    assert named("When did Caroline meet Jean's mom?") == {"caroline", "jean"}
    assert named("What did Nate and Joanna both like?") == {"nate", "joanna"}
    assert named("what is the deploy command?") == frozenset()


def test_questions_that_ask_when_and_texts_that_say_when():
    assert asks_when("When did Maria adopt Shadow?")
    assert asks_when("How long ago was Caroline's 18th birthday?")
    assert asks_when("What year did John start surfing?")
    assert not asks_when("What did Melanie paint?")
    assert says_when("Maria: I just adopted this cute pup from a shelter last week.")
    assert says_when("Nate: Dyed my hair two weeks ago - come see!")
    assert says_when("John: Back in 2019 I moved to Boston.")
    assert not says_when("Maria: She brings so much joy!")


def test_a_turn_by_someone_the_question_does_not_name_loses_relevance():
    focus = focus_of("What activities does Melanie partake in?", off_subject=0.5, untimed=1.0)
    assert focus.factor(record("a", "Melanie: I just signed up for a pottery class.")) == 1.0
    assert focus.factor(record("b", "Caroline: Wow Melanie, pottery sounds fun!")) == 0.5
    assert focus.factor(record("c", "The team deploys on Fridays")) == 1.0  # no speaker label: untouched
    no_name = focus_of("what activities are there?", off_subject=0.5, untimed=1.0)
    assert no_name.factor(record("b", "Caroline: Wow Melanie, pottery sounds fun!")) == 1.0


def test_a_question_asking_when_prefers_turns_that_say_when():
    focus = focus_of("When did Maria adopt Shadow?", off_subject=1.0, untimed=0.8)
    assert focus.factor(record("a", "Maria: I adopted this pup from a shelter last week.")) == 1.0
    assert focus.factor(record("b", "Maria: Shadow brings so much joy!")) == 0.8
    assert not focus_of("What did Maria adopt?", off_subject=1.0, untimed=0.8).active


def test_select_top_puts_the_named_speakers_turn_first():
    records = {
        "other": record("other", "Caroline: That's awesome Melanie, a pottery class!"),
        "own": record("own", "Melanie: I just signed up for a pottery class yesterday."),
    }
    items = [fused("other", 0.9), fused("own", 0.8)]
    policy = MemoryPolicy()
    plain = select_top(items, lambda ids: {i: records[i] for i in ids}, policy, NOW, k=2, threshold=0.0)
    assert [s.record.id for s in plain] == ["other", "own"]
    focus = focus_of("What classes did Melanie sign up for?", off_subject=0.5, untimed=1.0)
    focused = select_top(
        items, lambda ids: {i: records[i] for i in ids}, policy, NOW, k=2, threshold=0.0, focus=focus.factor
    )
    assert [s.record.id for s in focused] == ["own", "other"]
    assert focused[1].relevance == 0.45


def test_without_names_keeps_what_the_question_asks():
    assert without_names("What activities does Melanie partake in?") == "What activities does partake in?"
    assert without_names("When did Caroline's mom visit Jean’s house?") == "When did mom visit house?"
    assert without_names("what is the deploy command?") == "what is the deploy command?"
    assert without_names("Melanie?") == "Melanie?"  # nothing but a name: the question itself


class RecordingEmbedder(HashingEmbedder):
    """The hashing embedder, keeping the texts it embedded as queries."""

    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return super().embed_query(text)


@pytest.mark.parametrize(
    ("unnamed", "embedded"),
    [(True, "What did paint at the class?"), (False, "What did Melanie paint at the class?")],
)
def test_the_vector_half_embeds_the_question_without_its_names(tmp_path, clock, unnamed, embedded):
    embedder = RecordingEmbedder()
    service = MemoryService(
        store=SqliteRecordStore(tmp_path / "memory.db"), index=LocalSearchIndex(tmp_path / "index"),
        embedder=embedder, clock=clock, policy=MemoryPolicy(focus_unnamed_vector=unnamed),
    )  # fmt: skip
    content = "Melanie: I painted a sunset at the pottery class."
    service.remember("acme", RememberInput(content=content, namespace="/p"), actor="test")
    question = "What did Melanie paint at the class?"
    (hit,) = service.recall("acme", RecallInput(query=question, namespaces=("/p",), k=1)).results
    assert embedder.queries == [embedded]

    def cosine(text: str) -> float:
        return float(
            np.dot(HashingEmbedder().embed_query(text), HashingEmbedder().embed_documents([content])[0])
        )

    # the memory shares the name, so the two texts' cosines differ and the reported one tells which was used
    assert abs(cosine("What did paint at the class?") - cosine(question)) > 0.05
    assert hit.fused.similarity == pytest.approx(cosine(embedded), abs=1e-6)


SPEAKERS = ["Melanie: ", "Caroline: ", ""]


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.floats(0.0, 1.0), st.sampled_from(SPEAKERS), st.booleans()), min_size=0, max_size=50
    ),
    k=st.integers(min_value=1, max_value=20),
    off=st.floats(0.0, 1.0),
    untimed=st.floats(0.0, 1.0),
)
def test_bounded_hydration_with_a_focus_is_exactly_the_full_rerank(rows, k, off, untimed):
    records = {
        f"r{i:02d}": record(f"r{i:02d}", f"{who}I went there {'last week' if timed else 'once'} with friends")
        for i, (_, who, timed) in enumerate(rows)
    }
    items = [fused(f"r{i:02d}", relevance) for i, (relevance, _, _) in enumerate(rows)]
    focus = Focus(names=frozenset({"melanie"}), off_subject=off, when=True, untimed=untimed)
    policy = MemoryPolicy()
    expected = rerank(items, records, policy, NOW, focus.factor)[:k]
    got = select_top(
        items, lambda ids: {i: records[i] for i in ids}, policy, NOW, k=k, threshold=0.0, focus=focus.factor
    )
    assert [(s.record.id, s.score) for s in got] == [(s.record.id, s.score) for s in expected]
