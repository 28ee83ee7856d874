"""Updates told as a story, units that change with their number, opposite predicates, and the fixes to
`relate` that keep dated notes and "from now on" apart (issue 27). Each rule with the look-alikes it must leave
untouched."""

from __future__ import annotations

import pytest

from agent_memory.domain.memory import contradiction
from agent_memory.domain.memory.narrative import change_target, measurement
from agent_memory.domain.memory.relation import relate
from agent_memory.domain.memory.slots import terms

UPDATES = [
    # a bare new reading of one measure
    ("User: I weigh 90 kg", "User: down to 86 kg"),
    ("User: down to 86 kg", "User: 84 kg this morning"),
    # one value with its unit
    ("JWT access tokens expire after 1 hour", "JWT access tokens expire after 15 minutes"),
    # the same subject moved twice
    ("Maya moved to the web team", "Maya moved back to the mobile team"),
    # a switch whose target shares only a trailing word with the old statement
    ("The user prefers tea in the morning", "The user switched to coffee in the morning"),
    # an opposite predicate, filler words aside
    ("user likes pineapple on pizza", "nah actually hates pineapple on pizza"),
    # "from now on" dates a statement; it is no state "on"
    ("Reply in French from now on", "Go back to replying in English"),
    # "VS" inside a name is no comparator when the statement compares with "over"
    ("Prefers PyCharm over VS Code for Python", "Prefers VS Code over PyCharm for Python"),
    # "changed to" states a new value; it is no event
    ("Tokyo flight changed to May 4", "Tokyo flight changed to May 3"),
]

LINKED = [
    ("The user upgraded to an iPhone 14", "The user switched to a Pixel 8"),
    ("I switched to Vim", "I switched to decaf"),
]

COMPATIBLE = [
    # another measure, or something else named beside the number
    ("User: I weigh 90 kg", "User: ran 5 km this morning"),
    ("User: I weigh 90 kg", "The suitcase weighs 20 kg"),
    ("I ran 5 km today", "I walked 3 km today"),
    # two events, another subject
    ("Caroline: I went to a pride parade last weekend", "Caroline: I went to a pottery class on Tuesday"),
    ("Maya moved to the web team", "Leo moved to the mobile team"),
    # two dated notes of one day about different things
    ("- 2026-03-04: Sam moved to Toronto", "- 2026-03-04: Moved the standup to the big conference room"),
    ("- 2026-02-10: Booked a table at Nopa for Kai", "- 2026-02-10: Booked the car in for a service"),
    # the same comparison for another scope
    ("Prefers PyCharm over VS Code for Python", "Prefers VS Code over PyCharm for Go"),
    # two predicates that are no opposites
    ("The user likes tea", "The user hates coffee"),
]


@pytest.mark.parametrize(("old", "new"), UPDATES)
def test_a_change_told_as_a_story_is_an_update(old, new):
    assert relate(new, old).kind == "update", relate(new, old)


@pytest.mark.parametrize(("old", "new"), LINKED)
def test_a_switch_to_another_target_is_a_possible_update(old, new):
    assert relate(new, old).kind == "possible_update", relate(new, old)


@pytest.mark.parametrize(("old", "new"), COMPATIBLE)
def test_look_alikes_of_the_story_frames_stay_compatible(old, new):
    assert relate(new, old).kind == "compatible", relate(new, old)


def test_a_reading_needs_the_same_unit_and_nothing_else_named():
    assert measurement("down to 86 kg", "I weigh 90 kg") is not None
    assert measurement("down to 86 lbs", "I weigh 90 kg") is None
    assert measurement("the dog is 86 kg", "I weigh 90 kg") is None
    assert measurement("down to 90 kg", "I weigh 90 kg") is None  # the same reading is no change


def test_a_target_change_needs_the_same_subject():
    assert change_target("Maya moved to Berlin", "Maya moved to Paris") is not None
    assert change_target("Leo moved to Berlin", "Maya moved to Paris") is None
    assert change_target("Maya moved to the web team", "Maya moved to the web team") is None


def test_a_switch_is_known_only_when_the_old_statement_names_its_head():
    known = contradiction.assess("The team switched to the mobile app", "The team uses the mobile app")
    assert known.basis == "switch_known"
    fresh = contradiction.assess(
        "The user switched to coffee in the morning", "The user drinks tea in the morning"
    )
    assert fresh.basis != "switch_known"


def test_from_now_on_is_no_state():
    assert "state:on" not in {t.key for t in terms("Reply in French from now on")}
    assert "state:on" in {t.key for t in terms("The feature flag is on")}
