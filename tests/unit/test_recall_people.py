"""Recall's name rules apply to people's names only, and a polite request is no hypothetical question (issue
34, ninth round; domain/memory/focus.py, recaller.py).

A name is a person's when it labels a transcript turn (`Name: text`) among the candidates recall reads first;
then the vector half embeds the question without it and the subject focus weighs who said what. A product's
or a place's name ("Atlas", "Porto") stays in the vector half's question and moves no one's turn down."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.domain.memory.focus import focus_for, hypothetical, people, speakers_of, without_names
from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.domain.memory.service import MemoryService, RecallInput, RememberInput
from agent_memory.domain.records import MemoryRecord, MemoryType
from tests.unit.test_recall_focus import RecordingEmbedder

NOW = datetime(2025, 6, 1, tzinfo=UTC)


def record(content: str) -> MemoryRecord:
    return MemoryRecord(
        id="r", tenant="acme", namespace="/p", type=MemoryType.EPISODE, content=content,
        created_at=NOW, updated_at=NOW, last_access_at=NOW, valid_from=NOW, recorded_at=NOW,
    )  # fmt: skip


def test_the_speakers_are_the_words_of_the_turns_labels():
    turns = [
        record("Dario: Beacon takes at most 50 SMS per second per tenant."),
        record("[Ines Okafor-Lund] Please don't merge the ledger tables without my review."),
        record("The Atlas API listens on port 8080."),  # no label
    ]
    assert speakers_of(turns) == {"dario", "ines", "okafor-lund"}


def test_a_name_is_a_persons_when_it_speaks_among_the_candidates():
    speakers = frozenset({"dario", "ines", "tomas", "decision"})
    assert people("Who owns the Atlas service?", speakers) == frozenset()
    assert people("How does Atlas talk to Beacon?", speakers) == frozenset()
    assert people("Would Tomas probably prefer the train to Porto?", speakers) == {"tomas"}
    # a run of names is one person's when one of its words speaks: the surname comes with the first name
    assert people("What time zone is Dario Quell in?", speakers) == {"dario", "quell"}
    assert people("What is Ines Okafor-Lund's role?", speakers) == {"ines", "okafor", "lund"}
    assert people("Could Atlas's payments break if Beacon goes down?", speakers) == frozenset()
    assert people("Would Tomas enjoy a steakhouse?", frozenset()) == frozenset()  # no turns: no one known


def test_the_vector_half_keeps_the_names_that_are_no_ones():
    question = "Would Tomas probably prefer the train to Porto?"
    assert without_names(question, frozenset({"tomas"})) == "Would probably prefer the train to Porto?"
    assert without_names("Who owns the Atlas service?", frozenset()) == "Who owns the Atlas service?"
    assert without_names(question) == "Would probably prefer the train to ?"  # every name, as before


def test_the_subject_focus_touches_no_turn_when_no_person_is_named():
    note = record("Decision: Atlas talks to Beacon over SQS, not HTTP, so an outage stays apart.")
    policy = MemoryPolicy(focus_asking=1.0, focus_no_self=1.0)
    assert focus_for("How does Atlas talk to Beacon?", policy).factor(note) == policy.focus_off_subject
    assert focus_for("How does Atlas talk to Beacon?", policy, people=frozenset()).factor(note) == 1.0
    dario = focus_for("What does Dario say of Beacon?", policy, people=frozenset({"dario"}))
    assert dario.factor(note) == policy.focus_off_subject


def test_polite_requests_are_not_hypothetical_questions():
    for request in (
        "Could you remind me which port the API uses?",
        "Would you mind checking what time the on-call handover is?",
        "Can you tell me how often the Postgres admin password is rotated?",
        "Could you look up the staging URL for Atlas?",
        "I'd like to know where the Terraform state is stored.",
        "I would like to see the release train schedule.",
    ):
        assert not hypothetical(request), request
    for question in (
        "Would the user like a window seat?",
        "Would Tomas enjoy a steakhouse for dinner?",
        "Is the user likely to want a 7 am flight?",
        "Could the user take amoxicillin?",
        "Could you check whether Tomas would like sushi?",  # a request about what Tomas would like
        "Would Melanie likely enjoy the song by Vivaldi?",
        "What might Caroline say about her friends?",
    ):
        assert hypothetical(question), question


def build(path, clock, policy: MemoryPolicy) -> tuple[MemoryService, RecordingEmbedder]:
    embedder = RecordingEmbedder()
    built = MemoryService(
        store=SqliteRecordStore(path / "memory.db"), index=LocalSearchIndex(path / "index"),
        embedder=embedder, clock=clock, policy=policy,
    )  # fmt: skip
    for content in (
        "Tomas: I'd rather take the train than fly when the trip is under five hours.",
        "Tomas: Book me something quiet for dinner, I'm not into loud places.",
        "The Atlas service is owned by the payments team; Jonah is its tech lead.",
        "Decision: Atlas talks to Beacon over SQS, not HTTP, so an outage stays apart.",
    ):
        built.remember("acme", RememberInput(content=content, namespace="/p"), actor="test")
    return built, embedder


def test_a_speakers_name_leaves_the_vector_question_and_a_services_name_stays(tmp_path, clock):
    memory, embedder = build(tmp_path, clock, MemoryPolicy())
    memory.recall("acme", RecallInput(query="Would Tomas prefer the train to Porto?", namespaces=("/p",)))
    # no speaker met yet: the first search keeps every name; Tomas speaks among the keyword hits, so the vector
    # half asks again without him (Porto is no one's and stays)
    assert embedder.queries == ["Would Tomas prefer the train to Porto?", "Would prefer the train to Porto?"]
    embedder.queries.clear()
    memory.recall("acme", RecallInput(query="Who owns the Atlas service?", namespaces=("/p",)))
    assert embedder.queries == ["Who owns the Atlas service?"]  # no one's name: asked once, whole
    embedder.queries.clear()
    memory.recall("acme", RecallInput(query="Would Tomas enjoy a quiet dinner?", namespaces=("/p",)))
    assert embedder.queries == ["Would enjoy a quiet dinner?"]  # Tomas was met: right at the first guess


def test_the_guess_keeps_no_speakers_name_in_the_process(tmp_path, clock):
    memory, _ = build(tmp_path, clock, MemoryPolicy())
    memory.recall("acme", RecallInput(query="Would Tomas prefer the train to Porto?", namespaces=("/p",)))
    kept = memory.reader.speakers_seen
    assert kept.met("acme", ("/p",), {"tomas"}) == {"tomas"}  # the speaker was met and remembered...
    held = repr(kept.cache._entries)
    assert "tomas" not in held.casefold()  # ...as a keyed digest: a purged speaker's name does not linger


def test_the_guess_from_past_recalls_never_changes_a_result(tmp_path, clock):
    question = RecallInput(query="Would Tomas enjoy a quiet dinner?", namespaces=("/p",), k=4)
    cold, _ = build(tmp_path, clock, MemoryPolicy())
    first = [(hit.record.id, hit.score) for hit in cold.recall("acme", question).results]
    again = [(hit.record.id, hit.score) for hit in cold.recall("acme", question).results]
    assert first == again


def test_a_note_is_not_off_subject_for_a_question_about_a_service(tmp_path, clock):
    question = RecallInput(query="How does Atlas talk to Beacon?", namespaces=("/p",), k=4)
    tomas = RecallInput(query="What does Tomas think of Beacon and SQS?", namespaces=("/p",), k=4)

    def relevance(policy: MemoryPolicy, path_name: str, asked: RecallInput) -> float:
        (tmp_path / path_name).mkdir()
        memory, _ = build(tmp_path / path_name, clock, policy)
        hits = memory.recall("acme", asked).results
        return next(hit.relevance for hit in hits if hit.record.content.startswith("Decision:"))

    off = MemoryPolicy(focus_off_subject=1.0)
    assert relevance(MemoryPolicy(), "a", question) == pytest.approx(relevance(off, "b", question))
    # a question naming a speaker does move the note down
    assert relevance(MemoryPolicy(), "c", tomas) < relevance(off, "d", tomas)
