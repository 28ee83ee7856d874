"""The workflow tasks' payloads are parsed by pydantic models (handlers/payloads.py): a bad payload is refused
with ValidationFailed (the error name Step Functions sees, never retried) naming each wrong field, before any
service is built or called."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from agent_memory.domain.errors import ValidationFailed
from agent_memory.handlers import curator, dreaming, migration, purge  # at collection: X-Ray opens a socket
from agent_memory.handlers.payloads import (
    CurateEvent,
    LightEvent,
    PurgeStepEvent,
    RecordFailureEvent,
    RunPagesEvent,
    parse,
)

TARGET = {"tenant": "acme", "namespace": "/projects/billing", "day": "2026-03-01", "run_id": "sfn-x-1"}


def test_a_good_payload_is_typed_and_extra_fields_are_ignored() -> None:
    light = parse(LightEvent, {"task": "light", "target": {**TARGET, "extra": 1}}, "light")
    assert light.target.day == date(2026, 3, 1) and light.target.tenant == "acme"
    failure = parse(RecordFailureEvent, {"target": {**TARGET, "error": {"Error": "Boom", "Cause": "x"}}}, "f")
    assert (failure.target.error.error, failure.target.error.cause) == ("Boom", "x")
    assert (
        parse(CurateEvent, {"target": {"tenant": "acme", "namespace": "/a"}}, "curate").target.dry_run
        is False
    )


@pytest.mark.parametrize(
    ("model", "event", "expected"),
    [
        (LightEvent, {}, r"invalid light payload: target: Field required"),
        (LightEvent, {"target": {**TARGET, "day": "2026-13-01"}}, r"target\.day: invalid day '2026-13-01'"),
        (
            LightEvent,
            {"target": {**TARGET, "tenant": "../x", "run_id": ""}},
            r"target\.tenant: invalid tenant",
        ),
        (CurateEvent, {"target": {"tenant": "acme", "namespace": "../etc"}}, r"target\.namespace: invalid"),
        (PurgeStepEvent, {"tenant": "acme", "plan_id": "purge_1"}, r"plan_id: String should match"),
        (RunPagesEvent, {"tenant": "acme", "migration_id": "x"}, r"migration_id"),
        (RunPagesEvent, ["not", "an", "object"], r"a JSON object is needed, got list"),
    ],
)
def test_a_bad_payload_is_refused_naming_the_field(model: Any, event: Any, expected: str) -> None:
    with pytest.raises(ValidationFailed, match=expected) as raised:
        parse(model, event, {LightEvent: "light", CurateEvent: "curate"}.get(model, "task"))
    assert type(raised.value) is ValidationFailed


def test_every_wrong_field_is_named_at_once() -> None:
    with pytest.raises(ValidationFailed) as raised:
        parse(LightEvent, {"target": {"tenant": "../x", "namespace": "", "day": "x", "run_id": ""}}, "light")
    message = raised.value.message
    for field in ("target.tenant", "target.namespace", "target.day", "target.run_id"):
        assert field in message


def _never_built() -> Any:
    raise AssertionError("a bad payload must be refused before any service is built")


@pytest.mark.parametrize(
    ("call", "event"),
    [
        (lambda e: dreaming.TASKS[e["task"]](e), {"task": "light", "target": {**TARGET, "day": "yesterday"}}),
        (lambda e: dreaming.TASKS[e["task"]](e), {"task": "rem", "handle": "not an object"}),
        (lambda e: dreaming.TASKS[e["task"]](e), {"task": "curate", "target": {"tenant": "acme"}}),
        (purge.purge_step, {"tenant": "acme", "plan_id": "purge_zz"}),
        (lambda e: migration.run_pages(e, lambda: 10**9), {"tenant": "acme", "migration_id": 7}),
    ],
)
def test_the_tasks_refuse_a_bad_payload_before_building_anything(
    call: Any, event: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_memory.wiring import process

    for slot in (process.WORKER, process.BACKFILL):
        monkeypatch.setattr(slot, "_build", _never_built)
        slot.set(None)
    for module in (dreaming, curator, purge):
        module.configure(None)
    with pytest.raises(ValidationFailed, match="payload"):
        call(event)


def test_a_failure_with_an_unreadable_target_is_logged_and_reported_not_raised() -> None:
    answer = dreaming.record_failure_task(
        {"target": {"tenant": "acme", "error": {"Error": "States.Timeout"}}}
    )
    assert answer["recorded"] is False and answer["error"] == "States.Timeout"
    assert "target.namespace" in answer["reason"]


def test_list_targets_reads_its_day_and_time_zone_through_the_models() -> None:
    from agent_memory.handlers.payloads import ListTargetsEvent, SweepInput

    assert parse(SweepInput, {"day": "2026-03-01"}, "t").sweep_day() == date(2026, 3, 1)
    assert parse(SweepInput, {"time_zone": None}, "t").time_zone == "UTC"
    with pytest.raises(ValidationFailed, match=r"time_zone: unknown time zone 'Mars/Olympus'"):
        parse(SweepInput, {"time_zone": "Mars/Olympus"}, "list_targets")
    with pytest.raises(
        ValidationFailed, match=r"invalid list_targets payload: day: invalid day '03/01/2026'"
    ):
        dreaming.list_targets_task(
            {"input": {"tenants": ["acme"], "namespaces": ["/a"]}, "day": "03/01/2026"}
        )
    assert parse(ListTargetsEvent, {"day": None, "execution": "x"}, "t").day is None
