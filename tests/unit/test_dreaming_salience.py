"""What dreaming picks (issue 19): content salience, the content route, the salience gate, speaker prefixes,
MEMORY.md value under its cap, and `.dreams/` retention."""

from __future__ import annotations

import json

import pytest
from dreaming_world import NS, OPEN_GATES, TENANT, World

from agent_memory.domain.dreaming.config import DeepGates
from agent_memory.domain.dreaming.ledger import recent_runs
from agent_memory.domain.dreaming.salience import salience, speakers_of, split_speaker
from agent_memory.domain.memory.contradiction import assess, speaker
from agent_memory.domain.records import Status, Tier

SPEAKERS = frozenset({"Caroline", "Melanie", "Maria", "John"})


@pytest.fixture
def world(tmp_path, clock) -> World:
    return World.build(tmp_path, clock)


def by_text(report, text: str):
    return next(o for o in report.outcomes if o.candidate.text == text)


# ---------------------------------------------------------------- salience parts


def test_given_a_first_person_plan_with_names_and_a_date_then_salient_and_each_part_counted():
    value = salience("John: I signed up with the Minnesota Wolves last week and start in May!", SPEAKERS)

    assert value.parts["entities"] == 1.0  # Minnesota, Wolves — not John (the speaker), not "I"
    assert value.parts["numbers_dates"] == 1.0 and value.parts["first_person"] == 1.0
    assert value.parts["decision"] == 1.0 and not value.chatter
    assert value.value >= 0.7


def test_given_chit_chat_then_no_salience_however_many_names_it_holds():
    for text in (
        "Maria: Sure thing, John.",
        "Melanie: Wow, Caroline, that's awesome!",
        "Caroline: Thanks, Melanie! That's really sweet.",
        "[Melanie] Sounds great, Caroline!",
    ):
        value = salience(text, SPEAKERS)
        assert value.parts["entities"] == 0.0, text  # the speakers' names are not entities
        assert value.chatter and value.value < 0.12, text


def test_given_the_same_statement_with_or_without_a_speaker_prefix_then_the_same_salience():
    plain = salience("I adopted two cats from the shelter in June.")
    colon = salience("Caroline: I adopted two cats from the shelter in June.")
    bracket = salience("[Caroline] I adopted two cats from the shelter in June.")

    assert plain == colon == bracket
    assert split_speaker("[Caroline] I adopted two cats.") == ("Caroline", "I adopted two cats.")
    assert split_speaker("Release date: June 5") == (None, "Release date: June 5")  # not capitalised words
    assert speakers_of(["Maria Lopez: hi there", "[John] ok", "no prefix"]) == {
        "Maria Lopez",
        "Maria",
        "Lopez",
        "John",
    }


# ---------------------------------------------------------------- speaker prefixes in the write discipline


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("Caroline: Sure thing, Melanie.", "Caroline: Totally agree, Mel!"),
        ("Caroline: Cool, thanks Mel!", "Caroline: Thanks Melanie, it really mattered."),
        ("Melanie: Wow, Caroline, that's awesome!", "Melanie: Wow, Caroline, that's gorgeous!"),
        ("[Maria] Sounds great, John.", "[Maria] Glad you liked it, John."),
        ("[Maria] I agree, John.", "[John] I agree, Maria."),
    ],
)
def test_given_transcript_lines_then_the_speaker_is_never_read_as_a_subject_with_a_value(new, old):
    verdict = assess(new, old)

    assert verdict.kind == "none", verdict.reason
    assert not verdict.reason.startswith("value change")


def test_given_short_transcript_lines_then_the_speaker_is_recognised_but_field_values_are_not_speakers():
    assert speaker("Maria: Sure thing, John!") == ("maria", "Sure thing, John!")
    assert speaker("[Maria Lopez] ok") == ("maria lopez", "ok")
    assert speaker("Deadline: March 3") == (None, "Deadline: March 3")
    assert assess("Deadline: March 10", "Deadline: March 3").kind == "supersedes"


# ---------------------------------------------------------------- the content route and the salience gate


