"""The skills curator's Step Functions state machine, as Amazon States Language data (no CDK, no AWS calls).

    ListTargets ──► CurateNamespaces (Map, MaxConcurrency N) ──► Summarize ──► Done
                     per namespace: Curate ──► ItemDone
                                      └──(any error)──► ItemFailed

Both tasks are `lambda:invoke` of the dreaming function (`handlers/dreaming.py` dispatches `curator_targets`
and `curate` to `handlers/curator.py`): it already mounts the memory files, which is all the curator needs.
Retries are the dreaming workflow's (Lambda transient errors with exponential backoff and FULL jitter,
`UpstreamUnavailable` more slowly). A namespace whose run fails ends its Map item as `failed` without failing
the others; its lease expires on its own and the next weekly run judges it again. `CuratorInProgress`
(another run holds the lease) is not retried. Each item ends with a one-key count, so the state after the
Map is never larger than the target list (the same payload discipline as the dreaming workflow); what each
run decided is in the namespace's `.curator/<day>/run.json` and `REPORT.md`.
"""

from __future__ import annotations

import json
from typing import Any

from .dreaming_asl import RetryPolicy, _retriers, lambda_invoke_arn


def build_definition(
    function: str,
    *,
    partition: str,
    max_concurrency: int = 4,
    retry: RetryPolicy | None = None,
    task_timeout_seconds: int = 900,
) -> dict[str, Any]:
    if not 1 <= max_concurrency <= 1000:
        raise ValueError(f"max_concurrency must be between 1 and 1000, got {max_concurrency}")
    if not 1 <= task_timeout_seconds <= 900:
        raise ValueError("task_timeout_seconds must be between 1 and 900 (the Lambda maximum)")
    retriers = _retriers(retry or RetryPolicy())
    lambda_invoke = lambda_invoke_arn(partition)

    def task(payload: dict[str, Any], selector: dict[str, str], **extra: Any) -> dict[str, Any]:
        return {
            "Type": "Task",
            "Resource": lambda_invoke,
            "Parameters": {"FunctionName": function, "Payload": payload},
            "ResultSelector": selector,
            "TimeoutSeconds": task_timeout_seconds,
            "Retry": retriers,
            **extra,
        }

    item_states: dict[str, Any] = {
        "Curate": task(
            {"task": "curate", "target.$": "$"},
            {"summary.$": "$.Payload.summary"},
            ResultPath="$.curated",
            Catch=[{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "ItemFailed"}],
            Next="ItemDone",
        ),
        "ItemDone": {"Type": "Pass", "Result": {"completed": 1}, "End": True},
        "ItemFailed": {"Type": "Pass", "Result": {"failed": 1}, "End": True},
    }
    return {
        "Comment": "Agent memory skills curator: list namespaces with skills, then curate each",
        "StartAt": "ListTargets",
        "States": {
            "ListTargets": task(
                {"task": "curator_targets", "input.$": "$"},
                {"targets.$": "$.Payload.targets"},
                Next="CurateNamespaces",
            ),
            "CurateNamespaces": {
                "Type": "Map",
                "ItemsPath": "$.targets",
                "MaxConcurrency": max_concurrency,
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "INLINE"},
                    "StartAt": "Curate",
                    "States": item_states,
                },
                "ResultSelector": {"completed.$": "$[*].completed", "failed.$": "$[*].failed"},
                "ResultPath": "$.targets",
                "Next": "Summarize",
            },
            "Summarize": {
                "Type": "Pass",
                "Parameters": {
                    "completed.$": "States.ArrayLength($.targets.completed)",
                    "failed.$": "States.ArrayLength($.targets.failed)",
                },
                "Next": "Done",
            },
            "Done": {"Type": "Succeed"},
        },
    }


def definition_json(function: str, **options: Any) -> str:
    return json.dumps(build_definition(function, **options), indent=2, sort_keys=True)
