"""The write discipline's fifth round (issue 27): the causes an unseen evaluation set found, each pinned with
several phrasings written from general English and the look-alikes that must stay apart or untouched."""

from __future__ import annotations

import pytest

from agent_memory.domain.memory.decide import _relation, _says_again
from agent_memory.domain.memory.paraphrase import same_meaning
from agent_memory.domain.memory.phrasal import relation_differs
from agent_memory.domain.memory.slots import terms

NOT_MERGED = [
    ("The user works at Acme", "The user works with Acme"),
    ("Maria reports to Ana", "Maria reports on Ana"),
    ("The project is licensed under MIT", "The project is licensed with MIT"),
    ("The job runs on Fridays", "The job is hosted on Fridays"),
    ("The backup job runs at 2 am", "The backup job is hosted at 2 am"),
    ("Ben talks to Carla", "Ben talks about Carla"),
]

STILL_MERGED = [
    ("The user works at Acme", "The user works for Acme"),
    ("The user lives in Berlin", "The user lives at Berlin"),
    ("Production runs in eu-west-1", "Our production environment is hosted in the eu-west-1 region"),
    ("- Team uses Linear for tickets", "- Tickets are tracked in Linear by the team"),
]


@pytest.mark.parametrize(("old", "new"), NOT_MERGED)
def test_a_preposition_that_changes_the_relation_forbids_a_merge(old: str, new: str) -> None:
    check = same_meaning(new, old)
    assert not check.allowed
    assert "another relation" in check.reason
    assert _relation(new, old, None).kind != "update"  # another relation is no new value either


@pytest.mark.parametrize(("old", "new"), STILL_MERGED)
def test_prepositions_of_one_usage_or_other_arguments_still_merge(old: str, new: str) -> None:
    assert same_meaning(new, old).allowed


def test_the_family_fold_is_refused_only_before_a_time() -> None:
    def family(word: str) -> str | None:
        return "use" if word in ("runs", "hosted") else None

    assert relation_differs("The API is hosted on AWS", "The API runs on AWS", family) is None
    assert relation_differs("The job is hosted on Sundays", "The job runs on Sundays", family) is not None


UPDATES = [
    # a role told by its verb, held by someone else
    ("Tomás Ferreira leads the payments team", "Yara Nwosu now leads the payments team"),
    ("Tomás Ferreira leads the payments team", "Yara Nwosu heads the payments team now"),
    ("Priya manages the platform team", "Omar manages the platform team now"),
    # a name of several words is one value of a single-valued relation
    ("Joon-ho Park reports to Amaia Etxeberria", "Joon-ho Park reports to Kwabena Asante"),
    ("Lena Vogt reports to Marco Bellini", "Lena Vogt now reports to Chidi Okoro"),
    # hex colours are values
    ("The design system's primary colour is #1E6FD9", "The design system's primary colour is #0F9D58"),
    ("The brand accent is #ff8800", "The brand accent changed to #00aa55"),
    # a verb redone ("re-" + the old statement's verb)
    ("The SDK is licensed under MIT", "The SDK was relicensed under Apache-2.0"),
    ("The docs are hosted on Netlify", "The docs were re-hosted on Vercel"),
    ("The ticket is assigned to Mia", "The ticket was reassigned to Omar"),
    # a move in German, Spanish and French, and a move told again
    ("Ich wohne in Bremen", "Ich bin nach Leipzig umgezogen"),
    ("Vivo en Sevilla", "Me mudé a Valencia"),
    ("J'habite à Lyon", "J'ai déménagé à Nantes"),
    ("The user moved to Utrecht", "The user moved again, this time to Aarhus"),
]


@pytest.mark.parametrize(("old", "new"), UPDATES)
def test_updates_the_unseen_set_showed(old: str, new: str) -> None:
    assert _relation(new, old, None).kind == "update"
    assert not same_meaning(new, old).allowed


