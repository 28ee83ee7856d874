"""The dreaming sweep end to end on the real local adapters: promotion into records and MEMORY.md, the gates,
the cap and displacement rule, dry runs, idempotency, the lease, the staged Step Functions path, Chinese
input, materialisation, forgetting and the audit files."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from dreaming_world import NS, OPEN_GATES, TENANT, World

from agent_memory.domain.dreaming.config import DeepGates, DreamingConfig
from agent_memory.domain.dreaming.ledger import SweepInProgress
from agent_memory.domain.dreaming.sweep import DreamingService
from agent_memory.domain.errors import ValidationFailed
from agent_memory.domain.memory.service import RememberInput
from agent_memory.domain.ports import RecordQuery
from agent_memory.domain.records import MemoryType, SourceKind, Status, Tier

INVOICES = "Invoices are generated on the first day of each month by the billing cron job"
QUERIES = [
    "when are invoices generated",
    "invoice generation schedule",
    "billing cron job day",
    "first day month invoices",
]


@pytest.fixture
def world(tmp_path, clock) -> World:
    return World.build(tmp_path, clock)


@pytest.fixture
def recalled(world) -> World:
    """A short-term record recalled by four different queries on four days."""
    world.short_term(INVOICES)
    world.recall_daily(QUERIES)
    return world


def run_json(world: World, day: str) -> dict:
    return json.loads(world.files.read_file(TENANT, NS, f".dreams/{day}/run.json"))


def by_text(report, text: str):
    return next(o for o in report.outcomes if o.candidate.text == text)


# ---------------------------------------------------------------- promotion


def test_given_recalled_record_passing_every_gate_when_swept_then_promoted_to_long_term_and_memory_md(
    recalled,
):
    report = recalled.dreaming().run(TENANT, NS)

    outcome = by_text(report, INVOICES)
    assert outcome.decision == "promoted", outcome.reason
    assert (
        outcome.total >= 0.8 and outcome.candidate.recall_count == 4 and outcome.candidate.unique_queries == 4
    )
    record = recalled.memory.get(TENANT, outcome.record_id)
    assert record.tier is Tier.LONG_TERM
    assert record.metadata["dreaming_promoted_on"] == report.day
    assert record.score >= 0.8
    assert recalled.memory_md() == [INVOICES]
    audit = run_json(recalled, report.day)
    entry = next(c for c in audit["candidates"] if c["text"] == INVOICES)
    assert set(entry["signals"]) == {
        "frequency",
        "relevance",
        "diversity",
        "recency",
        "consolidation",
        "conceptual",
    }
    assert {name: gate["passed"] for name, gate in entry["gates"].items()} == {
        "min_score": True,
        "min_recall_count": True,
        "min_unique_queries": True,
        "max_age_days": True,
        "min_salience": True,
    }
    assert entry["gates"]["min_unique_queries"] == {"value": 4.0, "threshold": 3.0, "passed": True}
    assert entry["evidence"]["route"] == "recall" and entry["evidence"]["salience"]["value"] >= 0.2
    assert entry["evidence"]["recall_count"] == 4 and entry["evidence"]["unique_queries"] == 4
    assert entry["decision"] == "promoted" and entry["total"] == pytest.approx(outcome.total, abs=1e-4)
    assert audit["inputs"]["recalls"] == 4 and audit["config"]["gates"]["min_score"] == 0.8
    report_md = recalled.files.read_file(TENANT, NS, f".dreams/{report.day}/REPORT.md")
    assert "## Promoted (1)" in report_md and INVOICES in report_md


def test_given_each_gate_raised_alone_when_swept_then_that_gate_alone_blocks_and_nothing_is_written(recalled):
    probe = by_text(recalled.dreaming().run(TENANT, NS, dry_run=True), INVOICES)
    assert probe.decision == "promoted"
    base = DeepGates(min_score=0.5, min_recall_count=3, min_unique_queries=3, max_age_days=30)
    variants = {
        "min_score": {"min_score": round(probe.total + 0.01, 3)},
        "min_recall_count": {"min_recall_count": probe.candidate.recall_count + 1},
        "min_unique_queries": {"min_unique_queries": probe.candidate.unique_queries + 1},
        "max_age_days": {"max_age_days": round(probe.age_days - 0.5, 2)},
    }
    for gate, change in variants.items():
        gates = base.model_copy(update=change)
        report = recalled.dreaming(gates=gates).run(TENANT, NS, force=True)
        outcome = by_text(report, INVOICES)
        assert outcome.decision == "blocked", gate
        assert [g.name for g in outcome.gates if not g.passed] == [gate]
        assert gate in outcome.reason
        assert recalled.memory_md() == []
        (record,) = recalled.store.list(TENANT, RecordQuery(namespaces=(NS,))).items
        assert record.tier is Tier.SHORT_TERM


def test_given_a_dry_run_then_same_decisions_as_the_real_run_and_nothing_written(recalled):
    recalled.note("We decided to use PostgreSQL 16 for the billing ledger. It supports JSONB columns.")
    recalled.note("ok thanks")
    records_before = recalled.store.list(TENANT, RecordQuery(namespaces=(NS,))).items

    dry = recalled.dreaming().run(TENANT, NS, dry_run=True)

    assert recalled.dream_files() == [] and recalled.memory_md() == []
    assert recalled.store.list(TENANT, RecordQuery(namespaces=(NS,))).items == records_before
    real = recalled.dreaming().run(TENANT, NS)
    assert dry.decisions() == real.decisions()
    # The decision note is promoted without recalls on the content route (a decision, a name, a number).
    assert dry.summary["decisions"] == real.summary["decisions"] == {"promoted": 2}
    note = next(o for o in real.outcomes if o.candidate.text.startswith("We decided"))
    assert note.route == "content" and note.candidate.recall_count == 0
    assert f".dreams/{real.day}/run.json" in recalled.dream_files()


def test_given_a_completed_day_when_swept_again_then_nothing_is_promoted_twice(recalled):
    first = recalled.dreaming().run(TENANT, NS)
    record = recalled.memory.get(TENANT, first.promoted[0].record_id)

    again = recalled.dreaming().run(TENANT, NS)
    forced = recalled.dreaming().run(TENANT, NS, force=True)
    recalled.clock.advance(days=1)
    next_day = recalled.dreaming().run(TENANT, NS)

    assert again.status == "already_done" and again.run_id == first.run_id and again.outcomes == []
    assert again.summary["promoted"] == first.summary["promoted"]
    for report in (forced, next_day):
        assert report.status == "completed"
        assert by_text(report, INVOICES).decision == "already_promoted"
        assert report.promoted == []
    assert recalled.memory_md() == [INVOICES]
    assert recalled.memory.get(TENANT, record.id).version == record.version
    first_audit = run_json(recalled, first.day)  # the forced re-run wrote beside it, not over it
    assert first_audit["run_id"] == first.run_id and first_audit["summary"]["decisions"] == {"promoted": 1}
    assert f".dreams/{first.day}/run-{forced.run_id}.json" in recalled.dream_files()


# ---------------------------------------------------------------- MEMORY.md cap and displacement


def test_given_a_full_memory_md_when_promoting_then_the_weakest_promoted_entry_moves_out_into_records(
    tmp_path, clock
):
    world = World.build(tmp_path, clock, memory_md_cap=200)
    human = "Human note: the billing team owns the invoices service and reviews every change."  # 81 chars
    world.files.add(TENANT, NS, "memory", human)
    world.note("Refunds are processed within five business days of approval.")  # 62 chars
    dreaming = world.dreaming(gates=OPEN_GATES)
    day_one = dreaming.run(TENANT, NS)
    assert world.memory_md() == [human, "Refunds are processed within five business days of approval."]
    refunds_record = day_one.promoted[0].record_id

    world.clock.advance(days=1)
    credit = "Credit notes for Acme Corp reference the original invoice number since March 2024."  # no room
    world.note(credit)
    day_two = dreaming.run(TENANT, NS)

    outcome = by_text(day_two, credit)
    assert outcome.decision == "promoted" and outcome.memory_md == "added"
    assert "moved 1 weaker promoted entry out of MEMORY.md" in outcome.reason
    assert world.memory_md() == [human, credit]
    moved = world.memory.get(TENANT, refunds_record)  # nothing is lost: the text lives on as a record
    assert moved.status is Status.ACTIVE and moved.tier is Tier.LONG_TERM
    ledger = json.loads(world.files.read_file(TENANT, NS, ".dreams/promoted.json"))["entries"]
    assert ledger[day_one.promoted[0].candidate.key]["state"] == "evicted"


def test_given_two_promoted_entries_when_one_must_go_then_the_weaker_record_is_displaced(tmp_path, clock):
    world = World.build(tmp_path, clock, memory_md_cap=130)  # two of the three entries fit
    first, second = (
        "Payments settle through Stripe Connect accounts.",
        "Disputes escalate to the finance lead.",
    )
    world.note(first)
    world.note(second)
    dreaming = world.dreaming(gates=OPEN_GATES)
    report = dreaming.run(TENANT, NS)
    assert sorted(world.memory_md()) == sorted([first, second])
    weak = by_text(report, second).record_id
    world.memory.update(TENANT, weak, actor="test", score=0.1)

    world.clock.advance(days=1)
    third = "Chargebacks over 500 EUR require a written justification from sales."
    world.note(third)
    dreaming.run(TENANT, NS)

    assert world.memory_md() == [first, third]


def test_given_memory_md_full_of_human_entries_when_promoting_then_deferred_and_nothing_displaced(
    tmp_path, clock
):
    world = World.build(tmp_path, clock, memory_md_cap=150)
    people = [
        "Written by Ana: never deploy billing on Fridays.",
        "Written by Bo: the VAT rate table lives in Sheets.",
    ]
    for entry in people:
        world.files.add(TENANT, NS, "memory", entry)
    world.note("Subscription renewals are charged at midnight UTC on the renewal date.")

    report = world.dreaming(gates=OPEN_GATES).run(TENANT, NS)

    outcome = by_text(report, "Subscription renewals are charged at midnight UTC on the renewal date.")
    assert outcome.decision == "deferred"
    assert (
        "MEMORY.md is full" in outcome.reason
        and "2 entries written by people or agents are never displaced" in outcome.reason
    )
    assert world.memory_md() == people
    (record,) = [
        r for r in world.store.list(TENANT, RecordQuery(namespaces=(NS,))).items if "renewals" in r.content
    ]
    assert record.tier is Tier.SHORT_TERM  # deferred, not half-promoted: it is retried next sweep


def test_given_an_entry_people_wrote_when_the_same_fact_is_promoted_then_it_stays_theirs(tmp_path, clock):
    world = World.build(tmp_path, clock, memory_md_cap=120)
    fact = "Refunds are processed within five business days of approval."
    longer = fact + " Ask Ana for exceptions."  # contains the promoted text: must survive exact removal
    world.files.add(TENANT, NS, "memory", fact)
    world.note(fact)
    dreaming = world.dreaming(gates=OPEN_GATES)
    first = dreaming.run(TENANT, NS)
    assert by_text(first, fact).memory_md == "present"
    world.files.remove(TENANT, NS, "memory", fact, exact=True)
    world.files.add(TENANT, NS, "memory", longer)

    world.clock.advance(days=1)
    world.note("Credit notes always reference the original invoice number.")
    second = dreaming.run(TENANT, NS)

    outcome = by_text(second, "Credit notes always reference the original invoice number.")
    assert outcome.decision == "deferred" and "never displaced" in outcome.reason
    assert world.memory_md() == [longer]


# ---------------------------------------------------------------- extraction, Chinese, materialisation


def test_given_chinese_daily_log_when_swept_then_statements_extracted_trivia_skipped_and_promoted(world):
    world.note("我们决定把账单服务迁移到新的数据库集群。好的")
    world.note("今天下午三点开会。")
    world.note("用户更喜欢简洁的中文回答。")

    report = world.dreaming(gates=OPEN_GATES).run(TENANT, NS)

    kinds = {o.candidate.text: o.candidate.kind for o in report.outcomes}
    assert kinds == {
        "我们决定把账单服务迁移到新的数据库集群。": "decision",
        "用户更喜欢简洁的中文回答。": "preference",
    }
    assert sorted(world.memory_md()) == sorted(kinds)
    skipped = {item["text"]: item["reason"] for item in run_json(world, report.day)["skipped_sentences"]}
    assert skipped["好的"] == "an acknowledgement"
    assert skipped["今天下午三点开会。"] == "a temporary note"
    assert "用户更喜欢简洁的中文回答。" in world.files.read_file(
        TENANT, NS, f".dreams/{report.day}/REPORT.md"
    )


def test_given_daily_notes_when_swept_twice_then_materialised_once_with_file_provenance(world):
    path = world.note("The ledger export runs every night at 02:00 UTC into the finance bucket.")
    # recall gates only (no content route): a fresh note is not promoted, only staged as a candidate
    dreaming = world.dreaming(gates=DeepGates(salient=None))

    first = dreaming.run(TENANT, NS)
    (record,) = world.store.list(TENANT, RecordQuery(namespaces=(NS,))).items
    world.clock.advance(days=1)
    second = dreaming.run(TENANT, NS)

    assert [m["decision"] for m in first.materialized] == ["added"]
    assert record.tier is Tier.SHORT_TERM and record.source.kind is SourceKind.FILE
    assert record.source.ref == f"{path}#L3-L3"
    assert second.materialized == []
    (after,) = world.store.list(TENANT, RecordQuery(namespaces=(NS,))).items
    assert after.version == record.version and after.score == record.score
    outcome = second.outcomes[0]
    assert outcome.candidate.record_ids == [record.id]
    assert len(outcome.candidate.mention_ids) == 1  # the line and its record are one mention


def test_given_near_duplicate_notes_when_swept_then_one_candidate_with_both_provenances(world):
    world.note(INVOICES)
    world.note(INVOICES.upper() + "!")

    report = world.dreaming().run(TENANT, NS, dry_run=True)

    (outcome,) = report.outcomes
    assert len(outcome.candidate.refs) == 2 and report.inputs["dedup"]["merged_pairs"] == 1


def test_given_llm_extractor_without_a_model_then_a_clear_configuration_error(world):
    with pytest.raises(ValidationFailed, match="AGENT_MEMORY_DREAMING_MODEL_ID"):
        world.dreaming(extractor="llm")


def test_given_llm_extractor_with_a_model_when_swept_then_its_statements_are_candidates(world):
    world.note("Met with finance. They want EUR invoices rounded to cents, and we agreed on net-30 terms.")

    class ScriptedModel:
        def __init__(self) -> None:
            self.prompts: list[str] = []

        def complete(self, *, system: str, prompt: str, max_tokens: int = 2000) -> str:
            self.prompts.append(prompt)
            if "preferences" in prompt:
                return json.dumps(
                    {"memories": [{"text": "Finance wants EUR invoices rounded to cents.", "lines": [3, 3]}]}
                )
            return '{"memories": []}'

    model = ScriptedModel()
    service = DreamingService(
        world.memory, world.store, world.files, world.clock, DreamingConfig(extractor="llm"), text_model=model
    )
    report = service.run(TENANT, NS, dry_run=True)

    assert len(model.prompts) == 4 and all("3: - " in prompt for prompt in model.prompts)
    (outcome,) = report.outcomes
    assert outcome.candidate.type is MemoryType.USER_PREFERENCE
    assert outcome.candidate.refs[0].endswith("#L3-L3")


# ---------------------------------------------------------------- lease, staged run, failure


def test_given_a_sweep_holding_the_lease_when_another_starts_then_refused_until_the_lease_expires(recalled):
    dreaming = recalled.dreaming()
    held = dreaming.begin(TENANT, NS, run_id="sfn-run-1")

    with pytest.raises(SweepInProgress, match="sfn-run-1"):
        dreaming.run(TENANT, NS)
    assert dreaming.begin(TENANT, NS, run_id="sfn-run-1").run_id == held.run_id  # a retried task re-enters
    recalled.clock.advance(seconds=dreaming.config.lock_ttl_seconds + 1)
    assert dreaming.run(TENANT, NS).status == "completed"


def test_given_the_staged_tasks_when_run_in_order_then_same_decisions_as_one_shot_and_lease_released(
    recalled,
):
    recalled.note("We decided to keep invoices in EUR only. 好的")
    recalled.note("用户更喜欢简洁的中文回答。")
    dreaming = recalled.dreaming(intermediate_part_size=100)
    dry = dreaming.run(TENANT, NS, dry_run=True)
    expected = dry.decisions()

    handle = dreaming.begin(TENANT, NS, run_id="sfn-abc")
    light = dreaming.light_stage(handle)
    rem = dreaming.rem_stage(handle)
    report = dreaming.deep_stage(handle)

    assert light["candidates"] == 3 and rem["themes"] >= 1
    assert report.decisions() == expected
    signals = [(o.candidate.key, o.signals, o.total) for o in report.outcomes]
    assert signals == [
        (o.candidate.key, o.signals, o.total) for o in dry.outcomes
    ]  # nothing lost in the files
    files = recalled.dream_files()
    for name in ("light.json", "light-0000.json", "rem.json", "run.json", "REPORT.md", "done.json"):
        assert f".dreams/{report.day}/{name}" in files
    lease = json.loads(recalled.files.read_file(TENANT, NS, ".dreams/lock.json"))
    assert lease["owner"] is None and lease["last_run"] == "sfn-abc"
    assert dreaming.begin(TENANT, NS, run_id="sfn-later").skip  # the day is done
    retried = dreaming.deep_stage(handle)  # Step Functions retried a Deep that had finished
    assert retried.status == "already_done" and retried.summary == report.summary
    assert run_json(recalled, report.day)["summary"]["decisions"] == report.summary["decisions"]


def test_given_a_failed_namespace_when_recorded_then_failure_file_written_and_lease_released(recalled):
    dreaming = recalled.dreaming()
    handle = dreaming.begin(TENANT, NS, run_id="sfn-x")

    dreaming.record_failure(handle, "UpstreamUnavailable", "Bedrock throttled")

    failure = json.loads(recalled.files.read_file(TENANT, NS, f".dreams/{handle.day}/failure.json"))
    assert failure["error"] == "UpstreamUnavailable" and failure["run_id"] == "sfn-x"
    assert dreaming.run(TENANT, NS).status == "completed"  # the lease is free again


def test_given_a_stage_out_of_order_then_a_clear_error(recalled):
    dreaming = recalled.dreaming()
    handle = dreaming.begin(TENANT, NS, run_id="sfn-y")
    with pytest.raises(ValidationFailed, match="run the Light task first"):
        dreaming.rem_stage(handle)


# ---------------------------------------------------------------- maintenance and namespaces


def test_given_a_decayed_record_and_the_compaction_day_when_swept_then_forgotten_and_duplicates_folded(
    tmp_path, clock
):
    # Write-time merging off, as if the two copies had been written by racing writers.
    world = World.build(tmp_path, clock, near_duplicate_similarity=1.0)
    stale = world.memory.remember(
        TENANT,
        RememberInput(content="Old sandbox URL is sandbox-7.example.com", namespace=NS, score=0.05),
        actor="t",
    ).record
    world.clock.advance(days=40)
    twin = "The finance dashboard refreshes every fifteen minutes from the warehouse"
    a = world.memory.remember(TENANT, RememberInput(content=twin, namespace=NS), actor="t").record
    b = world.memory.remember(TENANT, RememberInput(content=twin + ".", namespace=NS), actor="t").record
    assert a.id != b.id

    weekday = world.clock.now().date().weekday()
    report = world.dreaming(compaction_weekday=weekday, compaction_similarity=0.9).run(TENANT, NS)

    assert report.maintenance["forgetting"]["archived"] == [stale.id]
    (cluster,) = report.maintenance["compaction"]["clusters"]
    assert {cluster["summary_id"], *cluster["archived"]} == {a.id, b.id}
    folded = world.memory.get(TENANT, cluster["archived"][0])
    assert folded.status is Status.ARCHIVED and folded.metadata["compacted_into"] == cluster["summary_id"]


def test_given_namespaces_from_files_records_and_config_when_listed_then_union(world):
    world.short_term("Staging uses the eu-west-1 region", namespace="/projects/infra")
    service = DreamingService(
        world.memory,
        world.store,
        world.files,
        world.clock,
        namespace_lister=lambda tenant: ["/projects/billing"],
    )
    assert service.namespaces(TENANT, ["/users/u-42", "not a namespace"]) == [
        "/projects/billing",
        "/projects/infra",
        "/users/u-42",
    ]


def test_given_a_future_day_then_refused(world):
    with pytest.raises(ValidationFailed, match="future"):
        world.dreaming().run(TENANT, NS, day=world.clock.now().date() + timedelta(days=3))
