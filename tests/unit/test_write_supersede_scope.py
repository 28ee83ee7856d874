"""A change cue supersedes only a statement about the same holder and attribute (issue 27, "never destroy what
a user gave us"): the false supersedes the agent set's writes revealed (bench/agent_recall.py --write-report),
their look-alikes, and the true updates the same rules must keep. Each compatible pair below was an update or
a possible update before domain/memory/holders.py."""

from __future__ import annotations

import pytest

from agent_memory.domain.memory.holders import holder, other_attribute
from agent_memory.domain.memory.relation import relate

UNRELATED_CHANGES = [
    # a shared entity, another attribute
    (
        "The Atlas service is the billing ledger; it is written in Python 3.12 with FastAPI.",
        "The Atlas API is at v3; v2 is deprecated and will be switched off on 30 June 2026.",
    ),
    (
        "The Atlas API listens on port 8443 in every environment; its admin metrics endpoint is on 9102.",
        "The Atlas API is at v3; v2 is deprecated and will be switched off on 30 June 2026.",
    ),
    (
        "Kestrel's staging environment is at https://staging.kestrel.dev.",
        "Kestrel moved to Postgres 16 last week.",
    ),
    ("Grafana is at grafana.ops.local.", "Grafana's admin login now requires SSO."),
    (
        "The search service times out after 30 seconds.",
        "The search service was moved to the eu-west-1 region.",
    ),
    ("Jonas is allergic to peanuts.", "Jonas moved to Rotterdam in March."),
    ("The billing API listens on port 8080.", "The billing API now uses PostgreSQL 16."),
    ("Redis maxmemory is set to 2 GB on the cache host.", "The cache host now runs Ubuntu 24.04."),
    # daily-log lines about different things
    (
        'Lena: Harbor\'s new palette is in Figma under "Harbor 2026"; use the teal, not the old blue.',
        "- 2026-05-29: Harbor's lockfile moved to pnpm 9.",
    ),
    (
        "- 2026-05-08: Tomas asked me to stop scheduling anything on Friday afternoons.",
        "- 2026-05-19: Dentist appointment moved to 12 June at 09:30.",
    ),
    (
        "- 2026-11-11: Call with Priya about the Q1 roadmap.",
        "- 2026-11-12: Priya's team moved their standup to Thursdays.",
    ),
    # rules of one project on different topics
    (
        "Coding convention: snake_case for JSON fields in the public API, camelCase only inside the web client.",
        "Coding convention: every new module needs type hints and must pass mypy --strict.",
    ),
    (
        "Frontend components live in src/components, one component per file.",
        "New components are now in TypeScript.",
    ),
    # a replacement of something the old statement never said
    ("The mail relay uses port 587.", "The mail relay moved from Postfix to Amazon SES."),
    # a polarity flip by chance ("after" names no change)
    (
        "Decision: Atlas talks to Beacon over SQS, not HTTP.",
        "Outgoing HTTP calls in Atlas time out after 3 seconds, with two retries.",
    ),
    # a switch of another thing
    ("I run 5 km on Tuesdays.", "I switched my gym to the one on Oak Street."),
    # two holders, neither named by the other statement, in one frame
    ("- Dock order: Finder, Firefox, Terminal, Slack", "- The Firefox profile moved to the work laptop"),
    ("The on-call rotation changes every Monday", "The bedsheets get changed every Monday"),
    # a thing a rule told as an order names, with nothing else in common
    (
        "Never commit directly to main; open a pull request.",
        "From now on, every pull request needs two approvals.",
    ),
]

KEPT_UPDATES = [
    ("Production runs in us-east-1", "Production moved to eu-west-1 in January"),
    ("Standup is at 9:30", "Standup moved to 10:15 starting this sprint"),
    ("Maria owns the billing service", "The billing service is now owned by Tomasz"),
    ("Sofia handles customer escalations", "Escalations go to Omar now; Sofia moved to onboarding"),
    ("My flight to Lisbon leaves at 07:40", "The Lisbon flight got moved to 11:05"),
    ("The frontend is built with webpack", "The frontend build moved to Vite"),
    ("Docs are hosted on GitHub Pages", "We migrated the docs site to Netlify"),
    ("- Preferred meeting tool: Zoom", "- Preferred meeting tool changed to Google Meet"),
    ("Region: us-east-1", "Region: us-west-2"),
    ("The team uses Jira for tickets", "Tickets are tracked in Linear now"),
    (
        "Always run `make lint` before committing",
        "Instead of `make lint`, run `make check` before committing",
    ),
]


@pytest.mark.parametrize(("old", "new"), UNRELATED_CHANGES)
def test_given_a_change_about_another_attribute_when_related_then_both_stay(old: str, new: str) -> None:
    # When a write with a change cue is related to an unrelated-but-close memory
    relation = relate(new, old)
    # Then the old memory is neither superseded nor linked
    assert relation.kind == "compatible", relation.reason


@pytest.mark.parametrize(("old", "new"), KEPT_UPDATES)
def test_given_a_change_of_the_same_attribute_when_related_then_it_is_still_an_update(
    old: str, new: str
) -> None:
    # When the change is about the old statement's holder and attribute
    relation = relate(new, old)
    # Then it still supersedes
    assert relation.kind == "update", relation.reason


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("- 2026-05-29: Harbor's lockfile moved to pnpm 9.", {"harb", "lockfil"}),
        ("The Atlas API listens on port 8443.", {"atla", "api"}),
        ("Standup is at 9:30", {"standup"}),
        ("Backups run nightly at 02:00 UTC", {"backup"}),
        ("I moved to Munich", None),
        ("Moved the home office to the basement", None),
        ("- 2026-05-13: Booked the flight to Lisbon", None),
    ],
)
def test_the_holder_is_the_noun_phrase_before_the_verb(text: str, expected: set[str] | None) -> None:
    # When a statement's holder is read
    found = holder(text)
    # Then it is the words before its first verb, or None without one
    assert (None if found is None else set(found)) == expected


def test_other_attribute_names_why_and_stays_silent_on_the_same_attribute() -> None:
    # Given a change about a part of a holder and a change of the holder's one attribute
    part = other_attribute(
        "Kestrel moved to Postgres 16.", "Kestrel's staging environment is at staging.kestrel.dev"
    )
    same = other_attribute("Production moved to eu-west-1", "Production runs in us-east-1")
    # Then the first is another holder, the second may be the same attribute
    assert part is not None and "another holder" in part
    assert same is None
