"""The workflows (long jobs run as Step Functions state machines in AWS), one declaration each.

Everything else is derived from these entries: the generic launcher that starts one (`adapters/aws/stepfunctions.py`
in AWS, a job of the job worker process locally: `api/jobs.py`), the task table of the function that runs its
tasks (`handlers/dreaming.py` gathers the tables of the workflows it hosts), and the infrastructure
(`infra/workflows/<name>_asl.py`: the definition and its deployment, built by `infra/constructs/workflow.py`;
the stack adds every declared workflow without a line of its own). Plain data: the CDK app imports it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Workflow:
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
    job_kind: str | None = None
    """Locally: the job kind the job worker runs it as (`api/jobs.py` `run_job`); None: not run as a job."""

    @property
    def arn_variable(self) -> str:
        if self.arn_setting is None:
            raise ValueError(f"workflow {self.name} is started by its schedules only: it has no ARN variable")
        return f"AGENT_MEMORY_{self.arn_setting.upper()}"


DREAMING = Workflow("dreaming", host="dreaming", arn_setting="dreaming_state_machine_arn", job_kind="dream")
CURATOR = Workflow("curator", host="dreaming", tasks="curator")
PURGE = Workflow("purge", host="dreaming", tasks="purge", arn_setting="purge_state_machine_arn", job_kind="purge")
MIGRATION = Workflow("migration", host="migration", arn_setting="migration_state_machine_arn")
"""Locally the backfill runs on a thread of the process that started it (the CLI waits for it)."""

WORKFLOWS: tuple[Workflow, ...] = (DREAMING, CURATOR, PURGE, MIGRATION)


def hosted_by(host: str) -> tuple[Workflow, ...]:
    """The workflows whose tasks `host` runs, besides its own."""
    return tuple(w for w in WORKFLOWS if w.host == host and w.tasks is not None)
