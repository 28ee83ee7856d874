"""A copula that names a role, read whichever way round it is written (issue 27, domain/memory/copula.py): in
"X is Y's R", "X is the R of Y", "Y's R is X", "The R of Y is X" and "X serves as Y's R" the attribute is
"Y's R" and X its value. Updates told the other way round were kept beside the old value (the holder, the noun
phrase before the first verb, was X on one side and "Y's R" on the other); the look-alikes below (another
possessor, another role of the same person, X the R of two things, a plural role, a question) were superseded
by the older rules and must keep both. Also: a rate told for another holder ("per minute" / "a minute") links."""

from __future__ import annotations

import pytest

from agent_memory.domain.memory import copula, holders
from agent_memory.domain.memory.decide import decide
from agent_memory.domain.memory.relation import relate
from agent_memory.domain.records import MemoryType
from tests.unit.guard_cases import E5, LEXICON, NOW
from tests.unit.guard_cases import stored as _stored

ONE_ATTRIBUTE = [
    "Marta Kowalczyk is Deniz Aydın's mentor",
    "Deniz Aydın's mentor is Marta Kowalczyk",
    "Marta Kowalczyk is the mentor of Deniz Aydın",
    "The mentor of Deniz Aydın is Marta Kowalczyk",
    "Marta Kowalczyk serves as Deniz Aydın's mentor",
    "Marta Kowalczyk works as the mentor of Deniz Aydın",
]


@pytest.mark.parametrize("text", ONE_ATTRIBUTE)
def test_given_either_order_when_read_then_the_attribute_is_the_possessor_role(text: str) -> None:
    reading = copula.read(text)
    assert reading is not None
    assert reading.attribute == (("mentor",), ("deniz", "aydın"))
    assert reading.value == ("marta", "kowalczyk")


@pytest.mark.parametrize(
    "text",
    [
        "Marta Kowalczyk is one of Deniz Aydın's mentors",
        "Marta Kowalczyk is no longer Deniz Aydın's mentor",
        "Is Marta Kowalczyk Deniz Aydın's mentor?",
        "If Marta leaves, Tariq would be Deniz's mentor",
        "Marta Kowalczyk is also Deniz Aydın's mentor",
        "Deniz Aydın's mentor is very patient",
        "Marta Kowalczyk is a mentor of Deniz Aydın",
        "I am Deniz Aydın's mentor",
    ],
)
def test_given_no_single_value_of_a_role_when_read_then_nothing_is_read(text: str) -> None:
    assert copula.read(text) is None


INVERSE_UPDATES = [
    ("Marta Kowalczyk is Deniz Aydın's mentor", "Deniz Aydın's mentor is now Tariq Aziz"),
    ("Deniz Aydın's mentor is Marta Kowalczyk", "Tariq Aziz is now Deniz Aydın's mentor"),
    ("Hugo Lind is the owner of the invoicing service", "The invoicing service's owner is now Sara Holm"),
    (
        "The owner of the invoicing service is Hugo Lind",
        "Sara Holm is now the owner of the invoicing service",
    ),
    ("The default zone is us-east-1a", "us-east-1b is now the default zone"),
    ("us-east-1a is the default zone", "The default zone is now us-east-1b"),
    ("Yuki Sato serves as the design team's lead", "The design team's lead is now Pablo Ruiz"),
    ("Oslo is the host city of the 2028 summit", "The 2028 summit's host city is now Bergen"),
]


@pytest.mark.parametrize(("old", "new"), INVERSE_UPDATES)
def test_given_an_update_told_the_other_way_round_when_related_then_it_is_an_update(
    old: str, new: str
) -> None:
    rel = relate(new, old)
    assert rel.kind == "update", rel.reason
    assert _action(new, old) == "supersede"


INVERSE_TRAPS = [
    # another possessor
    ("Marta Kowalczyk is Deniz Aydın's mentor", "Leila Haddad's mentor is now Tariq Aziz"),
    ("Deniz Aydın's mentor is Marta Kowalczyk", "Tariq Aziz is now Leila Haddad's mentor"),
    # another role of the same person, or of the same possessor
    ("Marta Kowalczyk is Deniz Aydın's mentor", "Marta Kowalczyk is now Deniz Aydın's manager"),
    ("Marta Kowalczyk is Deniz Aydın's mentor", "Deniz Aydın's manager is now Tariq Aziz"),
    # the value becomes a possessor, the possessor a value
    ("Marta Kowalczyk is Deniz Aydın's mentor", "Marta Kowalczyk's mentor is now Tariq Aziz"),
    ("Deniz Aydın's mentor is Marta Kowalczyk", "Deniz Aydın is now Tariq Aziz's mentor"),
    # X is the R of two things
    ("Hugo Lind is the owner of the invoicing service", "Hugo Lind is now the owner of the search service"),
    ("The default zone is us-east-1a", "us-east-1b is now the failover zone"),
    # a plural role, a question
    ("Marta Kowalczyk is one of Deniz Aydın's mentors", "Tariq Aziz is now one of Deniz Aydın's mentors"),
    ("The default zone is us-east-1a", "Is us-east-1b now the default zone?"),
]


