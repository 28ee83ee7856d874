"""Recall focus (issue 34, domain/memory/focus.py): a question naming a person ranks that person's own turns
above what others said, and a question asking when ranks turns that say when above those that do not; both
only lower relevance, so select_top's bounded hydration still returns exactly the full re-rank's top k. The
vector half embeds the question without its names (the sixth round)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_memory.adapters.local.embedders import HashingEmbedder
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.domain.memory.focus import (
    Focus,
    asks,
    asks_when,
    focus_for,
    focus_of,
    hypothetical,
    named,
    says_when,
    without_names,
)
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


def test_a_memory_that_asks_loses_relevance_whatever_the_question():
    assert asks("What's your best camping memory?")
    assert asks('Did you see "Who Framed Roger Rabbit?"')  # closing quotes aside
    assert not asks("Is it safe? Yes, we checked it twice.")
    focus = focus_of("What did the team decide?", off_subject=1.0, untimed=1.0, asking=0.85)
    assert focus.active
    assert focus.factor(record("a", "Caroline: Wow, Mel! What's your best camping memory?")) == 0.85
    assert focus.factor(record("b", "Which region do we deploy to?")) == 0.85  # no speaker label: still asks
    assert focus.factor(record("c", "Melanie: We camped at the beach last summer.")) == 1.0
    assert not focus_of("What did the team decide?", off_subject=1.0, untimed=1.0, asking=1.0).active


def test_a_turn_that_says_nothing_of_its_speaker_loses_relevance_when_the_question_names_someone():
    focus = focus_of("What has Melanie painted?", off_subject=1.0, untimed=1.0, no_self=0.85)
    assert focus.factor(record("a", "Melanie: Wow, Caroline, that painting is awesome!")) == 0.85
    assert focus.factor(record("b", "Melanie: I'm painting a sunset these days.")) == 1.0  # "I'm"
    assert focus.factor(record("c", "Melanie: Here's our latest work from last weekend.")) == 1.0  # "our"
    assert focus.factor(record("d", "The horse painting sold on Friday")) == 1.0  # no speaker label
    unnamed = focus_of("what has been painted?", off_subject=1.0, untimed=1.0, no_self=0.85)
    assert not unnamed.active
    assert unnamed.factor(record("a", "Melanie: Wow, Caroline, that painting is awesome!")) == 1.0


def test_the_policy_sets_both_factors_and_the_telling_turn_ranks_first():
    records = {
        "asks": record("asks", "Caroline: I wonder, Melanie, what do you paint these days?"),
        "praise": record("praise", "Melanie: Wow, that painting is awesome!"),
        "tells": record("tells", "Melanie: I painted a horse last week."),
    }
    items = [fused("asks", 0.9), fused("praise", 0.85), fused("tells", 0.8)]
    load = lambda ids: {i: records[i] for i in ids}  # noqa: E731
    question = "What has Melanie painted?"
    off = MemoryPolicy(focus_asking=1.0, focus_no_self=1.0, focus_off_subject=1.0)
    plain = select_top(items, load, off, NOW, k=3, threshold=0.0, focus=focus_for(question, off).factor)
    assert [s.record.id for s in plain] == ["asks", "praise", "tells"]
    policy = MemoryPolicy(focus_off_subject=1.0)
    assert (policy.focus_asking, policy.focus_no_self) == (0.85, 0.85)
    focused = select_top(
        items, load, policy, NOW, k=3, threshold=0.0, focus=focus_for(question, policy).factor
    )
    assert [s.record.id for s in focused] == ["tells", "asks", "praise"]
    assert [s.relevance for s in focused] == pytest.approx([0.8, 0.9 * 0.85, 0.85 * 0.85])


def test_hypothetical_questions():
    assert hypothetical("Would Melanie likely enjoy the song by Vivaldi?")
    assert hypothetical("What might Caroline say about her friends?")
    assert hypothetical("What fields could Caroline pursue?")
    assert not hypothetical("What did Melanie paint?")
    assert not hypothetical("When did Caroline go to the parade?")


class FixedVectors(HashingEmbedder):
    """Every query gets the first axis; each passage the vector given for it, so every cosine is known."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        super().__init__()
        self.vectors = vectors

    def _padded(self, head: list[float]) -> list[float]:
        return head + [0.0] * (self.identity.dimensions - len(head))

    def embed_query(self, text: str) -> list[float]:
        return self._padded([1.0])

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._padded(self.vectors[text]) for text in texts]


@pytest.mark.parametrize(("weight", "first"), [(0.8, "vector"), (None, "keyword")])
def test_a_hypothetical_question_weighs_the_vector_half_more(tmp_path, clock, weight, first):
    # cosines 1.0, 0.6 and 0.0; only the second shares the question's words "theme park"
    by_vector, by_keyword, far = "We camp under the stars.", "A theme park trip.", "Filler note."
    vectors = {by_vector: [1.0], by_keyword: [0.6, 0.8], far: [0.0, 1.0]}
    service = MemoryService(
        store=SqliteRecordStore(tmp_path / "memory.db"), index=LocalSearchIndex(tmp_path / "index"),
        embedder=FixedVectors(vectors), clock=clock, policy=MemoryPolicy(hypothetical_vector_weight=weight),
    )  # fmt: skip
    for content in vectors:
        service.remember("acme", RememberInput(content=content, namespace="/p"), actor="test")

    def top(question: str) -> str:
        (hit,) = service.recall("acme", RecallInput(query=question, namespaces=("/p",), k=1)).results
        return "vector" if hit.record.content == by_vector else "keyword"

    # relevance at vector weight w: by_vector w · 1, by_keyword w · 0.6 + (1 - w) · 1
    assert top("Would we likely enjoy a theme park?") == first
    assert top("Did we enjoy a theme park?") == "keyword"  # not hypothetical: `vector_weight` either way


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
    # the last text embedded is the one the recall used (a first guess may come before it: test_recall_people)
    assert embedder.queries[-1] == embedded

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
    asking=st.floats(0.0, 1.0),
    no_self=st.floats(0.0, 1.0),
)
def test_bounded_hydration_with_a_focus_is_exactly_the_full_rerank(rows, k, off, untimed, asking, no_self):
    said = ("I went there {} with friends", "They went there {} with friends?", "Went there {}")
    records = {
        f"r{i:02d}": record(f"r{i:02d}", who + said[i % 3].format("last week" if timed else "once"))
        for i, (_, who, timed) in enumerate(rows)
    }
    items = [fused(f"r{i:02d}", relevance) for i, (relevance, _, _) in enumerate(rows)]
    focus = Focus(
        names=frozenset({"melanie"}),
        off_subject=off,
        when=True,
        untimed=untimed,
        asking=asking,
        no_self=no_self,
    )
    policy = MemoryPolicy()
    expected = rerank(items, records, policy, NOW, focus.factor)[:k]
    got = select_top(
        items, lambda ids: {i: records[i] for i in ids}, policy, NOW, k=k, threshold=0.0, focus=focus.factor
    )
    assert [(s.record.id, s.score) for s in got] == [(s.record.id, s.score) for s in expected]
