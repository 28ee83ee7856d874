"""The merge guard's paraphrase reading (`paraphrase.same_meaning`, issue 27): statements that say the same thing
in other words merge; a difference in any value, name, role, polarity, negated thing or compared order keeps
both. Each rule is pinned by a pair it accepts and by pairs it must refuse."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent_memory.domain.memory.decide import decide
from agent_memory.domain.memory.merge_guard import same_statement
from agent_memory.domain.memory.paraphrase import same_meaning
from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.domain.memory.roles import same_roles
from agent_memory.domain.memory.slots import negated, negations, ordered_pairs, values
from agent_memory.domain.records import MemoryRecord, MemoryType

SAME = [
    # a name starting one sentence and ending the other, with the passive
    ("Maria owns the billing service", "The billing service is owned by Maria"),
    ("Bob is the team lead", "The team is led by Bob"),
    # frame words ("happen", "where", "every") and category nouns ("region", "branch", "files")
    ("Deploys happen on Fridays", "We deploy every Friday"),
    ("I call mom on Sundays", "I call mom every Sunday"),
    ("The API gateway listens on port 8080", "Port 8080 is where the API gateway listens"),
    ("Production runs in eu-west-1", "Our production environment is hosted in the eu-west-1 region"),
    ("Never force-push to main", "Do not force-push to the main branch"),
    ("The user prefers spaces over tabs in YAML", "For YAML files, the user favours spaces rather than tabs"),
    # word families
    ("The main database is PostgreSQL 16", "We use Postgres 16 as the primary database"),
    ("Use Python 3.12 for the project", "The project should be run on Python 3.12"),
    ("El proyecto usa Python 3.12", "El proyecto utiliza Python 3.12"),
    ("Ich habe zwei Katzen", "Ich besitze zwei Katzen"),
    ("Maria owns two cars", "Maria has two cars"),
    ("PRs need 1 approval", "PRs require 1 approval"),
    ("My mom lives in Lyon", "My mother lives in Lyon"),
    # comparisons worded differently, same items in the same order
    ("The user prefers cats over dogs", "The user likes cats more than dogs"),
    ("Prefers tabs over spaces in Go", "In Go, the user would rather have tabs than spaces"),
    # the negated thing after a light verb
    ("Use pnpm, not npm", "Don't use npm; use pnpm"),
    # "not allowed" forbids what stands before it, as "never" does; a time said in words; a category noun
    ("Never deploy on Fridays", "Deployments are not allowed on Fridays"),
    ("Yoga class is at 6:30 am on Saturdays", "On Saturdays I have yoga at half past six in the morning"),
    # a currency as a symbol or a word
    ("- 2026-02-24: Offsite budget is €3,500", "- 2026-02-24: The offsite budget is 3,500 euros"),
]

DIFFERENT = [
    # another person, or the same people in other roles
    ("Maria owns the billing service", "The billing service is owned by Bob"),
    ("Maria hired Bob", "Bob hired Maria"),
    ("Maria was hired by Bob", "Maria hired Bob"),
    ("Maria hired the new engineer", "Maria was hired by the new engineer"),
    ("The team is led by Bob", "Alice is the team lead"),
    ("The flight leaves from Berlin to Munich", "The flight leaves from Munich to Berlin"),
    # another value
    ("Deploys happen on Fridays", "We deploy every Monday"),
    ("I call mom on Sunday", "I call mom every Sunday"),  # one day is no habit
    ("The API gateway listens on port 8080", "Port 8081 is where the API gateway listens"),
    ("The main database is PostgreSQL 16", "We use Postgres 15 as the primary database"),
    ("Offsite budget is €3,500", "Offsite budget is $3,500"),
    ("Ich habe zwei Katzen", "Ich besitze drei Katzen"),
    ("Maria owns two cars", "Maria has three cars"),
    ("PRs need 1 approval", "PRs require 2 approvals"),
    ("My mom lives in Lyon", "My father lives in Lyon"),
    ("The user bought a Tesla", "The user sold a Tesla"),
    # another scope or subject beside a category noun
    ("Production runs in eu-west-1", "Our staging environment is hosted in the eu-west-1 region"),
    ("Never force-push to main", "Do not force-push to the release branch"),
    ("The user prefers spaces over tabs in YAML", "For JSON files, the user favours spaces rather than tabs"),
    # the compared items in the other order
    ("The user prefers cats over dogs", "The user likes dogs more than cats"),
    ("Prefers tabs over spaces in Go", "In Go, the user would rather have spaces than tabs"),
    # another thing negated, or the other polarity
    ("Use pnpm, not npm", "Don't use pnpm; use npm"),
    ("Never deploy on Fridays", "Deploy on Fridays"),
    ("Never deploy on Fridays", "Merges are not allowed on Fridays"),
    ("Never deploy on Fridays", "Deployments are allowed on Fridays"),
    ("Yoga class is at 6:30 am on Saturdays", "On Saturdays I have yoga at half past six in the evening"),
    # a content word with no counterpart: frame words do not absorb real verbs
    ("Backups start at 02:00 UTC", "Backups end at 02:00 UTC"),
    ("I run three times a week", "I go three times a week"),
    ("The user wants a dog", "The user has a dog"),
    ("I pay on Fridays", "I get paid on Fridays"),
    ("I am in Paris in May", "I am going to Paris in May"),
]


@pytest.mark.parametrize(("old", "new"), SAME)
def test_the_same_statement_in_other_words_merges(old, new):
    check = same_meaning(new, old)
    assert check.allowed, check.reason


@pytest.mark.parametrize(("old", "new"), DIFFERENT)
def test_a_difference_in_value_name_role_order_or_polarity_keeps_both(old, new):
    check = same_meaning(new, old)
    assert not check.allowed, f"{old!r} / {new!r} would be merged: {check.reason}"


def test_both_guards_read_the_passive_by_its_participants():
    assert same_meaning("Bob was hired by Maria", "Maria hired Bob").allowed
    assert not same_statement("The engineer was hired by Maria", "The engineer hired Maria").allowed
    assert not same_meaning("Maria was hired by Bob", "Maria hired Bob").allowed
    assert same_roles("The billing service is owned by Maria", "Maria owns the billing service", frozenset())
    assert not same_roles("Maria was hired by the engineer", "Maria hired the engineer", frozenset())


def test_a_currency_is_a_value():
    assert values("Budget is €3,500") == values("Budget is 3,500 euros")
    assert values("Budget is €3,500") != values("Budget is $3,500")
    assert not same_statement("Budget is $3,500", "Budget is €3,500").allowed


def test_rather_than_and_more_than_are_comparisons():
    assert ordered_pairs("would rather indent with tabs than with spaces") == ordered_pairs(
        "prefers tabs over spaces"
    )
    assert ordered_pairs("likes cats more than dogs") == ordered_pairs("prefers cats over dogs")
    assert ordered_pairs("likes dogs more than cats") != ordered_pairs("prefers cats over dogs")
    assert ordered_pairs("Prefers the office temperature to be 21 degrees") == ()


def test_a_light_verb_after_a_negation_is_not_what_is_negated():
    assert negated("Don't use npm") == negated("use pnpm, not npm") == frozenset({"npm"})
    assert negated("Don't use pnpm") != negated("use pnpm, not npm")


def test_a_time_said_in_words_is_a_time():
    assert values("half past six in the morning") == values("6:30 am")
    assert values("quarter to ten") == values("9:45")
    assert values("seven o'clock in the evening") == values("7 pm")
    assert values("half past twelve at night") == values("00:30")
    assert values("half past six in the evening") != values("6:30 am")


NOW = datetime(2026, 3, 1, tzinfo=UTC)
E5 = MemoryPolicy().similarity_thresholds("multilingual-e5-small-q4")


def _stored(content: str, memory_type: MemoryType = MemoryType.DOMAIN_KNOWLEDGE) -> MemoryRecord:
    return MemoryRecord(
        id="mem_old", tenant="acme", namespace="/p", type=memory_type, content=content,
        created_at=NOW, updated_at=NOW, last_access_at=NOW, valid_from=NOW, recorded_at=NOW,
    )  # fmt: skip


def _plan(content: str, old: MemoryRecord, similarity: float, memory_type=MemoryType.DOMAIN_KNOWLEDGE):
    return decide(content, NOW + timedelta(hours=1), memory_type, [(old, similarity)], E5)


def test_the_guard_decides_a_merge_the_embedder_only_has_to_hold_them_as_neighbours():
    old = _stored("Maria owns the billing service")
    # below the near-duplicate threshold (0.965), above the relation threshold (0.8): the guard merges
    assert _plan("The billing service is owned by Maria", old, 0.9).action == "merge"
    assert _plan("The billing service is owned by Maria", old, 0.7).action == "add"  # no neighbour
    # a paraphrase with another name is never merged, however similar
    assert _plan("The billing service is owned by Bob", old, 0.99).action != "merge"


def test_a_preference_and_a_fact_read_from_other_words_merge_but_a_task_does_not():
    old = _stored("Prefers dark mode in every app", MemoryType.USER_PREFERENCE)
    assert _plan("Wants every app in dark mode", old, 0.9).action == "merge"
    assert _plan("Wants every app in dark mode", old, 0.9, MemoryType.TASK_ACTION).action == "add"


def test_a_change_cue_between_the_very_same_words_is_no_update():
    old = _stored("Caroline: I moved to Toronto last month")
    assert _plan("Caroline: last month I relocated to Toronto", old, 0.9).action == "merge"
    assert _plan("Caroline: last month I relocated to Ottawa", old, 0.9).action == "supersede"


def test_the_merge_threshold_follows_an_operator_setting():
    assert E5.merge == E5.contradiction == 0.8
    assert MemoryPolicy(near_duplicate_similarity=1.0).similarity_thresholds("x").merge == 1.0
    explicit = MemoryPolicy(near_duplicate_similarity=1.0, merge_similarity=0.9)
    assert explicit.similarity_thresholds("x").merge == 0.9


def test_need_is_no_negation():
    assert negations("PRs need 1 approval") == 0
    assert negations("PRs do not need 1 approval") == 1
    assert negations("I stopped smoking") == 1
