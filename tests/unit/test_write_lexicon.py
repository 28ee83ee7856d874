"""The merge guard with a lexicon, and the values, negations and tenses it compares (issue 27). Synonyms (a
shared first sense in WordNet) may absorb each other; things of one kind never do, and nothing with a
different value, polarity or tense merges."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent_memory.adapters.lexicon.wordnet import WordNetLexicon
from agent_memory.domain.memory.decide import decide
from agent_memory.domain.memory.merge_guard import same_statement
from agent_memory.domain.memory.paraphrase import same_meaning
from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.domain.memory.relation import relate
from agent_memory.domain.memory.slots import negations, values
from agent_memory.domain.records import MemoryRecord, MemoryType, Status

LEXICON = WordNetLexicon()
NOW = datetime(2026, 3, 1, tzinfo=UTC)
E5 = MemoryPolicy().similarity_thresholds("multilingual-e5-small-q4")


def _stored(record_id: str, content: str, **links: str) -> MemoryRecord:
    return MemoryRecord(
        id=record_id, tenant="acme", namespace="/p", type=MemoryType.USER_PREFERENCE, content=content,
        created_at=NOW, updated_at=NOW, last_access_at=NOW, valid_from=NOW, recorded_at=NOW,
        status=Status.SUPERSEDED if "superseded_by" in links else Status.ACTIVE, **links,
    )  # fmt: skip


def test_synonyms_absorb_each_other_only_with_the_lexicon() -> None:
    new, old = "User: I really dislike coriander", "User: I can't stand cilantro"
    assert same_meaning(new, old, LEXICON).allowed
    assert not same_meaning(new, old).allowed  # without it, two words: kept apart
    assert same_meaning("Prefers replies in German", "Prefers answers in German", LEXICON).allowed


def test_the_lexicon_merge_goes_through_decide() -> None:
    old = _stored("mem_old", "User: I can't stand cilantro")
    plan = decide(
        "User: I really dislike coriander",
        NOW + timedelta(hours=1),
        MemoryType.USER_PREFERENCE,
        [(old, 0.9)],
        E5,
        lexicon=LEXICON,
    )
    assert plan.action == "merge" and plan.targets == [old]


@pytest.mark.parametrize(
    "old,new",
    [
        ("I have a cat", "I have a dog"),
        ("Prefers tabs in Go", "Prefers spaces in Go"),
        ("Prefers tabs over spaces in Go", "Prefers spaces over tabs in Go"),
        ("The mobile app targets iOS 16", "The mobile app targets iOS 17"),
        ("Deploys happen on Mondays", "Deploys happen on Fridays"),
        ("The backend is written in Python", "The backend is written in Java"),
        ("I drink tea in the morning", "I drink coffee in the morning"),
        ("My sister is a nurse", "My sister is a doctor"),
        ("The user has a cat", "The user had a cat"),
        ("I am thirty-five", "I'm 36 years old"),
        ("Sentry's sample rate is 0.2", "Sentry's sample rate is 25%"),
        ("The sprint lasts two weeks", "The sprint lasts 10 days"),
    ],
)
def test_things_of_one_kind_other_values_and_tenses_never_merge(old: str, new: str) -> None:
    assert not same_meaning(new, old, LEXICON).allowed
    assert not same_statement(new, old).allowed


@pytest.mark.parametrize(
    "one,other",
    [
        ("I am thirty-five", "I'm 35 years old"),
        ("twenty one", "21"),
        ("Sentry's sample rate is 0.2", "Sentry's sample rate is 20%"),
        ("coverage is 80 percent", "coverage is 0.8"),
        ("The sprint lasts two weeks", "The sprint lasts 14 days"),
        ("The cache TTL is a quarter of an hour", "The cache TTL is 15 minutes"),
        ("The meeting lasts 1.5 hours", "The meeting lasts 90 minutes"),
    ],
)
def test_one_value_in_other_spellings_is_one_value(one: str, other: str) -> None:
    assert values(one) == values(other)


def test_a_version_is_not_a_share() -> None:
    assert values("upgrade to v0.2") != values("upgrade to 20%")
    assert values("release 0.2.1") != values("release 0.2")


def test_french_ne_pas_is_one_negation_and_ne_plus_too() -> None:
    assert negations("Je n'aime pas les réunions longues") == 1
    assert negations("Les longues réunions, je ne les aime pas") == 1
    assert negations("Je ne fume plus") == 1
    assert same_meaning(
        "Les longues réunions, je ne les aime pas", "Je n'aime pas les réunions longues"
    ).allowed
    assert not same_meaning("J'aime les réunions longues", "Je n'aime pas les réunions longues").allowed


def test_a_tense_on_one_side_only_says_nothing() -> None:
    # the passive's auxiliary has no counterpart: still one statement in other words
    assert same_meaning("The billing service is owned by Maria", "Maria owns the billing service").allowed
    assert same_statement("I've got two cats", "I have two cats").allowed
    assert not same_statement("I have got to leave", "I have to leave").allowed


def test_a_journey_and_the_one_back_are_two_events() -> None:
    assert relate("Flight back from Lisbon on May 9", "Flight to Lisbon on May 2").kind == "compatible"
    # a move in one direction and then back is still a change, not a journey
    assert (
        relate("We migrated from Postgres to MySQL", "We migrated from MySQL to Postgres").kind
        != "compatible"
    )


def test_a_return_to_an_earlier_value_supersedes_the_current_one() -> None:
    # Given A superseded by B (current), and a new statement that says A again
    first = _stored("mem_a", "Dr. Chen is my dentist", superseded_by="mem_b")
    current = _stored("mem_b", "I switched to Dr. Alvarez for dental care", supersedes="mem_a")
    plan = decide(
        "Dr. Chen is my dentist again",
        NOW + timedelta(days=2),
        MemoryType.USER_PREFERENCE,
        [(current, 0.85), (first, 0.0)],
        E5,
        lexicon=LEXICON,
    )
    # Then B is superseded (A stays history): one value is current
    assert plan.action == "supersede" and [r.id for r in plan.targets] == ["mem_b"]


def test_a_repeat_of_the_current_value_is_no_return() -> None:
    first = _stored("mem_a", "Prefers dark mode", superseded_by="mem_b")
    current = _stored("mem_b", "Prefers dark mode again", supersedes="mem_a")
    plan = decide(
        "Prefers dark mode again",
        NOW + timedelta(days=2),
        MemoryType.USER_PREFERENCE,
        [(current, 1.0), (first, 0.0)],
        E5,
        lexicon=LEXICON,
    )
    assert plan.action == "merge" and [r.id for r in plan.targets] == ["mem_b"]


@pytest.mark.parametrize(
    "old,new",
    [
        ("The API is fast", "The API is slow"),
        ("The user is happy with the editor", "The user is unhappy with the editor"),
        ("The repo is public", "The repo is private"),
    ],
)
def test_an_opposite_word_said_of_the_same_subject_is_an_update(old: str, new: str) -> None:
    record = _stored("mem_old", old)
    plan = decide(
        new, NOW + timedelta(hours=1), MemoryType.USER_PREFERENCE, [(record, 0.9)], E5, lexicon=LEXICON
    )
    assert plan.action == "supersede" and plan.targets == [record]
    assert decide(new, NOW + timedelta(hours=1), MemoryType.USER_PREFERENCE, [(record, 0.9)], E5).action != (
        "supersede"
    )  # the opposite is the lexicon's knowledge


@pytest.mark.parametrize(
    "old,new",
    [
        ("The left panel is wide", "The right panel is wide"),  # two subjects
        ("The API is fast", "The API is not slow"),  # another polarity
        ("I have a cat", "I have a dog"),  # not opposites
    ],
)
def test_an_opposite_word_naming_the_subject_or_under_a_negation_is_no_update(old: str, new: str) -> None:
    record = _stored("mem_old", old)
    plan = decide(
        new, NOW + timedelta(hours=1), MemoryType.USER_PREFERENCE, [(record, 0.9)], E5, lexicon=LEXICON
    )
    assert plan.action != "supersede"
