"""The purge workflow (domain/erasure, issue 18) as Amazon States Language data (no CDK, no AWS calls).

    RunStep ──► MoreSteps? ──(state is executing)──► RunStep
       │            └──(completed / incomplete)──► Done
       └──(error after retries)──► Failed

A purge above the API's inline limit (2,000 records) runs here: each `RunStep` is a `lambda:invoke` of the
dreaming function's `purge_step` task (`handlers/purge.py`), which runs ONE step of the plan (sessions,
idempotency, embedding cache, snapshots, files, index, records) or, when all are done, the verification, and
saves the plan. Every step is idempotent and the plan records each step when done, so a retried or timed-out
invocation repeats at most one step and a failed execution is resumed by executing the plan again. The state is
`{tenant, plan_id}` plus the last step's small summary; the plan and its report live in the purge ledger.
Lambda's transient errors are retried with exponential backoff and full jitter, `UpstreamUnavailable` more
slowly (workflows/_asl.py); anything else ends in `Failed` (the plan stays `executing`: execute resumes it).
"""

from __future__ import annotations

from agent_memory.settings.workflows import PURGE

from ..config import DeploymentConfig
from ._asl import StepLoop
from .spec import FailedAlarm, WorkflowSpec

LOOP = StepLoop(
    comment="Agent memory purge: run the plan's steps one by one, then its verification",
    task_state="RunStep",
    choice_state="MoreSteps",
    task="purge_step",
    key="plan_id",
    result={"state.$": "$.Payload.state", "done.$": "$.Payload.done", "remaining.$": "$.Payload.remaining"},
    while_state="executing",
    error="PurgeFailed",
    cause="a purge step failed after its retries; the plan keeps its finished steps: execute resumes",
)


build_definition = LOOP.definition
definition_json = LOOP.definition_json


def _definition(arn: str, *, partition: str, config: DeploymentConfig, task_timeout_seconds: int) -> str:
    return definition_json(arn, partition=partition, task_timeout_seconds=task_timeout_seconds)


WORKFLOW = WorkflowSpec(
    runtime=PURGE,
    construct_id="PurgeWorkflow",
    definition=_definition,
    alarm=FailedAlarm(
        "PurgeExecutionsFailed",
        "A purge execution failed after its retries; the plan kept its finished steps: "
        "read its status and execute it again.",
    ),
    start_sid="StartPurge",  # the API function starts a purge whose plan is above its inline limit
)
"""Large purges (domain/erasure, issue 18) on the dreaming function (tenant role, memory files, the
idempotency table's purge grant), started by the API function; an alarm on failed executions."""
