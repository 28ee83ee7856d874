"""Words a shared value accounts for (domain/memory/value_frames.py, issue 27): a relative counted ("a mom of
three" = "three kids") and the quantity a unit measures ("the office temperature is 21 °C" = "the office at
21 °C"). Each mechanism is tried against pairs written to break it: the same frame with another value, another
relative or thing counted, a near-paraphrase that is an update, and a noun the unit does not measure."""

from __future__ import annotations

import pytest

from agent_memory.domain.memory.decide import decide
from agent_memory.domain.memory.paraphrase import same_meaning
from agent_memory.domain.records import MemoryType
from tests.unit.guard_cases import E5, LEXICON, NOW
from tests.unit.guard_cases import stored as _stored


def _action(new: str, old: str) -> str:
    plan = decide(new, NOW, MemoryType.DOMAIN_KNOWLEDGE, [(_stored(old), 0.99)], E5, lexicon=LEXICON)
    return plan.action


MERGED = [
    # a relative counted
    ("Melanie: I'm a mom of three", "Melanie: I have three kids"),
    ("I have three kids", "I'm a mom of three"),
    ("I'm a mother of two", "I have two children"),
    ("Sam is a father of four", "Sam has four children"),
    ("I'm a parent of two", "I have 2 kids"),
    # what a unit measures
    ("Prefers the office temperature to be 21 degrees Celsius", "Likes the office at 21°C"),
    ("The server room temperature is 18 °C", "The server room is at 18 degrees Celsius"),
    ("The fridge is at 4°C", "The fridge temperature is 4°C"),
]

KEPT_APART = [
    # the same frame, another value
    ("Melanie: I'm a mom of four", "Melanie: I have three kids"),
    ("I'm a mother of two", "I have three children"),
    ("Prefers the office temperature to be 22 degrees Celsius", "Likes the office at 21°C"),
    ("The office temperature is 21°F", "The office is at 21°C"),
    # another relative, or something that is not one
    ("I'm a grandma of three", "I have three grandkids"),  # no grandchild in "grandmother"'s definition
    ("I'm a nanny of three", "I have three kids"),  # a nanny is no relative
    ("I'm a teacher of thirty", "I have thirty kids"),
    ("I'm an aunt of two", "I have two kids"),
    ("My sister is a mom of three", "I have three kids"),  # another person: "sister" is left over
    # another thing counted
    ("I'm a mom of three", "I have three cats"),
    ("I'm a mom of three", "I have three sisters"),
    ("I'm a mom of three", "I have three jobs"),
    ("I'm a mom of three", "I lost three kids"),
    ("I'm a mom of three", "I teach three kids"),
    # a near-paraphrase that is an update or another fact
    ("I'm no longer a mom of three", "I have three kids"),
    ("I'm a mom of three", "I had three kids"),
    ("My mom has three kids", "I have three kids"),
    # a noun the unit does not measure, or no unit at all
    ("The office humidity target is 21°C", "The office is at 21°C"),
    ("The CPU temperature limit is 80°C", "The CPU runs at 80°C"),
    ("The freezer temperature is 4°C", "The fridge is at 4°C"),
    ("The office temperature is 21", "The office is at 21"),
    ("The upload size limit is 20 MB", "Uploads are 20 MB"),
    ("The team size is 5", "The team is 5"),
    ("The timeout is 30 seconds", "The retry delay is 30 seconds"),
]


@pytest.mark.parametrize("new,old", MERGED)
def test_a_value_accounts_for_the_words_of_its_frame(new: str, old: str) -> None:
    check = same_meaning(new, old, LEXICON)
    assert check.allowed, check.reason
    assert not same_meaning(
        new, old
    ).allowed  # without a lexicon the words stay apart: the lexicon joined them
    assert _action(new, old) == "merge"


@pytest.mark.parametrize("new,old", KEPT_APART)
def test_a_value_accounts_for_nothing_beyond_its_frame(new: str, old: str) -> None:
    assert not same_meaning(new, old, LEXICON).allowed
    assert _action(new, old) != "merge"


@pytest.mark.parametrize(
    "relative,other,expected",
    [
        ("mom", "kids", True),
        ("mother", "child", True),
        ("father", "children", True),
        ("parent", "kid", True),
        ("nanny", "kids", False),  # the definition names children, but a nanny is no relative
        ("grandma", "grandkids", False),
        ("mom", "cats", False),
        ("kid", "mom", False),  # a child is no kind of relative in the lexicon's first sense
    ],
)
def test_kin_through_reads_a_relatives_definition(relative: str, other: str, expected: bool) -> None:
    assert LEXICON.kin_through(relative, other) is expected