def test_given_a_salient_note_never_recalled_when_swept_then_promoted_through_the_content_route(world):
    note = "Caroline: I moved to Boston in March 2022 and joined the Harbor Rowing Club."
    world.note(note)
    world.note("Melanie: Wow, that's so cool, Caroline, your pictures look amazing!")

    report = world.dreaming().run(TENANT, NS)

    outcome = by_text(report, note)
    assert outcome.decision == "promoted" and outcome.route == "content", outcome.reason
    assert outcome.candidate.recall_count == 0 and "content route: salience" in outcome.reason
    chatter = by_text(report, "Melanie: Wow, that's so cool, Caroline, your pictures look amazing!")
    assert chatter.decision == "blocked" and "min_salience" in chatter.reason
    record = world.memory.get(TENANT, outcome.record_id)
    assert record.tier is Tier.LONG_TERM
    audit = json.loads(world.files.read_file(TENANT, NS, f".dreams/{report.day}/run.json"))
    entry = next(c for c in audit["candidates"] if c["text"] == note)
    assert entry["evidence"]["route"] == "content" and entry["evidence"]["salience"]["value"] >= 0.7


def test_given_the_content_route_turned_off_then_a_salient_note_needs_recalls(world):
    note = "Caroline: I moved to Boston in March 2022 and joined the Harbor Rowing Club."
    world.note(note)

    report = world.dreaming(gates=DeepGates(salient=None)).run(TENANT, NS)

    outcome = by_text(report, note)
    assert outcome.decision == "blocked" and outcome.route == "none"
    assert "recall_count 0 < min_recall_count 3" in outcome.reason


def test_given_chit_chat_recalled_by_many_queries_then_blocked_by_the_salience_gate(world):
    chatter = "Maria: Sure thing, John, see you later at home then!"
    world.short_term(chatter)
    world.recall_daily(["maria john", "john maria later", "see you later maria", "maria home tonight"])

    report = world.dreaming().run(TENANT, NS)

    outcome = by_text(report, chatter)
    assert outcome.candidate.recall_count >= 3 and outcome.candidate.unique_queries >= 3
    assert outcome.decision == "blocked" and [g.name for g in outcome.blocking_gates] == ["min_salience"]


def test_given_more_salient_notes_than_the_content_route_limit_then_the_most_salient_go_first(world):
    notes = [
        "I started volunteering at the Riverside Shelter on Monday with my sister Anna.",
        "We adopted two kittens from Oslo in May 2024 and named them Pixel and Byte.",
        "My brother Tom joined the Boston Marathon team in 2023 after his surgery.",
        "I visited Lisbon.",
    ]
    for note in notes:
        world.note(note)

    report = world.dreaming(max_salient_promotions=2, gates=DeepGates(salient=0.5)).run(TENANT, NS)

    promoted = [o.candidate.text for o in report.promoted]
    assert len(promoted) == 2 and "I visited Lisbon." not in promoted
    deferred = [o for o in report.outcomes if o.decision == "deferred"]
    assert deferred and all("max_salient_promotions=2" in o.reason for o in deferred)


# ---------------------------------------------------------------- MEMORY.md under its cap


def test_given_a_full_memory_md_when_a_less_valuable_entry_is_promoted_then_it_stays_a_record_only(
    tmp_path, clock
):
    world = World.build(tmp_path, clock, memory_md_cap=200)
    human = "Human note: the billing team owns the invoices service and reviews every change."
    world.files.add(TENANT, NS, "memory", human)
    valuable = "Acme Corp pays invoices on the 5th of each month via SEPA since March 2024."
    world.note(valuable)
    dreaming = world.dreaming(gates=OPEN_GATES)
    dreaming.run(TENANT, NS)
    assert world.memory_md() == [human, valuable]

    world.clock.advance(days=1)
    plain = "Credit notes always reference the original invoice number somehow."
    world.note(plain)
    report = dreaming.run(TENANT, NS)

    outcome = by_text(report, plain)
    assert outcome.decision == "promoted" and outcome.memory_md == "record_only"
    assert "its promoted entries are worth more" in outcome.reason
    assert world.memory_md() == [human, valuable]  # neither the valuable entry nor the human one moved
    record = world.memory.get(TENANT, outcome.record_id)
    assert record.tier is Tier.LONG_TERM and record.status is Status.ACTIVE