LOOK_ALIKES = [
    ("Tomás Ferreira leads the payments team", "Yara Nwosu leads the mobile team"),
    ("Tomás Ferreira leads the payments team", "Yara Nwosu also leads the payments team"),
    ("Ana reports to Bo", "Chen reports to Bo"),
    ("The user likes Taylor Swift", "The user likes Olivia Rodrigo"),
    ("Nadia is friends with Lena Braun", "Nadia is friends with Sofia Marsh"),
    ("The user visited Kyoto Station", "The user visited Osaka Castle"),
    ("The SDK is licensed under MIT", "The SDK reported a bug under load"),
    ("Maya moved to the web team", "Leo moved to the mobile team"),
    ("The user is allergic to shellfish", "The user is allergic to penicillin"),
    ("The user speaks Dutch", "The user speaks Greek"),
    ("Issue #123 is about login", "Issue #456 is about login"),
    ("Priya reports to Sandeep", "Priya's blog reports on local elections"),
    ("- 2026-03-04: Sam moved to Toronto", "- 2026-03-04: Moved the standup to the big conference room"),
]


@pytest.mark.parametrize(("old", "new"), LOOK_ALIKES)
def test_look_alikes_stay_untouched(old: str, new: str) -> None:
    assert _relation(new, old, None).kind == "compatible"
    assert not same_meaning(new, old).allowed


def test_a_hex_colour_is_one_value_and_an_issue_number_is_a_number() -> None:
    assert [t.key for t in terms("The accent is #0F9D58") if t.kind == "value"] == ["hex:0f9d58"]
    assert [t.key for t in terms("Issue #123 is fixed") if t.kind == "value"] == ["n123"]


MORE_UPDATES = [
    # a switch to a new version of the thing the old statement names
    ("The service runs on Node.js 20", "The service was upgraded to Node.js 22"),
    ("The API runs on Node.js 20", "Upgraded the API to Node.js 22"),
    # a count told as growth or shrinkage
    ("The team has 6 engineers", "The team grew to 8 engineers"),
    ("The platform team has 6 people", "The platform team has grown to 8 people"),
    ("Our Discord has 120 members", "Our Discord shrank to 90 members"),
    ("The team has six engineers", "The team has grown to eight"),
    # two rules with one rationale: the rules relate as such
    (
        "Deploy window is 10:00–16:00 UTC. **Why:** support is staffed then.",
        "Deploy window is 09:00–15:00 UTC. **Why:** support is staffed then.",
    ),
]


@pytest.mark.parametrize(("old", "new"), MORE_UPDATES)
def test_versions_counts_and_rules_with_a_rationale(old: str, new: str) -> None:
    assert _relation(new, old, None).kind == "update"


MORE_LOOK_ALIKES = [
    ("The team has 6 engineers", "The team grew to 8 offices"),
    ("The team has 6 engineers", "The budget grew to 8 million"),
    ("Always squash-merge PRs", "**Why:** a linear history makes bisecting easy"),
    ("Never deploy on Fridays. **Why:** nobody is around.", "**Why:** nobody is around."),
    (
        "Never deploy on Fridays. **Why:** nobody is around.",
        "Never deploy on Fridays. **Why:** the CI is slow.",
    ),
    ("Ask why: it matters", "The user asks why a lot"),
]


@pytest.mark.parametrize(("old", "new"), MORE_LOOK_ALIKES)
def test_rationales_and_other_counts_stay_untouched(old: str, new: str) -> None:
    assert _relation(new, old, None).kind == "compatible"
    assert not same_meaning(new, old).allowed


def test_a_name_of_several_words_for_another_is_at_least_a_possible_update() -> None:
    old, new = (
        "The user is contracted through Northwind Staffing",
        "The user is contracted through Bluefin Partners",
    )
    assert _relation(new, old, None).kind == "possible_update"
    for old, new in [
        ("The user met Anna Berg at the conference", "The user met Lars Holm at the conference"),
        ("The user follows Hannah Fry on Mastodon", "The user follows Adam Savage on Mastodon"),
    ]:
        assert _relation(new, old, None).kind == "compatible"


@pytest.mark.parametrize(
    ("new", "earlier", "again"),
    [
        ("Go back to addressing the user as Dr. Lindqvist", "Address the user as Dr. Lindqvist", True),
        ("Das Team-Meeting ist wieder am Montag", "Das Team-Meeting ist am Montag", True),
        ("The standup is back at 9:00", "The standup is at 9:00", True),
        ("Switched back to Vim", "Uses Emacs", False),
        ("The standup is back at 9:30", "The standup is at 9:00", False),
    ],
)
def test_a_return_is_read_without_its_words_of_return(new: str, earlier: str, again: bool) -> None:
    assert _says_again(new, earlier, None) is again
