"""What the workflows' state machines share (dreaming, curator, migration): the Lambda integration's ARN, the
retry policy of a Lambda task and the task state itself, as Amazon States Language data (no CDK, no AWS calls).

A task is a `lambda:invoke` of a handler with a `{"task": ...}` payload. Lambda's throttling and transient
errors are retried with exponential backoff and FULL jitter; `UpstreamUnavailable` (DynamoDB, S3 Vectors or
Bedrock still throttled after the adapters' own retries) is retried more slowly."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

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


def lambda_invoke_arn(partition: str) -> str:
    """The Step Functions optimized Lambda integration (`lambda:invoke`) in `partition` (`aws`, `aws-cn`, ...,
    or a CloudFormation token for the stack's own partition)."""
    if not partition:
        raise ValueError("partition must name the AWS partition, e.g. 'aws' or 'aws-cn'")
    return f"arn:{partition}:states:::lambda:invoke"


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


def retriers(policy: RetryPolicy) -> list[dict[str, Any]]:
    """The `Retry` list of a Lambda task: transient Lambda errors, then `UpstreamUnavailable` more slowly."""
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


def check_limits(*, task_timeout_seconds: int, max_concurrency: int | None = None) -> None:
    """Refuse a Map concurrency outside Step Functions' 1..1000 and a task timeout beyond Lambda's 900 s."""
    if max_concurrency is not None and not 1 <= max_concurrency <= 1000:
        raise ValueError(f"max_concurrency must be between 1 and 1000, got {max_concurrency}")
    if not 1 <= task_timeout_seconds <= 900:
        raise ValueError("task_timeout_seconds must be between 1 and 900 (the Lambda maximum)")


@dataclass(frozen=True)
class LambdaTasks:
    """Builds the `lambda:invoke` task states of one state machine: all in `partition`, with the same timeout
    and retry policy."""

    partition: str
    timeout_seconds: int
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    def task(
        self, function: str, payload: dict[str, Any], selector: dict[str, str], **extra: Any
    ) -> dict[str, Any]:
        """A Task state invoking `function` with `payload`, keeping `selector` of the result; `extra` adds
        the state's own fields (`ResultPath`, `Catch`, `Next`, ...)."""
        return {
            "Type": "Task",
            "Resource": lambda_invoke_arn(self.partition),
            "Parameters": {"FunctionName": function, "Payload": payload},
            "ResultSelector": selector,
            "TimeoutSeconds": self.timeout_seconds,
            "Retry": retriers(self.retry),
            **extra,
        }


def item_done() -> dict[str, Any]:
    """The end of a Map item that succeeded: one count, never the item's output, so the Map's result holds
    one small object per target."""
    return {"Type": "Pass", "Result": {"completed": 1}, "End": True}


def item_failed() -> dict[str, Any]:
    """The end of a Map item that failed (caught inside the item, so the other targets go on)."""
    return {"Type": "Pass", "Result": {"failed": 1}, "End": True}


def paged_sweep(
    *,
    list_state: dict[str, Any],
    map_state: str,
    start_at: str,
    item_states: dict[str, Any],
    max_concurrency: int,
    summary: dict[str, str],
    label: str,
) -> dict[str, Any]:
    """The states of a sweep over any number of targets: `Begin` → `ListTargets` (one page) → `<map_state>`
    (a Distributed Map: each target runs as a child execution with its own history, so the parent's history
    grows per page, never per target) → `Tally` → `MorePages` → `ListTargets` … → `Summarize` → `Done`.

    `list_state` is the ListTargets task (without ResultPath/Next); its Lambda gets `input`, `cursor` (0, then
    where the previous page ended)
    and `day` (null on the first page, then the first page's: one sweep day for every page) and answers
    `{targets, next_cursor, day}`. Only counts survive each page, so the state never grows with the targets."""
    return {
        "Begin": {
            "Type": "Pass",
            "Parameters": {"input.$": "$", "cursor": 0, "day": None, "completed": 0, "failed": 0},
            "Next": "ListTargets",
        },
        "ListTargets": {**list_state, "ResultPath": "$.listed", "Next": map_state},
        map_state: {
            "Type": "Map",
            "Label": label,
            "ItemsPath": "$.listed.targets",
            "MaxConcurrency": max_concurrency,
            "ItemProcessor": {
                # STANDARD children: a dreaming item runs three tasks of up to 900 s each (EXPRESS stops at 5 min).
                "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                "StartAt": start_at,
                "States": item_states,
            },
            "ResultSelector": {"completed.$": "$[*].completed", "failed.$": "$[*].failed"},
            "ResultPath": "$.listed.targets",
            "Next": "Tally",
        },
        "Tally": {
            "Type": "Pass",
            "Parameters": {
                "input.$": "$.input",
                "cursor.$": "$.listed.next_cursor",
                "day.$": "$.listed.day",
                "completed.$": "States.MathAdd($.completed, States.ArrayLength($.listed.targets.completed))",
                "failed.$": "States.MathAdd($.failed, States.ArrayLength($.listed.targets.failed))",
            },
            "Next": "MorePages",
        },
        "MorePages": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.cursor", "IsNull": False, "Next": "ListTargets"}],
            "Default": "Summarize",
        },
        "Summarize": {"Type": "Pass", "Parameters": summary, "Next": "Done"},
        "Done": {"Type": "Succeed"},
    }


@dataclass(frozen=True)
class StepLoop:
    """A workflow that invokes one Lambda task until the state it reports leaves `while_state` (the backfill's
    pages, the purge's steps): `<task_state>` → `<choice_state>` → `<task_state>` … → `Done`, and `Failed`
    when an invocation fails after its retries (the caller's checkpoint makes a new execution resume)."""

    comment: str
    task_state: str
    choice_state: str
    task: str
    key: str
    """The input field naming what the task works on, besides the tenant (`migration_id`, `plan_id`)."""
    result: dict[str, str]
    while_state: str
    error: str
    cause: str

    def definition_json(self, function: str, **options: Any) -> str:
        return json.dumps(self.definition(function, **options), indent=2, sort_keys=True)

    def definition(
        self,
        function: str,
        *,
        partition: str,
        retry: RetryPolicy | None = None,
        task_timeout_seconds: int = 900,
    ) -> dict[str, Any]:
        check_limits(task_timeout_seconds=task_timeout_seconds)
        tasks = LambdaTasks(partition, task_timeout_seconds, retry or RetryPolicy())
        return {
            "Comment": self.comment,
            "StartAt": self.task_state,
            "States": {
                self.task_state: tasks.task(
                    function,
                    {"task": self.task, "tenant.$": "$.tenant", f"{self.key}.$": f"$.{self.key}"},
                    self.result,
                    ResultPath="$.last",
                    Catch=[{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Failed"}],
                    Next=self.choice_state,
                ),
                self.choice_state: {
                    "Type": "Choice",
                    "Choices": [
                        {
                            "Variable": "$.last.state",
                            "StringEquals": self.while_state,
                            "Next": self.task_state,
                        }
                    ],
                    "Default": "Done",
                },
                "Done": {"Type": "Succeed", "OutputPath": "$.last"},
                "Failed": {"Type": "Fail", "Error": self.error, "Cause": self.cause},
            },
        }
