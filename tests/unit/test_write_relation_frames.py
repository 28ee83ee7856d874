"""The merge guard's fourth round (issue 27): a hand-written lexicon of relation frames ("works from" = "is
based in", "see the dentist" = "dentist appointment", "reports to Bo" = "Bo is … manager"), a one-letter typo
on a word the lexicon does not know ("hav" = "have"), the pronoun's case in the roles check ("I report to
Ana" is not "Ana reports to me"), and an update told in another wording of one relation ("cycles to work" →
"commutes by car now"). Each mechanism is tried against look-alikes written to break it."""

from __future__ import annotations

import pytest

from agent_memory.domain.memory import relation_frames, typos
from agent_memory.domain.memory.decide import decide
from agent_memory.domain.memory.paraphrase import same_meaning
from agent_memory.domain.memory.roles import same_participants
from agent_memory.domain.records import MemoryType
from tests.unit.guard_cases import E5, LEXICON, NOW
from tests.unit.guard_cases import stored as _stored


def _action(new: str, old: str) -> str:
    plan = decide(new, NOW, MemoryType.DOMAIN_KNOWLEDGE, [(_stored(old), 0.99)], E5, lexicon=LEXICON)
    return plan.action


ONE_RELATION = [
    ("Ravi is based in our Dublin office", "Ravi works from the Dublin office"),
    ("Ana works out of the Porto office", "Ana is based in the Porto office"),
    ("I reside in Porto", "I live in Porto"),
    ("Maria is employed by Acme", "Maria works at Acme"),
    ("I see the dentist on March 10 at 14:00", "The dentist appointment is on March 10 at 2 pm"),
    ("I'm seeing the physio on May 3", "The physio appointment is on May 3"),
    ("- Tickets are tracked in Linear by the team", "- Team uses Linear for tickets"),
    ("Backups are stored in S3", "The team uses S3 for backups"),
    ("The backend's implementation language is Go", "The backend is written in Go"),
    ("The CLI is implemented in Rust", "The CLI's programming language is Rust"),
    ("Jon: I commute by bike now", "jon: cycling to work these days"),
    ("Lena commutes on foot", "Lena walks to work"),
    ("Sam commutes by train", "Sam takes the train to work"),
    (
        "Each API key may make up to 100 requests a minute",
        "Rate limit is 100 requests per minute per API key",
    ),
    ("Maria owns the laptop", "The laptop belongs to Maria"),
    ("The standup is scheduled for 9 am", "The standup is at 9 am"),
    ("Ana has an allergy to peanuts", "Ana is allergic to peanuts"),
    ("The report's deadline is Friday", "The report is due on Friday"),
    ("The API's port is 8080", "The API listens on port 8080"),
    ("The app runs on AWS", "The app is hosted on AWS"),
    ("The Pro plan's price is $20 per month", "The Pro plan costs $20 a month"),
    ("My son's age is 7", "My son is 7 years old"),
    ("Ana can be reached at ana@x.com", "Ana's email is ana@x.com"),
    # the converse frame: who reports to whom, whichever side names it
    ("Bo is Ana's manager", "Ana reports to Bo"),
    ("Bo manages Ana", "Ana reports to Bo"),
    ("Ana is my manager", "I report to Ana"),
    ("I am Ana's manager", "Ana reports to me"),
]

KEPT_APART = [
    # another verb, not a form of the frame
    ("Ravi moved to Lisbon", "Ravi works from Lisbon"),
    ("Ravi visits our Dublin office", "Ravi works from the Dublin office"),
    ("Ravi manages the Dublin office", "Ravi is based in the Dublin office"),
    ("I call the dentist on March 10", "I see the dentist on March 10"),
    ("I cancelled the dentist appointment on Monday", "The dentist appointment is on Monday"),
    ("Tickets are exported to Linear", "The team uses Linear for tickets"),
    ("The backend is tested in Go", "The backend is written in Go"),
    ("The backend was rewritten in Go", "The backend is written in Go"),
    ("At least 100 requests a minute are served", "Rate limit is 100 requests per minute"),
    # two relations, or one relation with another argument or value
    ("Ravi lives in Dublin", "Ravi is based in Dublin"),
    ("I see the doctor on May 3", "The dentist appointment is on May 3"),
    ("Tickets are tracked in Jira", "The team uses Linear for tickets"),
    ("Jon drives to work", "Jon cycles to work"),
    ("Jon commutes by car", "Jon cycles to work"),
    ("Jon cycles to the gym", "Jon cycles to work"),
    ("Each key may make up to 200 requests a minute", "Rate limit is 100 requests per minute"),
    ("The report was submitted on Friday", "The report is due on Friday"),
    ("The app was migrated to AWS", "The app is hosted on AWS"),
    ("The Pro plan saves $20 a month", "The Pro plan costs $20 a month"),
    ("Ana is allergic to cats", "Ana is allergic to peanuts"),
    ("My birthday is on May 3", "My wedding is on May 3"),
    ("The app is deployed on Mondays", "The app runs on Mondays"),
    # the converse read backwards, or the roles swapped by a pronoun's case
    ("Ana reports to me", "I report to Ana"),
    ("Bo reports to Ana", "Ana reports to Bo"),
    ("Ana is my manager", "Ana reports to me"),
    ("Ana manages Bo", "Ana reports to Bo"),
    ("I help Ana every week", "Ana helps me every week"),
    # a typo that is another word, or a slip the lexicon knows as a word
    ("i hav 2 kids", "I had two children"),
    ("i hav 2 kids", "I have 2 cats"),
    ("I cant swim", "I can swim"),
]


