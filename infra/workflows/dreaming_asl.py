"""The dreaming sweep's Step Functions state machine, as Amazon States Language data (no CDK, no AWS calls).

    Begin ──► ListTargets (one page) ──► SweepNamespaces (Distributed Map, MaxConcurrency N) ──► Tally ──┐
                  ▲                       per namespace, a child execution:                             │
                  │                       Light ──► Rem ──► Deep ──► ItemDone                          │
                  │                         └───────┴───────┴──(any error)──► RecordFailure ──► ItemFailed
                  └──────────────────── MorePages? (next_cursor) ◄──────────────────────────────────────┘
                                            └──(none)──► Summarize ──► Done

- Every task is a `lambda:invoke` of `handlers/dreaming.py` (one function with a `task` dispatcher, or one
  function per task: see `DreamingFunctions`). Lambda's throttling and transient errors are retried with
  exponential backoff and FULL jitter; `UpstreamUnavailable` (DynamoDB, S3 Vectors or Bedrock still throttled
  after the adapters' own retries) is retried more slowly.
- A namespace whose sweep fails is caught inside its item: `RecordFailure` writes `.dreams/<day>/failure.json`
  and releases the namespace's lease, and the item ends as `failed` without failing the other namespaces.
  `SweepInProgress` (another sweep holds the lease) is not retried.
- Scale: ListTargets answers one page of targets (at most `PAGE_TARGETS`, within the 256 KiB state limit)
  and where the next page starts; each page runs as a Distributed Map, whose items are child executions with their own
  histories, so the parent's history grows by a fixed number of events per page (about 14), not per
  namespace (an inline Map added about 19 per namespace and hit the 25,000-event limit near 1,315). The
  targets one execution may sweep are capped at `MAX_SWEEP_TARGETS` by the handler.
- The Map never accumulates what the sweeps produced: each item ends with a one-key count (`{"completed": 1}`
  or `{"failed": 1}`), the Map's ResultSelector keeps only those counts and `Tally` adds them to the running
  totals; `Summarize` turns them into the execution's output `{"day", "completed", "failed"}`. The sweeps'
  details are in each namespace's `.dreams/<day>/` files, the logs and the `Dream*` metrics.
- Every task's `Resource` is built for the partition the state machine runs in (`aws`, `aws-cn`,
  `aws-us-gov`): the CDK passes the stack's partition.

The CDK wraps it with `sfn.DefinitionBody.from_string(definition_json(...))`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agent_memory.settings.workflows import DREAMING

from ..config import DeploymentConfig
from ._asl import (
    LAMBDA_TRANSIENT_ERRORS,
    UPSTREAM_ERRORS,
    LambdaTasks,
    RetryPolicy,
    check_limits,
    item_done,
    item_failed,
    lambda_invoke_arn,
    paged_sweep,
)
from .spec import Schedules, WorkflowSpec

__all__ = [
    "LAMBDA_TRANSIENT_ERRORS",
    "UPSTREAM_ERRORS",
    "DreamingFunctions",
    "RetryPolicy",
    "build_definition",
    "definition_json",
    "lambda_invoke_arn",
]


@dataclass(frozen=True)
class DreamingFunctions:
    """Lambda function ARNs (or names) per task; the same ARN may serve several tasks (the handler module's
    `handler` dispatches on the payload's `task`)."""

    list_targets: str
    light: str
    rem: str
    deep: str
    record_failure: str

    @classmethod
    def single(cls, arn: str) -> DreamingFunctions:
        return cls(list_targets=arn, light=arn, rem=arn, deep=arn, record_failure=arn)


def build_definition(
    functions: DreamingFunctions,
    *,
    partition: str,
    max_concurrency: int = 4,
    retry: RetryPolicy | None = None,
    task_timeout_seconds: int = 900,
) -> dict[str, Any]:
    """The state machine definition as a dict (`json.dumps` it, or use `definition_json`). `partition` is the
    AWS partition of the Lambda integration's ARN; there is no default, so no caller gets `aws` by accident."""
    check_limits(task_timeout_seconds=task_timeout_seconds, max_concurrency=max_concurrency)
    task = LambdaTasks(partition, task_timeout_seconds, retry or RetryPolicy()).task

    catch_to_failure = [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "RecordFailure"}]
    item_states: dict[str, Any] = {
        "Light": task(
            functions.light,
            {"task": "light", "target.$": "$"},
            {"handle.$": "$.Payload.handle", "light.$": "$.Payload.light"},
            ResultPath="$.sweep",
            Catch=catch_to_failure,
            Next="Rem",
        ),
        "Rem": task(
            functions.rem,
            {"task": "rem", "handle.$": "$.sweep.handle"},
            {"rem.$": "$.Payload.rem"},
            ResultPath="$.rem",
            Catch=catch_to_failure,
            Next="Deep",
        ),
        "Deep": task(
            functions.deep,
            {"task": "deep", "handle.$": "$.sweep.handle"},
            {"summary.$": "$.Payload.summary"},
            ResultPath="$.deep",
            Catch=catch_to_failure,
            Next="ItemDone",
        ),
        # An item's output is one count, never the sweep's summary: the Map's result holds one per namespace.
        "ItemDone": item_done(),
        "RecordFailure": task(
            functions.record_failure,
            {"task": "record_failure", "target.$": "$"},
            {"failure.$": "$.Payload"},
            ResultPath="$.failure",
            # Recording the failure must not fail the sweep of the other namespaces either.
            Catch=[{"ErrorEquals": ["States.ALL"], "ResultPath": "$.failure_error", "Next": "ItemFailed"}],
            Next="ItemFailed",
        ),
        # Which error, and where: `.dreams/<day>/failure.json`, the log and the DreamFailures metric.
        "ItemFailed": item_failed(),
    }
    return {
        "Comment": "Agent memory dreaming sweep: list namespaces page by page, then Light -> REM -> Deep per "
        "namespace in a Distributed Map",
        "StartAt": "Begin",
        "States": paged_sweep(
            list_state=task(
                functions.list_targets,
                {
                    "task": "list_targets",
                    "input.$": "$.input",
                    "execution.$": "$$.Execution.Name",
                    "cursor.$": "$.cursor",
                    "day.$": "$.day",
                },
                {
                    "day.$": "$.Payload.day",
                    "targets.$": "$.Payload.targets",
                    "next_cursor.$": "$.Payload.next_cursor",
                },
            ),
            map_state="SweepNamespaces",
            start_at="Light",
            item_states=item_states,
            max_concurrency=max_concurrency,
            summary={"day.$": "$.day", "completed.$": "$.completed", "failed.$": "$.failed"},
            label="dreaming",
        ),
    }


