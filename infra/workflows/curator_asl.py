"""The skills curator's Step Functions state machine, as Amazon States Language data (no CDK, no AWS calls).

    Begin ──► ListTargets (one page) ──► CurateNamespaces (Distributed Map, MaxConcurrency N) ──► Tally
                  ▲                        per namespace, a child execution: Curate ──► ItemDone      │
                  │                                                  └──(any error)──► ItemFailed     │
                  └───────────── MorePages? (next_cursor) ◄───────────────────────────────────────────┘
                                     └──(none)──► Summarize ──► Done

Both tasks are `lambda:invoke` of the dreaming function (`handlers/dreaming.py` dispatches `curator_targets`
and `curate` to `handlers/curator.py`): it already mounts the memory files, which is all the curator needs.
Retries are the dreaming workflow's (Lambda transient errors with exponential backoff and FULL jitter,
`UpstreamUnavailable` more slowly). A namespace whose run fails ends its Map item as `failed` without failing
the others; its lease expires on its own and the next weekly run judges it again. `CuratorInProgress`
(another run holds the lease) is not retried. Each item ends with a one-key count, so the state after the
Map is never larger than the target list (the same payload discipline as the dreaming workflow); what each
run decided is in the namespace's `.curator/<day>/run.json` and `REPORT.md`. Pages and the Distributed Map
keep the parent's history per page, not per namespace (workflows/_asl.py `paged_sweep`).
"""

from __future__ import annotations

import json
from typing import Any

from agent_memory.settings.workflows import CURATOR

from ..config import DeploymentConfig
from ._asl import (
    LambdaTasks,
    RetryPolicy,
    check_limits,
    item_done,
    item_failed,
    paged_sweep,
)
from .spec import Schedules, WorkflowSpec


def build_definition(
    function: str,
    *,
    partition: str,
    max_concurrency: int = 4,
    retry: RetryPolicy | None = None,
    task_timeout_seconds: int = 900,
) -> dict[str, Any]:
    check_limits(task_timeout_seconds=task_timeout_seconds, max_concurrency=max_concurrency)
    tasks = LambdaTasks(partition, task_timeout_seconds, retry or RetryPolicy())

    def task(payload: dict[str, Any], selector: dict[str, str], **extra: Any) -> dict[str, Any]:
        return tasks.task(function, payload, selector, **extra)

    item_states: dict[str, Any] = {
        "Curate": task(
            {"task": "curate", "target.$": "$"},
            {"summary.$": "$.Payload.summary"},
            ResultPath="$.curated",
            Catch=[{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "ItemFailed"}],
            Next="ItemDone",
        ),
        "ItemDone": item_done(),
        "ItemFailed": item_failed(),
    }
    return {
        "Comment": "Agent memory skills curator: list namespaces with skills page by page, then curate each in "
        "a Distributed Map",
        "StartAt": "Begin",
        "States": paged_sweep(
            list_state=task(
                {"task": "curator_targets", "input.$": "$.input", "cursor.$": "$.cursor"},
                {
                    "targets.$": "$.Payload.targets",
                    "next_cursor.$": "$.Payload.next_cursor",
                    "day.$": "$.Payload.day",
                },
            ),
            map_state="CurateNamespaces",
            start_at="Curate",
            item_states=item_states,
            max_concurrency=max_concurrency,
            summary={"completed.$": "$.completed", "failed.$": "$.failed"},
            label="curator",
        ),
    }


def definition_json(function: str, **options: Any) -> str:
    return json.dumps(build_definition(function, **options), indent=2, sort_keys=True)


def _definition(arn: str, *, partition: str, config: DeploymentConfig, task_timeout_seconds: int) -> str:
    return definition_json(
        arn,
        partition=partition,
        max_concurrency=config.schedules.curator.max_concurrency,
        task_timeout_seconds=task_timeout_seconds,
    )


WORKFLOW = WorkflowSpec(
    runtime=CURATOR,
    construct_id="CuratorWorkflow",
    definition=_definition,
    distributed_map=True,
    schedules=Schedules(
        config=lambda config: config.schedules.curator,
        retry_attempts=3,
        max_event_age_hours=6,
        what="the curator schedules",
        role_description="EventBridge Scheduler: start the skills curator state machine",
        description=lambda tenant: f"Skills curator of tenant {tenant.id} ({tenant.time_zone})",
        input=lambda tenant: {"tenants": [tenant.id]},
    ),
)
"""The weekly skills curator per tenant, on the dreaming function (it mounts the memory files)."""
