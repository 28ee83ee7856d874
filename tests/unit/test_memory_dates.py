"""Dates resolved against the day a memory was said (issue 34, domain/memory/dates.py): relative expressions
become absolute days, months and years, written as words into the keyword context at write time, and a question
naming a date lowers the relevance of memories dated elsewhere (focus.py)."""

from __future__ import annotations

from datetime import UTC, date, datetime

from agent_memory.domain.memory.dates import (
    asked_range,
    dated_context,
    dated_words,
    parse_reference,
    reference_date,
    spans_of,
)
from agent_memory.domain.memory.focus import focus_of
from agent_memory.domain.records import MemoryRecord, MemoryType

SAID = date(2023, 5, 8)  # a Monday
NOW = datetime(2025, 6, 1, tzinfo=UTC)


def record(content: str, metadata: dict[str, str] | None = None) -> MemoryRecord:
    return MemoryRecord(
        id="r", tenant="acme", namespace="/p", type=MemoryType.EPISODE, content=content, metadata=metadata or {},
        created_at=NOW, updated_at=NOW, last_access_at=NOW, valid_from=NOW, recorded_at=NOW,
    )  # fmt: skip


def test_conversation_dates_are_read_in_the_forms_writers_use():
    assert parse_reference("1:56 pm on 8 May, 2023") == SAID
    assert parse_reference("May 8, 2023") == SAID
    assert parse_reference("2023-05-08T10:00:00Z") == SAID
    assert parse_reference("next Tuesday") is None
    assert reference_date({"session_date": "8 May 2023"}, NOW) == SAID
    assert reference_date({"session_date": "sometime"}, NOW) == NOW.date()  # unreadable: valid_from
    assert reference_date({}, None) is None


def test_relative_expressions_resolve_against_the_day_said():
    assert spans_of("I went to a support group yesterday", SAID) == ((date(2023, 5, 7), date(2023, 5, 7)),)
    assert spans_of("I watched it last night!", SAID) == ((date(2023, 5, 7), date(2023, 5, 7)),)
    assert spans_of("printed it last Friday", SAID) == ((date(2023, 5, 5), date(2023, 5, 5)),)
    assert spans_of("won a tournament last week", SAID) == ((date(2023, 5, 1), date(2023, 5, 7)),)
    assert spans_of("we move next month", SAID) == ((date(2023, 6, 1), date(2023, 6, 30)),)
    assert spans_of("I first saw it 3 years ago", SAID) == ((date(2020, 1, 1), date(2020, 12, 31)),)
    assert spans_of("two weeks ago I quit", SAID) == ((date(2023, 4, 24), date(2023, 4, 30)),)
    assert spans_of("She brings so much joy!", SAID) == ()
    assert spans_of("I went there yesterday", None) == ()  # nothing to resolve against


def test_dates_named_outright_need_no_reference():
    assert spans_of("the gig is on 1 May, 2022", None) == ((date(2022, 5, 1), date(2022, 5, 1)),)
    assert spans_of("back in 2019 I moved", None) == ((date(2019, 1, 1), date(2019, 12, 31)),)


def test_resolved_dates_are_written_as_the_words_a_question_uses():
    # the year is left out of a day or a month: "…in 2023?" would favour every dated memory of the year
    assert dated_words("I went to a support group yesterday", SAID) == "7 May"
    assert dated_words("won a tournament last week", SAID) == "May"
    assert dated_words("I first saw it 3 years ago", SAID) == "2020"  # a year is named by its number
    assert dated_words("we met late last week", date(2023, 5, 1)) == "April"
    assert dated_words("She brings so much joy!", SAID) == ""
    context = dated_context(
        "the turn before", "Caroline: I went yesterday", {"session_date": "8 May, 2023"}, NOW
    )
    assert context == "7 May the turn before"
    assert dated_context("the turn before", "Caroline: nice!", {"session_date": "8 May, 2023"}, NOW) == (
        "the turn before"
    )


def test_a_question_names_a_range_of_days():
    assert asked_range("What movie did Joanna watch on 1 May, 2022?") == (date(2022, 5, 1), date(2022, 5, 1))
    assert asked_range("What did Joanna achieve in January 2022?") == (date(2022, 1, 1), date(2022, 1, 31))
    assert asked_range("When did Nate adopt Max?") is None


def test_a_question_naming_a_date_lowers_memories_dated_elsewhere():
    focus = focus_of(
        "What movie did Joanna watch on 1 May, 2022?", off_subject=1.0, untimed=1.0, off_date=0.5
    )
    said_may_2 = {"session_date": "11:54 am on 2 May, 2022"}
    assert focus.factor(record("Joanna: I watched the trilogy last night!", said_may_2)) == 1.0
    assert focus.factor(record("Joanna: I watched a film last month", said_may_2)) == 0.5  # April
    assert focus.factor(record("Joanna: what a film", {"session_date": "3 June, 2022"})) == 0.5
    assert focus.factor(record("Joanna: what a film", {"session_date": "1 May, 2022"})) == 1.0
    undated = focus_of("What movie did Joanna watch?", off_subject=1.0, untimed=1.0, off_date=0.5)
    assert undated.factor(record("Joanna: what a film", {"session_date": "3 June, 2022"})) == 1.0
