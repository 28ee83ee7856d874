"""The write discipline's relation rules and merge guard (issue 27), on the statements the issue names and on
their look-alikes. The labelled set (tests/data/write_discipline_cases.json) is judged through the API by
bench/write_discipline.py; these tests pin the rules' behaviour on the cases that must never regress."""

from __future__ import annotations

import pytest

from agent_memory.domain.memory.merge_guard import same_statement
from agent_memory.domain.memory.relation import relate
from agent_memory.domain.memory.slots import ordered_pairs, terms, values

UPDATES = [
    ("Prefers tabs over spaces in Go", "Prefers spaces over tabs in Go"),
    ("Prefers email over phone calls", "Prefers phone calls over email"),
    ("Use Python 3.11 for the project", "Use Python 3.12 for the project"),
    ("The on-call rotation changes every Monday", "The on-call rotation changes every Wednesday"),
    ("The database password rotates every 90 days", "The database password rotates every 30 days"),
    ("Deploys happen on Fridays", "Deploys happen on Mondays"),
    ("The user works at Acme Corp", "The user now works at Globex"),
    ("I live in Berlin", "I moved to Munich last month"),
    ("Alice is the team lead", "Bob is the team lead now; Alice left"),
    ("The mobile app targets iOS 16", "The mobile app targets iOS 17"),
    ("The user has two cats", "The user has three cats"),
    ("The project uses PostgreSQL 14", "The project upgraded to PostgreSQL 16"),
    ("Standup is at 9:30", "Standup moved to 10:15 starting this sprint"),
    ("Feature flag dark_launch is off", "Feature flag dark_launch is on"),
    ("- Preferred meeting tool: Zoom", "- Preferred meeting tool changed to Google Meet"),
    ("I'm learning Spanish", "I stopped learning Spanish and started Portuguese"),
]

COMPATIBLE = [
    ("The user never uses Windows", "The user uses macOS and Linux"),
    ("The user does not like long meetings", "The user likes long walks"),
    ("Prefers tabs in Go", "Prefers spaces in YAML"),
    ("Prefers tabs over spaces in Go", "Prefers spaces over tabs in Python"),
    ("The user speaks French", "The user speaks German"),
    ("I have a dog", "I have a cat"),
    ("Never force-push to main", "**Why:** it rewrote history for the release team last year"),
    ("I visited Rome in 2019", "I visited Lisbon in 2022"),
    ("Staging has 3 nodes", "Production has 12 nodes"),
    ("I work at Acme Corp", "My wife works at Globex"),
    ("Supports Python 3.11", "Also supports Python 3.12"),
    ("I used to live in Madrid", "I live in Valencia"),
    (
        "Service number 1 exposes a health endpoint on port 8001",
        "Service number 2 exposes a health endpoint on port 8002",
    ),
    ("Maya: I never drink coffee at work", "Leo: I drink coffee at work"),
    ("Concurrent fact number 1", "Concurrent fact number 2"),
    ("Ticket 41 blocks the release", "Ticket 42 blocks the release"),
]


@pytest.mark.parametrize(("old", "new"), UPDATES)
def test_a_new_value_of_the_same_attribute_is_an_update(old, new):
    assert relate(new, old).kind == "update", relate(new, old)


@pytest.mark.parametrize(("old", "new"), COMPATIBLE)
def test_facts_that_hold_together_are_left_untouched(old, new):
    assert relate(new, old).kind == "compatible", relate(new, old)


@pytest.mark.parametrize(("old", "new"), UPDATES + COMPATIBLE)
def test_no_update_or_look_alike_passes_the_merge_guard(old, new):
    """Merging any of these would fold a value, a name, an order or a polarity away."""
    assert not same_statement(new, old).allowed


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Billing deploys every Tuesday", "Every Tuesday billing is deployed"),
        ("The meeting is at 2 pm", "The meeting is at 14:00"),
        ("The user has two cats", "The user has 2 cats"),
        ("The user really prefers dark mode", "The user prefers dark mode"),
    ],
)
def test_restatements_with_the_same_values_pass_the_merge_guard(old, new):
    assert same_statement(new, old).allowed


def test_values_are_compared_in_one_spelling():
    assert values("Standup at 2 pm on Mondays") == values("standup at 14:00 on monday")
    assert values("The user has two cats") == values("The user has 2 cats")
    assert values("Use Python 3.11") != values("Use Python 3.12")
    assert [t.key for t in terms("The flag is off") if t.kind == "value"] == ["state:off"]


def test_compared_items_keep_their_order():
    (tabs_first,) = ordered_pairs("Prefers tabs over spaces")
    (spaces_first,) = ordered_pairs("Prefers spaces over tabs")
    assert tabs_first == tuple(reversed(spaces_first))
    assert ordered_pairs("I moved to Munich") == ()


def test_a_weaker_update_links_instead_of_superseding():
    assert relate("Ravi works in Berlin", "Ravi works in Dublin").kind == "update"
    assert relate("The favourite dish is ramen", "The favourite dish is pho").kind in (
        "update",
        "possible_update",
    )
