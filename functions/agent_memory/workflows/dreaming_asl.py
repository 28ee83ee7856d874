"""The dreaming sweep's Step Functions state machine, as Amazon States Language data (no CDK, no AWS calls).

    ListTargets ──► SweepNamespaces (Map, MaxConcurrency N) ──► Summarize ──► Done
                     per namespace: Light ──► Rem ──► Deep ──► ItemDone
                                      │        │       │
                                      └────────┴───────┴──(any error)──► RecordFailure ──► ItemFailed

- Every task is a `lambda:invoke` of `handlers/dreaming.py` (one function with a `task` dispatcher, or one
  function per task: see `DreamingFunctions`). Lambda's throttling and transient errors are retried with
  exponential backoff and FULL jitter; `UpstreamUnavailable` (DynamoDB, S3 Vectors or Bedrock still throttled
  after the adapters' own retries) is retried more slowly.
- A namespace whose sweep fails is caught inside the Map item: `RecordFailure` writes
  `.dreams/<day>/failure.json` and releases the namespace's lease, and the item ends as `failed` without
  failing the other namespaces. `SweepInProgress` (another sweep holds the lease) is not retried.
- State between tasks stays small: the target and the sweep handle (tenant, namespace, day, run id); the
  candidates live in the namespace's `.dreams/<day>/` files. The inline Map carries at most the input
  payload limit (256 KB: about 1,500 targets, enforced by the ListTargets handler).
- The Map never accumulates what the sweeps produced: each item ends with a one-key count (`{"completed": 1}`
  or `{"failed": 1}`), the Map's ResultSelector keeps only those counts and its ResultPath replaces the target
  list with them, so the state after the Map is smaller than before it; `Summarize` turns them into the
  execution's output `{"day", "completed", "failed"}`. The sweeps' details are in each namespace's
  `.dreams/<day>/` files, the logs and the `Dream*` metrics.
- Every task's `Resource` is built for the partition the state machine runs in (`aws`, `aws-cn`,
  `aws-us-gov`): the CDK passes the stack's partition.

The CDK wraps it with `sfn.DefinitionBody.from_string(definition_json(...))`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


def lambda_invoke_arn(partition: str) -> str:
    """The Step Functions optimized Lambda integration (`lambda:invoke`) in `partition` (`aws`, `aws-cn`, ...,
    or a CloudFormation token for the stack's own partition)."""
    if not partition:
        raise ValueError("partition must name the AWS partition, e.g. 'aws' or 'aws-cn'")
    return f"arn:{partition}:states:::lambda:invoke"


LAMBDA_TRANSIENT_ERRORS: tuple[str, ...] = (
    "Lambda.TooManyRequestsException",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.ClientExecutionTimeoutException",
)
"""Throttling and service-side failures of the Invoke call itself: safe to retry."""

UPSTREAM_ERRORS: tuple[str, ...] = ("UpstreamUnavailable",)
"""The domain error a handler raises when a dependency stayed unavailable after bounded retries."""


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


@dataclass(frozen=True)
class RetryPolicy:
    interval_seconds: int = 2
    max_attempts: int = 6
    backoff_rate: float = 2.0
    max_delay_seconds: int = 60
    upstream_interval_seconds: int = 20
    upstream_max_attempts: int = 3

    def __post_init__(self) -> None:
        if self.interval_seconds < 1 or self.upstream_interval_seconds < 1:
            raise ValueError("retry intervals must be at least 1 second")
        if not 0 <= self.max_attempts <= 99 or not 0 <= self.upstream_max_attempts <= 99:
            raise ValueError("max attempts must be between 0 and 99")
        if self.backoff_rate < 1.0:
            raise ValueError("backoff_rate must be at least 1.0")


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
    if not 1 <= max_concurrency <= 1000:
        raise ValueError(f"max_concurrency must be between 1 and 1000, got {max_concurrency}")
    if not 1 <= task_timeout_seconds <= 900:
        raise ValueError("task_timeout_seconds must be between 1 and 900 (the Lambda maximum)")
    policy = retry or RetryPolicy()
    retriers = _retriers(policy)
    lambda_invoke = lambda_invoke_arn(partition)

    def task(
        function: str, payload: dict[str, Any], selector: dict[str, str], **extra: Any
    ) -> dict[str, Any]:
        return {
            "Type": "Task",
            "Resource": lambda_invoke,
            "Parameters": {"FunctionName": function, "Payload": payload},
            "ResultSelector": selector,
            "TimeoutSeconds": task_timeout_seconds,
            "Retry": retriers,
            **extra,
        }

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
        "ItemDone": {"Type": "Pass", "Result": {"completed": 1}, "End": True},
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
        "ItemFailed": {"Type": "Pass", "Result": {"failed": 1}, "End": True},
    }
    return {
        "Comment": "Agent memory dreaming sweep: list namespaces, then Light -> REM -> Deep per namespace",
        "StartAt": "ListTargets",
        "States": {
            "ListTargets": task(
                functions.list_targets,
                {"task": "list_targets", "input.$": "$", "execution.$": "$$.Execution.Name"},
                {"day.$": "$.Payload.day", "targets.$": "$.Payload.targets"},
                Next="SweepNamespaces",
            ),
            "SweepNamespaces": {
                "Type": "Map",
                "ItemsPath": "$.targets",
                "MaxConcurrency": max_concurrency,
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "INLINE"},
                    "StartAt": "Light",
                    "States": item_states,
                },
                # Only the counts survive the Map ($[*].failed is [] when nothing failed), and they take the
                # place of the target list: the state after the Map is never larger than its input.
                "ResultSelector": {"completed.$": "$[*].completed", "failed.$": "$[*].failed"},
                "ResultPath": "$.targets",
                "Next": "Summarize",
            },
            "Summarize": {
                "Type": "Pass",
                "Parameters": {
                    "day.$": "$.day",
                    "completed.$": "States.ArrayLength($.targets.completed)",
                    "failed.$": "States.ArrayLength($.targets.failed)",
                },
                "Next": "Done",
            },
            "Done": {"Type": "Succeed"},
        },
    }


def definition_json(functions: DreamingFunctions, **options: Any) -> str:
    return json.dumps(build_definition(functions, **options), indent=2, sort_keys=True)


def _retriers(policy: RetryPolicy) -> list[dict[str, Any]]:
    return [
        {
            "ErrorEquals": list(LAMBDA_TRANSIENT_ERRORS),
            "IntervalSeconds": policy.interval_seconds,
            "MaxAttempts": policy.max_attempts,
            "BackoffRate": policy.backoff_rate,
            "MaxDelaySeconds": policy.max_delay_seconds,
            "JitterStrategy": "FULL",
        },
        {
            "ErrorEquals": list(UPSTREAM_ERRORS),
            "IntervalSeconds": policy.upstream_interval_seconds,
            "MaxAttempts": policy.upstream_max_attempts,
            "BackoffRate": policy.backoff_rate,
            "MaxDelaySeconds": max(policy.max_delay_seconds, policy.upstream_interval_seconds),
            "JitterStrategy": "FULL",
        },
    ]