def test_given_memory_md_of_people_and_promoted_entries_when_displacing_then_people_entries_always_stay(
    tmp_path, clock
):
    world = World.build(tmp_path, clock, memory_md_cap=260)
    people = ["Written by Ana: never deploy on Fridays.", "Agent note: Bo owns the VAT table."]
    for entry in people:
        world.files.add(TENANT, NS, "memory", entry)
    dreaming = world.dreaming(gates=OPEN_GATES)
    for day, note in enumerate(
        [
            "Refunds take five business days.",
            "Acme Corp pays on the 5th via SEPA since March 2024.",
            "Globex signed a 3-year contract with Initech in Berlin on 2 May 2025.",
            "Our Oslo office opened in June 2025 with 40 engineers from Initech.",
        ]
    ):
        if day:
            world.clock.advance(days=1)
        world.note(note)
        dreaming.run(TENANT, NS)
        entries = world.memory_md()
        assert entries[:2] == people, entries  # never displaced, in place
    assert "Refunds take five business days." not in world.memory_md()  # the least valuable moved out
    assert len(world.memory_md()) == 4  # the two least valuable promoted entries made room


# ---------------------------------------------------------------- .dreams/ retention


def test_given_more_sweep_days_than_kept_then_older_days_are_compacted_to_a_summary(world):
    dreaming = world.dreaming(keep_full_runs=2)
    days = []
    for index in range(4):
        if index:
            world.clock.advance(days=1)
        world.note(f"I met Dana from Acme Corp on day {index + 1} to sign the 2025 contract.")
        days.append(dreaming.run(TENANT, NS).day)

    files = world.dream_files()
    for day in days[:2]:  # compacted: a summary and the marker; the rest of the day is deleted
        summary = json.loads(world.files.read_file(TENANT, NS, f".dreams/{day}/summary.json"))
        assert summary["day"] == day and summary["summary"]["candidates"] >= 1
        assert summary["runs"] == ["run.json"] and "light" in summary["timings"]["run.json"]
        assert {p for p in files if p.startswith(f".dreams/{day}/")} == {
            f".dreams/{day}/done.json",
            f".dreams/{day}/summary.json",
        }
    for day in days[2:]:  # kept in full
        run = json.loads(world.files.read_file(TENANT, NS, f".dreams/{day}/run.json"))
        assert run["candidates"] and f".dreams/{day}/summary.json" not in files
    # the run listing (GET /v1/admin/dream/runs): newest first, full days with candidates and gate values,
    # compacted days as their summary
    listed = recent_runs(world.files, TENANT, NS, limit=3)
    assert [run["day"] for run in listed] == days[::-1][:3]
    assert [run["compacted"] for run in listed] == [False, False, True]
    gates = listed[0]["candidates"][0]["gates"]
    assert all(set(gate) == {"value", "threshold", "passed"} for gate in gates.values()), gates
    assert listed[2]["candidates"] == [] and listed[2]["summary"]["candidates"] >= 1
    # the marker still makes a compacted day idempotent
    assert dreaming.run(TENANT, NS, day=__import__("datetime").date.fromisoformat(days[0])).status == (
        "already_done"
    )


def test_given_run_json_limit_then_the_rest_of_the_candidates_are_counted(world):
    for index in range(5):
        world.note(f"Fact number {index}: the Acme build server {index} runs Debian 12 in Frankfurt.")

    report = world.dreaming(run_json_candidates=2).run(TENANT, NS)

    audit = json.loads(world.files.read_file(TENANT, NS, f".dreams/{report.day}/run.json"))
    assert len(audit["candidates"]) == 2
    assert audit["candidates_omitted"]["count"] == len(report.outcomes) - 2
    assert sum(audit["candidates_omitted"]["decisions"].values()) == len(report.outcomes) - 2


