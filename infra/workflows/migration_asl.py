"""The embedding backfill's Step Functions state machine, as Amazon States Language data (no CDK, no AWS calls).

    RunPages ──► MorePages? ──(state is backfilling)──► RunPages
        │            └──(anything else)──► Done
        └──(error after retries)──► Failed

Why a sequential loop rather than a Map (inline with bounded concurrency, or Distributed): the backfill is
bound by the embedding budget, not by workers. One `RunPages` invocation pages through the tenant's records
from the checkpoint cursor for up to ~12 minutes of its 15-minute Lambda budget, paced to the migration's
requests- and tokens-per-minute (bench/backfill.py: one paced worker keeps >= 99 % of a 600 rpm budget busy
with 50 ms model latency, i.e. as long as one request's latency is below 60 s / rpm; above that, a larger
`batch_size` carries more texts per request). A Map would need the record keys partitioned up front (the
store's cursor is one sequence) and would split one budget between workers that cannot see each other's
pace. The state stays tiny and constant: `{tenant, migration_id}` plus the last invocation's small summary
(state, pages, records seen, dead letters), far below the 256 KB state limit whatever the tenant's size;
the checkpoint lives in DynamoDB. History: ~6 events per loop turn, so the 25,000-event limit allows ~4,000
turns, i.e. ~4,000 x 12 min of backfill (far beyond any budget run here).

- `RunPages` is a `lambda:invoke` of `handlers/migration.py` (task `run_pages`). Lambda throttling and
  transient errors are retried with exponential backoff and FULL jitter; `UpstreamUnavailable` (DynamoDB,
  S3 Vectors or Bedrock still throttled after the adapters' retries) is retried more slowly. Any other error
  (`ConcurrentModification`: a second runner, `States.Timeout`) ends the execution in `Failed`, which the
  stack's alarm on failed executions reports; the migration keeps its checkpoint, and `start` resumes it.
- A rollback while the backfill runs needs no signal: the next page sees the state and the loop ends.
"""

from __future__ import annotations

from agent_memory.settings.workflows import MIGRATION

from ..config import DeploymentConfig
from ._asl import StepLoop
from .spec import FailedAlarm, WorkflowSpec

LOOP = StepLoop(
    comment="Agent memory embedding backfill: run pages from the checkpoint until the migration leaves backfilling",
    task_state="RunPages",
    choice_state="MorePages",
    task="run_pages",
    key="migration_id",
    result={
        "state.$": "$.Payload.state",
        "pages.$": "$.Payload.pages",
        "records_seen.$": "$.Payload.records_seen",
        "dead_letters.$": "$.Payload.dead_letters",
    },
    while_state="backfilling",
    error="BackfillFailed",
    cause="a backfill invocation failed after its retries; the checkpoint is kept: start resumes",
)


build_definition = LOOP.definition
definition_json = LOOP.definition_json


def _definition(arn: str, *, partition: str, config: DeploymentConfig, task_timeout_seconds: int) -> str:
    return definition_json(arn, partition=partition, task_timeout_seconds=task_timeout_seconds)


WORKFLOW = WorkflowSpec(
    runtime=MIGRATION,
    construct_id="MigrationWorkflow",
    definition=_definition,
    alarm=FailedAlarm(
        "BackfillExecutionsFailed",
        "An embedding backfill execution failed; the migration kept its checkpoint: "
        "read `migrate status` and start it again.",
    ),
    start_sid="StartBackfill",  # the API function starts the backfill of a migration
)
"""The embedding migration's backfill on its own function (infra/constructs/migration_workflow.py adds the
function, the archive bucket and the tenant role's grants)."""