@pytest.mark.parametrize(("old", "new"), INVERSE_TRAPS)
def test_given_another_attribute_when_related_then_both_stay(old: str, new: str) -> None:
    rel = relate(new, old)
    assert rel.kind == "compatible", rel.reason
    assert _action(new, old) == "add"


ROLE_TAKEN = [
    ("Marta Kowalczyk is Deniz Aydın's mentor", "Tariq Aziz took over as Deniz Aydın's mentor"),
    ("Marta Kowalczyk is Deniz Aydın's mentor", "Tariq Aziz was appointed Deniz Aydın's mentor"),
    ("The chair of the audit board is Hugo Lind", "Sara Holm is the new chair of the audit board"),
    # not a role copula on the new side: the holder of the old one is its role, so the change cue relates
    ("Marta Kowalczyk is Deniz Aydın's mentor", "Deniz Aydın's mentor changed to Tariq Aziz"),
]


@pytest.mark.parametrize(("old", "new"), ROLE_TAKEN)
def test_given_a_role_taken_by_another_when_related_then_it_is_an_update(old: str, new: str) -> None:
    assert relate(new, old).kind == "update"


def test_given_a_role_copula_when_its_holder_is_read_then_it_is_the_role_not_the_value() -> None:
    assert holders.holder("Marta Kowalczyk is Deniz Aydın's mentor") == holders.holder(
        "Deniz Aydın's mentor is Marta Kowalczyk"
    )
    assert holders.holder("Marta Kowalczyk is Deniz Aydın's mentor") != holders.holder(
        "Marta Kowalczyk lives in Gdańsk"
    )


def test_given_a_former_holder_of_the_role_when_related_then_both_stay() -> None:
    old, new = "The chair of the audit board is Hugo Lind", "Sara Holm is the former chair of the audit board"
    assert copula.read(new) is None
    assert relate(new, old).kind == "compatible"


def test_given_two_values_of_one_role_a_lexicon_calls_one_thing_when_decided_then_no_merge() -> None:
    old, new = "main is the default branch of the infra repo", "The infra repo's default branch is now trunk"
    assert copula.folds_a_value(new, old) is not None
    assert _action(new, old) != "merge"


def test_given_the_same_value_told_the_other_way_round_when_checked_then_no_value_is_folded() -> None:
    assert copula.folds_a_value("eu-west-1 is the default region", "The default region is eu-west-1") is None


def test_given_one_rate_for_another_holder_when_related_then_the_two_are_linked() -> None:
    old, new = "Rate limit is 100 requests per minute", "Each key may now make up to 200 requests a minute"
    assert holders.same_rate(new, old) == "request per min"
    assert relate(new, old).kind == "possible_update"
    assert holders.same_rate("Each key may now make 200 requests a day", old) is None
    assert holders.same_rate("Each key may now make 100 requests a minute", old) is None


def _action(new: str, old: str) -> str:
    return decide(new, NOW, MemoryType.DOMAIN_KNOWLEDGE, [(_stored(old), 0.99)], E5, lexicon=LEXICON).action


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("Maya moved to Berlin", "Maya is the team lead"),
        ("Elif Yılmaz moved to Lisbon", "Elif Yılmaz is Ravi Menon's mentor"),
        ("Kenji is now the head of design", "Kenji lives in Osaka"),
    ],
)
def test_a_role_and_the_place_of_the_one_holding_it_are_two_attributes(new: str, old: str) -> None:
    assert relate(new, old).kind == "compatible"


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("Our default region moved to eu-west-1", "Our default region is us-east-1"),  # the role moved
        ("Maya moved to Berlin", "Maya lives in Paris"),  # a place and a place
    ],
)
def test_a_move_of_the_role_itself_or_of_a_home_is_still_an_update(new: str, old: str) -> None:
    assert relate(new, old).kind == "update"
