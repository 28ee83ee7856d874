"""The merge guard's third round (issue 27): a negation said by a prefixed antonym ("don't like" = "dislike"),
"not something I V" (= "don't V"), a name in capitals counted ("PRs" = "PR"), a preposition that only
attaches a verb's argument against a copula statement ("licensed under MIT" = "MIT is the licence"), and a
scheduled run told by its start ("run every night at 02:00" = "nightly … start at 02:00"). Each is
tried against pairs written to break it: a contrary antonym, another thing or person, another tense, a
preposition that orders, a prefix that is no negation."""

from __future__ import annotations

import pytest

from agent_memory.domain.memory import negated_antonyms
from agent_memory.domain.memory.decide import decide
from agent_memory.domain.memory.paraphrase import same_meaning
from agent_memory.domain.memory.slots import negated, terms
from agent_memory.domain.records import MemoryType
from tests.unit.guard_cases import E5, LEXICON, NOW
from tests.unit.guard_cases import stored as _stored


def _action(new: str, old: str) -> str:
    plan = decide(new, NOW, MemoryType.DOMAIN_KNOWLEDGE, [(_stored(old), 0.99)], E5, lexicon=LEXICON)
    return plan.action


NEGATED_ANTONYMS = [
    ("I dislike long meetings", "I don't like long meetings"),
    ("I don't like long meetings", "I dislike long meetings"),
    ("The API is unavailable on Sundays", "The API isn't available on Sundays"),
    ("Maria disagrees with the rollout plan", "Maria doesn't agree with the rollout plan"),
    ("The token is invalid after 15 minutes", "The token is not valid after 15 minutes"),
    ("I disliked the old editor", "I didn't like the old editor"),
    ("The endpoint is insecure", "The endpoint is not secure"),
]

OTHER_WORDS = [
    ("The service is governed under EU law", "EU law is the service's governance"),
    ("The project is licensed under MIT", "MIT is the project's license"),
    ("The project is licensed under Apache-2.0", "Apache License 2.0 is the project's licence"),
    ("Long meetings are not something I enjoy", "I don't like long meetings"),
    ("PRs need two approvals before merging", "A PR needs two approvals before merging"),
    ("Nightly backups start at 02:00 UTC", "Backups run every night at 02:00 UTC"),
    ("The nightly import job starts at 6 am", "The import job runs nightly at 6 am"),
]

KEPT_APART = [
    # an antonym of another stem is a contrary, not a denial
    ("The office is hot in winter", "The office is not cold in winter"),
    ("The API is private", "The API is not public"),
    ("The room is small", "The room is not big"),
    # a prefix that is no negation of the rest ("discover" is no antonym of "cover")
    ("The room is discovered", "The room is not covered"),
    # another thing, person, tense or value
    ("I dislike short meetings", "I don't like long meetings"),
    ("I dislike long lunches", "I don't like long meetings"),
    ("I dislike long meetings", "Tom doesn't like long meetings"),
    ("Bob dislikes Alice", "Alice doesn't like Bob"),
    ("I dislike long meetings", "I didn't like long meetings"),
    ("I disliked long meetings", "I don't like long meetings"),
    ("The feature is impossible after Friday", "The feature is not possible before Friday"),
    # two negations, or none where one is denied
    ("The service is unavailable", "The service is not unavailable"),
    ("I like long meetings", "I don't like long meetings"),
    ("I dislike long meetings", "I never dislike long meetings"),
    # "not something I V": another verb
    ("Long meetings are not something I avoid", "I don't like long meetings"),
    ("Long meetings are something I enjoy", "Long meetings are not something I enjoy"),
    # names in capitals: another name, not a plural
    ("PRDs need two approvals", "PRs need two approvals"),
    # a governed preposition: another owner, a preposition that orders, another tense, another person
    ("MIT is the vendor's license", "The project is licensed under MIT"),
    ("The audit is the release's plan", "The release is planned after the audit"),
    ("Apache License 2.0 was the project's licence", "The project is licensed under Apache-2.0"),
    ("Bob is Maria's listing", "Maria is listed under Bob"),
    # a scheduled run: its end, its outcome, another job, another time, a run until a time, a past start
    ("Nightly backups finish at 02:00 UTC", "Backups run every night at 02:00 UTC"),
    ("Nightly backups fail at 02:00 UTC", "Backups run every night at 02:00 UTC"),
    ("Nightly backups end at 02:00 UTC", "Backups run every night at 02:00 UTC"),
    ("Nightly backups stop at 02:00 UTC", "Backups run every night at 02:00 UTC"),
    ("Nightly restores start at 02:00 UTC", "Backups run every night at 02:00 UTC"),
    ("Nightly backups start at 03:00 UTC", "Backups run every night at 02:00 UTC"),
    ("Backups start at 02:00 UTC", "Backups run until 02:00 UTC"),
    ("Backups start failing at 02:00 UTC", "Backups run every night at 02:00 UTC"),
    ("The import job started at 6 am", "The import job runs at 6 am"),
]


@pytest.mark.parametrize("new,old", NEGATED_ANTONYMS)
def test_a_negation_and_a_prefixed_antonym_flip_together(new: str, old: str) -> None:
    check = same_meaning(new, old, LEXICON)
    assert check.allowed, check.reason
    assert "prefixed antonym" in check.reason
    assert not same_meaning(new, old).allowed  # without a lexicon: opposite polarity
    assert _action(new, old) == "merge"


@pytest.mark.parametrize("new,old", OTHER_WORDS)
def test_other_alternations_merge(new: str, old: str) -> None:
    check = same_meaning(new, old, LEXICON)
    assert check.allowed, check.reason
    assert _action(new, old) == "merge"


@pytest.mark.parametrize("new,old", KEPT_APART)
def test_look_alikes_stay_apart(new: str, old: str) -> None:
    assert not same_meaning(new, old, LEXICON).allowed
    assert _action(new, old) != "merge"


def test_the_statement_with_fewer_negations_is_rewritten_in_its_own_tense() -> None:
    assert negated_antonyms.rewritten("I dislike X", "I don't like X", LEXICON) == [
        ("I do not like X", "I don't like X")
    ]
    assert negated_antonyms.rewritten("Maria don't agree", "Maria disagreed", LEXICON) == [
        ("Maria don't agree", "Maria did not agree")
    ]
    assert negated_antonyms.rewritten("It isn't valid", "It is invalid", LEXICON) == [
        ("It isn't valid", "It is not valid")
    ]
    assert negated_antonyms.rewritten("I dislike X", "I like X", LEXICON) == []  # same polarity
    assert negated_antonyms.rewritten("It is not covered", "It is discovered", LEXICON) == []


def test_something_under_a_negation_is_no_thing_negated() -> None:
    assert negated("Long meetings are not something I enjoy") == negated("I don't enjoy long meetings")
    assert negated("That is not anything I use") == negated("I don't use that")


def test_a_name_in_capitals_counted_is_the_name() -> None:
    keys = [(t.key, t.kind) for t in terms("Open PRs and APIs, not AWS or JS")]
    assert ("pr", "entity") in keys and ("api", "entity") in keys
    assert ("aws", "entity") in keys and ("js", "entity") in keys  # a capital S is part of the name
    assert [t.key for t in terms("PRDs need two approvals") if t.kind == "entity"] == ["prd"]  # not "pr"
