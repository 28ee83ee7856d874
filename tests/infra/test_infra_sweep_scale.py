"""The nightly sweeps at scale (issue 30, defect 3): from the synthesized ASL, the history events the parent
execution of the dreaming and curator state machines records per page and per namespace, against Step
Functions' 25,000-event limit at the targets cap.

Events per state are Step Functions' documented history events of a STANDARD execution: a Pass or Choice
state enters and exits (2); a Lambda task enters, is scheduled, starts, succeeds and exits (5), and every
retry adds a schedule, a start and a failure (3); an inline Map adds its start and end (2 + 2) and, per item,
an iteration start and end (2) plus every event of the item's states; a Distributed Map adds its entry, map
run start, map run end and exit (4) and nothing per item: each item is a child execution with a history of
its own. Retries are counted at their maximum (the worst night)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from infra_support import Synthesized, render

from agent_memory.handlers.paging import MAX_SWEEP_TARGETS, PAGE_TARGETS

HISTORY_LIMIT = 25_000
"""Step Functions: events in one execution's history (a hard quota)."""


def _definition(synthesized: Synthesized, fragment: str) -> dict[str, Any]:
    logical = synthesized.logical_id("AWS::StepFunctions::StateMachine", fragment)
    return json.loads(str(render(synthesized.resources[logical]["Properties"]["DefinitionString"])))


def _state_events(state: dict[str, Any], *, worst_retries: bool) -> int:
    kind = state["Type"]
    if kind == "Task":
        retries = sum(r["MaxAttempts"] for r in state.get("Retry", [])) if worst_retries else 0
        return 5 + 3 * retries
    if kind == "Map":
        # entered, started (inline) or map run started (distributed), succeeded, exited; items: item_events
        return 4
    return 2


def item_events(map_state: dict[str, Any], *, worst_retries: bool = True) -> int:
    """Parent history events one item of `map_state` adds: 0 for a Distributed Map (a child execution),
    else the iteration's start and end and its states' events along the longest success path."""
    processor = map_state["ItemProcessor"]
    if processor["ProcessorConfig"]["Mode"] == "DISTRIBUTED":
        return 0
    return 2 + _path_events(processor["States"], processor["StartAt"], worst_retries)


def _path_events(states: dict[str, Any], start: str, worst_retries: bool) -> int:
    total, name, seen = 0, start, set()
    while name is not None and name not in seen:
        seen.add(name)
        state = states[name]
        total += _state_events(state, worst_retries=worst_retries)
        name = None if state.get("End") or state["Type"] in ("Succeed", "Fail") else state.get("Next")
    return total


def parent_events(definition: dict[str, Any], targets: int) -> int:
    """Every event of the parent execution sweeping `targets` namespaces: execution start and end, the
    states before the loop, and per page (`PAGE_TARGETS`) the loop's states plus its Map's per-item events."""
    states = definition["States"]
    pages = max(1, -(-targets // PAGE_TARGETS))
    loop = ("ListTargets", next(n for n, s in states.items() if s["Type"] == "Map"), "Tally", "MorePages")
    once = [n for n in states if n not in loop]
    per_page = sum(_state_events(states[n], worst_retries=True) for n in loop)
    map_state = states[loop[1]]
    per_item = item_events(map_state)
    return (
        2
        + sum(_state_events(states[n], worst_retries=True) for n in once)
        + pages * per_page
        + (targets * per_item)
    )


@pytest.mark.parametrize("workflow", ["DreamingWorkflow", "CuratorWorkflow"])
def test_a_namespace_adds_no_event_to_the_parent_history(synthesized: Synthesized, workflow: str) -> None:
    definition = _definition(synthesized, workflow)
    maps = [s for s in definition["States"].values() if s["Type"] == "Map"]
    assert len(maps) == 1
    assert maps[0]["ItemProcessor"]["ProcessorConfig"] == {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}
    assert item_events(maps[0]) == 0


@pytest.mark.parametrize("workflow", ["DreamingWorkflow", "CuratorWorkflow"])
def test_the_parent_history_at_the_targets_cap_stays_under_the_limit(
    synthesized: Synthesized, workflow: str
) -> None:
    definition = _definition(synthesized, workflow)
    at_cap = parent_events(definition, MAX_SWEEP_TARGETS)
    assert at_cap < HISTORY_LIMIT, at_cap
    # 10,000 namespaces (the tenant): 10 pages
    assert parent_events(definition, 10_000) < 1_000


def test_the_inline_map_the_sweep_replaced_would_stop_near_1315_namespaces(synthesized: Synthesized) -> None:
    # The same calculation on the dreaming item states run inline (the previous design) gives the issue's
    # figure, which is what makes the figures above trustworthy: ~19 events per namespace without retries.
    definition = _definition(synthesized, "DreamingWorkflow")
    distributed = definition["States"]["SweepNamespaces"]
    inline = {
        **distributed,
        "ItemProcessor": {**distributed["ItemProcessor"], "ProcessorConfig": {"Mode": "INLINE"}},
    }
    per_item = item_events(inline, worst_retries=False)
    assert per_item == 19
    assert HISTORY_LIMIT // per_item == 1_315


def test_each_child_execution_history_is_small(synthesized: Synthesized) -> None:
    # A child execution runs one namespace's item states, retries at their maximum, failure path included.
    definition = _definition(synthesized, "DreamingWorkflow")
    states = definition["States"]["SweepNamespaces"]["ItemProcessor"]["States"]
    worst = 2 + sum(_state_events(s, worst_retries=True) for s in states.values())
    assert worst < 500


def test_a_page_fits_the_state_payload_limit_and_the_cap_the_handler_enforces() -> None:
    from agent_memory.handlers.dreaming import TARGETS_MAX_BYTES
    from agent_memory.settings.dreaming import DreamingSettings

    assert DreamingSettings().max_targets == MAX_SWEEP_TARGETS
    # ~150 bytes per realistic target: a page stays within the bytes the handler lets through
    assert PAGE_TARGETS * 150 < TARGETS_MAX_BYTES < 256 * 1024