def test_given_the_retention_setting_then_it_overrides_the_config(monkeypatch):
    from agent_memory.settings.dreaming import DreamingSettings

    monkeypatch.setenv("AGENT_MEMORY_DREAMING_CONFIG", '{"keep_full_runs": 30, "max_promotions": 4}')
    assert DreamingSettings().config.keep_full_runs == 30
    monkeypatch.setenv("AGENT_MEMORY_DREAMING_KEEP_FULL_RUNS", "3")
    settings = DreamingSettings()
    assert settings.config.keep_full_runs == 3 and settings.config.max_promotions == 4
    monkeypatch.setenv("AGENT_MEMORY_DREAMING_KEEP_FULL_RUNS", "0")
    with pytest.raises(ValueError, match="keep_full_runs"):
        DreamingSettings()


def test_given_a_transcript_line_when_extracted_then_every_sentence_keeps_its_speaker_and_trivia_is_judged_without_it():
    from agent_memory.domain.dreaming.extraction import DailyDocument, RuleBasedExtractor

    log = (
        "# 2026-11-30\n\n"
        "- 10:00 Jon: I lost my banking job in January. It was not easy. Opening a dance studio is my dream now!\n"
        "- 10:01 [Gina] Thanks, Jon! My own studio in Portland opened last May.\n"
        "- 10:02 Gina: Sure thing, Jon!\n"
    )

    result = RuleBasedExtractor().extract(DailyDocument("memory/2026-11-30.md", "2026-11-30", log))

    texts = [extract.text for extract in result.extracts]
    assert (
        "Jon: I lost my banking job in January. It was not easy." in texts
    )  # "It …" stays with its sentence
    assert "Jon: Opening a dance studio is my dream now!" in texts  # the speaker is kept on a later sentence
    assert "[Gina] My own studio in Portland opened last May." in texts  # in the line's own format
    # judged without the prefix: the names do not make an acknowledgement a statement
    assert not any("Sure thing" in text for text in texts)
    assert any("Sure thing" in skipped.text for skipped in result.skipped)
    assert all(extract.line_start == extract.line_end for extract in result.extracts)


# ---------------------------------------------------------------- fast cue patterns (ASCII)


@pytest.mark.parametrize(
    "body",
    [
        "I went to Paris LAST WEEK and loved it.",
        "WE DECIDED to sign up for the Monday class.",
        "Thanks! That's GREAT news.",
        "Sounds fun, you're doing great",
        "My kids LOVE it; we'll book Sundays.",
        "Nothing here but words",
        "Mondays are hard, two DAYS ago I quit.",
        "We TRIED it and I'm a fan of jazz",
        "OH my God",
        "item_2023 and x1",
        "I've been into pottery since forever",
        "Lastweek nope, nextmonth nope",
    ],
)
def test_the_fast_ascii_cues_answer_as_the_case_insensitive_patterns(body):
    from agent_memory.domain.dreaming import salience as module

    reference = (
        module._NUMBER_DATE_RE.search(body) is not None,
        module._FIRST_PERSON_RE.search(body) is not None,
        module._PREFERENCE_RE.search(body) is not None,
        module._DECISION_RE.search(body) is not None,
        module._CHATTER_OPEN_RE.match(body) is not None,
    )
    for variant in (body, body.upper(), body.lower(), body.swapcase()):
        assert variant.isascii()
        expected = (
            module._NUMBER_DATE_RE.search(variant) is not None,
            module._FIRST_PERSON_RE.search(variant) is not None,
            module._PREFERENCE_RE.search(variant) is not None,
            module._DECISION_RE.search(variant) is not None,
            module._CHATTER_OPEN_RE.match(variant) is not None,
        )
        assert module._cues(variant) == expected == reference


def test_a_non_ascii_statement_takes_the_case_insensitive_patterns():
    from agent_memory.domain.dreaming import salience as module

    # "ſ" (long s) folds to "s" under IGNORECASE only: the fast patterns would miss "ſunday" and "ſigned up".
    body = "We ſigned up for ſunday"
    assert module._cues(body) == (True, True, False, True, False)
    assert module._ASCII_DATE_WORDS_RE.search(body.lower()) is None
    assert module._ASCII_DECISION_RE.search(body.lower()) is None
