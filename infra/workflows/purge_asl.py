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

from ._asl import StepLoop

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