def definition_json(functions: DreamingFunctions, **options: Any) -> str:
    return json.dumps(build_definition(functions, **options), indent=2, sort_keys=True)


def _definition(arn: str, *, partition: str, config: DeploymentConfig, task_timeout_seconds: int) -> str:
    return definition_json(
        DreamingFunctions.single(arn),
        # `${AWS::Partition}` unless the stack pins a region: the integration ARN follows the partition the
        # stack is deployed to (cdk.json allows aws-cn).
        partition=partition,
        max_concurrency=config.schedules.dreaming.max_concurrency,
        task_timeout_seconds=task_timeout_seconds,
    )


WORKFLOW = WorkflowSpec(
    runtime=DREAMING,
    construct_id="DreamingWorkflow",
    definition=_definition,
    distributed_map=True,
    schedules=Schedules(
        config=lambda config: config.schedules.dreaming,
        retry_attempts=3,
        max_event_age_hours=2,
        what="the dreaming schedules",
        role_description="EventBridge Scheduler: start the dreaming state machine",
        description=lambda tenant: f"Nightly dreaming sweep of tenant {tenant.id} ({tenant.time_zone})",
        # handlers/dreaming.py (list_targets): the tenants to sweep, and the time zone whose today is the
        # sweep day.
        input=lambda tenant: {"tenants": [tenant.id], "time_zone": tenant.time_zone},
    ),
    start_sid="StartDreaming",  # on-demand dreaming: the API function starts a sweep of one tenant
    started_on_demand=lambda config: config.schedules.dreaming.on_demand,
)
"""The nightly Light -> REM -> Deep sweep per tenant on the dreaming function (which
infra/constructs/dreaming_workflow.py builds inside this workflow)."""
