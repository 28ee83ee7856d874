"""The workflows (long jobs run as Step Functions state machines in AWS), one declaration each.

Everything else is derived from these entries: the generic launcher that starts one (`adapters/aws/stepfunctions.py`
in AWS, a job of the job worker process locally: `api/jobs.py`), the task table of the function that runs its
tasks (`handlers/dreaming.py` gathers the tables of the workflows it hosts), and the infrastructure
(`infra/workflows/<name>_asl.py`: the definition and its deployment, built by `infra/constructs/workflow.py`;
the stack adds every declared workflow without a line of its own). Plain data: the CDK app imports it."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..domain.jobs.model import JobKind

S = TypeVar("S")
"""What a start names besides the tenant (the namespaces of a sweep, a purge plan's id, a migration's id)."""


def _no_input(tenant: str, subject: Any) -> Any:
    raise ValueError("this workflow is started by its schedules only")


def _unique_name(prefix: str) -> Callable[[str, Any], str]:
    """A new execution name per start (at most 80 characters: Step Functions' limit)."""
    return lambda tenant, _: f"{prefix}-{tenant}-{uuid.uuid4().hex[:12]}"[:80]


@dataclass(frozen=True)
class Workflow(Generic[S]):
    name: str
    """The workflow's name: its definition and deployment are `infra/workflows/<name>_asl.py`."""
    host: str
    """The Lambda function that runs its tasks: `dreaming` (it mounts the memory files and holds the tenant
    role) or `migration` (the backfill function)."""
    tasks: str | None = None
    """The handler module (`agent_memory.handlers.<tasks>`) whose `TASKS` table the host dispatches on;
    None: the host's own handler (`handlers/<host>.py`)."""
    arn_setting: str | None = None
    """The `Settings` field (environment variable `AGENT_MEMORY_<FIELD>`) that names the state machine to the
    functions that start it; None: only its schedules start it."""
    job_kind: JobKind | None = None
    """Locally: the job kind the job worker runs it as (`api/jobs.py` `run_job`); None: not run as a job."""
    start_input: Callable[[str, S], dict[str, Any]] = _no_input
    """(tenant, subject) -> the execution's input (the state machine's `$`, the job's request)."""
    execution_name: Callable[[str, S], str] = _no_input
    """(tenant, subject) -> the execution's name: a start with a name already used finds that execution
    instead of starting another (Step Functions' idempotent StartExecution)."""

    @property
    def arn_variable(self) -> str:
        if self.arn_setting is None:
            raise ValueError(f"workflow {self.name} is started by its schedules only: it has no ARN variable")
        return f"AGENT_MEMORY_{self.arn_setting.upper()}"


def _sweep_input(tenant: str, namespaces: Sequence[str]) -> dict[str, Any]:
    """handlers/dreaming.py list_targets: the tenants to sweep, and the namespaces when the start names some."""
    return {"tenants": [tenant], **({"namespaces": list(namespaces)} if namespaces else {})}


DREAMING: Workflow[Sequence[str]] = Workflow(
    "dreaming",
    host="dreaming",
    arn_setting="dreaming_state_machine_arn",
    job_kind="dream",
    start_input=_sweep_input,
    execution_name=_unique_name("ondemand"),
)
CURATOR: Workflow[None] = Workflow("curator", host="dreaming", tasks="curator")
PURGE: Workflow[str] = Workflow(
    "purge",
    host="dreaming",
    tasks="purge",
    arn_setting="purge_state_machine_arn",
    job_kind="purge",
    start_input=lambda tenant, plan_id: {"tenant": tenant, "plan_id": plan_id},
    execution_name=lambda tenant, plan_id: plan_id,  # a second start of the same plan finds the running one
)
MIGRATION: Workflow[str] = Workflow(
    "migration",
    host="migration",
    arn_setting="migration_state_machine_arn",
    start_input=lambda tenant, migration_id: {"tenant": tenant, "migration_id": migration_id},
    execution_name=_unique_name("backfill"),  # a repeated start of a migration gets a new execution
)
"""Locally the backfill runs on a thread of the process that started it (the CLI waits for it)."""

WORKFLOWS: tuple[Workflow[Any], ...] = (DREAMING, CURATOR, PURGE, MIGRATION)


def hosted_by(host: str) -> tuple[Workflow[Any], ...]:
    """The workflows whose tasks `host` runs, besides its own."""
    return tuple(w for w in WORKFLOWS if w.host == host and w.tasks is not None)