@pytest.mark.parametrize("new,old", ONE_RELATION)
def test_one_relation_in_other_words_merges(new: str, old: str) -> None:
    assert same_meaning(new, old, LEXICON).allowed, same_meaning(new, old, LEXICON).reason
    assert _action(new, old) == "merge"


@pytest.mark.parametrize("new,old", KEPT_APART)
def test_look_alikes_stay_apart(new: str, old: str) -> None:
    assert not same_meaning(new, old, LEXICON).allowed
    assert _action(new, old) != "merge"


def test_the_frame_words_are_spent_only_on_a_relation_both_state_alike() -> None:
    new, old = relation_frames.shared(
        "Ravi is based in our Dublin office", "Ravi works from the Dublin office"
    )
    assert {"based", "works", "from"} <= new | old
    assert relation_frames.shared("Ravi lives in Dublin", "Ravi is based in Dublin") == (
        frozenset(),
        frozenset(),
    )
    # the same relation with another argument spends nothing
    assert relation_frames.shared("I see the doctor", "The dentist appointment") == (frozenset(), frozenset())
    assert relation_frames.shared("Jon drives to work", "Jon cycles to work") == (frozenset(), frozenset())
    # a time after "on" is no place: "is hosted on Fridays" states no hosting
    assert relation_frames.found("The job is hosted on Fridays") == ()


def test_who_reports_to_whom() -> None:
    assert relation_frames.roles("Ana reports to me") == (("ana", "<user>"),)  # (managed, manager)
    assert relation_frames.roles("Bo is Ana's manager") == (("ana", "bo"),)
    assert relation_frames.roles("The team reports to Bo") == ()  # "the team" is no participant
    assert relation_frames.converse("Bo manages Ana", "Ana reports to Bo") is True
    assert relation_frames.converse("Ana manages Bo", "Ana reports to Bo") is False
    assert relation_frames.converse("Ana likes Bo", "Ana reports to Bo") is None


def test_a_typo_is_one_letter_dropped_or_two_swapped() -> None:
    assert typos.slip_of("hav", "have")
    assert typos.slip_of("hvae", "have")
    assert not typos.slip_of("had", "has")  # one letter changed: another word
    assert not typos.slip_of("ha", "has")  # too short to tell
    assert not typos.slip_of("have", "hav")  # a letter added is no slip of the shorter word
    assert not typos.slip_of("h4v", "have")


def test_a_typo_the_lexicon_knows_as_a_word_is_no_typo() -> None:
    assert same_meaning("i hav 2 kids", "I have two children", LEXICON).allowed
    assert not same_meaning("I cant swim", "I can swim", LEXICON).allowed  # "cant" is a word


def test_the_pronoun_case_tells_the_part() -> None:
    assert not same_participants("Ana reports to me", "I report to Ana")
    assert same_participants("My sister Jana is a nurse", "Jana, my sister, works as a nurse")
    assert same_participants("I was hired by Ana", "Ana hired me")  # the voice is read by `same_roles`


UPDATES_IN_ANOTHER_WORDING = [
    ("I commute by car now", "I cycle to work"),
    ("The backend's implementation language is now Rust", "The backend is written in Go"),
]


@pytest.mark.parametrize("new,old", UPDATES_IN_ANOTHER_WORDING)
def test_an_update_in_another_wording_of_one_relation_supersedes(new: str, old: str) -> None:
    assert _action(new, old) == "supersede"


def test_one_wording_keeps_the_arguments_and_needs_a_shared_relation() -> None:
    rewritten = relation_frames.one_wording("I commute by car now", "I cycle to work")
    assert rewritten == ("i frame-commute car now", "i frame-commute bike")
    assert relation_frames.one_wording("I live in Porto", "I work at Acme") is None
