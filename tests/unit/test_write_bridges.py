"""Bridges through the lexicon's definitions (domain/memory/bridges.py, issue 27): a word left over on one side
of a paraphrase is accounted for by a word of the other that it is defined through ("pediatric" / "children",
"drives" / "car"), never by a thing of the same kind ("afternoon" / "evening", "car" / "bus") nor by a second
person or thing defined through the first ("mom" / "kid", "host" / "guest", "read" / "write")."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agent_memory.domain.memory.bridges import bridged
from agent_memory.domain.memory.decide import decide
from agent_memory.domain.memory.paraphrase import same_meaning
from agent_memory.domain.memory.roles import same_roles
from agent_memory.domain.memory.tokens import speaker
from agent_memory.domain.records import MemoryType
from tests.unit.guard_cases import E5, LEXICON, NOW
from tests.unit.guard_cases import stored as _stored


@pytest.mark.parametrize(
    "first,second",
    [
        (
            "pediatric",
            "children",
        ),  # "of or relating to the medical care of children" (another part of speech)
        ("drives", "car"),  # "operate or control a vehicle"; a car is "a motor vehicle"
        ("prefers", "likes"),  # "like better": its own kind
        ("flights", "flying"),  # derived
        ("cycling", "bike"),  # an act defined through an artifact
    ],
)
def test_a_word_is_bridged_to_what_it_is_defined_through(first: str, second: str) -> None:
    assert bridged(LEXICON, first, second) and bridged(LEXICON, second, first)
    assert not LEXICON.same_sense(first, second)  # no synonyms: only the bridge joins them


@pytest.mark.parametrize(
    "first,second",
    [
        ("afternoon", "evening"),  # "evening": "... from late afternoon until nightfall", both parts of a day
        ("car", "bus"),  # "bus": "a vehicle carrying many passengers": two kinds of vehicle
        ("mom", "kids"),  # "mother": "a woman who has given birth to a child": two people
        ("host", "guest"),  # "a person who invites guests": two people
        ("kitten", "cat"),  # "young domestic cat": two animals
        ("read", "write"),  # "interpret something that is written": two verbs, not one the other's kind
        ("dark", "light"),  # "devoid of or deficient in light": a definition by the opposite
        ("monday", "friday"),
    ],
)
def test_no_bridge_between_two_things_of_one_kind_or_two_parties(first: str, second: str) -> None:
    assert not bridged(LEXICON, first, second)


@pytest.mark.parametrize(
    "old,new",
    [
        ("Lena is a pediatric dentist", "Lena is a dentist for children"),
        ("The user drives a Subaru Outback", "The user's car is a Subaru Outback"),
        ("The user prefers aisle seats on flights", "When flying, the user likes to sit on the aisle"),
    ],
)
def test_a_paraphrase_merges_only_thanks_to_the_bridge(old: str, new: str) -> None:
    assert not same_meaning(new, old).allowed  # without the lexicon: words left over
    assert same_meaning(new, old, LEXICON).allowed
    plan = decide(
        new, NOW + timedelta(hours=1), MemoryType.DOMAIN_KNOWLEDGE, [(_stored(old), 0.9)], E5, lexicon=LEXICON
    )
    assert plan.action == "merge"


@pytest.mark.parametrize(
    "old,new",
    [
        ("Gym in the afternoon", "Gym in the evening"),
        ("I drive a car", "I drive a bus"),
        ("The kids go to school by bus", "The kids go to school by car"),
        ("My mom lives in Leeds", "My kid lives in Leeds"),
        ("The server reads the config", "The server writes the config"),
        ("Sam is the host", "Sam is a guest"),
        ("Prefers dark mode", "Prefers light mode"),
        ("The user drives a Subaru Outback", "The user's car is a Subaru Forester"),  # a name: never bridged
        ("Lena is a pediatric dentist", "Lena is a dentist for 3 children"),  # a value on one side
        ("Alice is Bob's employee", "Alice employs Bob"),  # a person's noun derived from a role: reversed
        ("Alice is a trainee of Bob", "Alice trains Bob"),  # "someone who is being trained"
    ],
)
def test_the_bridge_never_merges_another_value(old: str, new: str) -> None:
    assert not same_meaning(new, old, LEXICON).allowed
    plan = decide(
        new,
        NOW + timedelta(hours=1),
        MemoryType.DOMAIN_KNOWLEDGE,
        [(_stored(old), 0.97)],
        E5,
        lexicon=LEXICON,
    )
    assert plan.action != "merge"


def test_a_role_told_by_its_work_is_the_role() -> None:
    assert same_meaning("Tom works as a plumber", "Tom is a plumber").allowed
    assert not same_meaning("Tom works with a plumber", "Tom is a plumber").allowed


def test_a_one_word_speaker_may_be_written_in_lower_case() -> None:
    assert speaker("jon: cycling to work these days") == ("jon", "cycling to work these days")
    assert speaker("Jon: I commute by bike now")[0] == "jon"
    assert speaker("release date: June 5") == (None, "release date: June 5")  # two words, not capitalised
    assert speaker("status: done") == (None, "status: done")  # a field, not an utterance
    assert same_meaning("jon: I like green tea a lot", "Jon: I like green tea a lot").allowed
    assert not same_meaning("jon: I like green tea a lot", "Ann: I like green tea a lot").allowed


def test_names_are_ordered_by_how_they_are_written_not_by_stem() -> None:
    # "meeting" shares its stem with the name "Google Meet" but mentions no name
    names = frozenset({"googl", "meet"})
    assert same_roles("- Preferred meeting app: Google Meet", "- Meetings: prefer Google Meet", names)
    assert not same_roles("Maria hired Bob", "Bob hired Maria", frozenset({"maria", "bob"}))


def test_another_inflection_of_a_word_of_the_other_statement_is_no_leftover() -> None:
    assert same_meaning("Meetings: prefer Google Meet", "Preferred meeting app: Google Meet", LEXICON).allowed
