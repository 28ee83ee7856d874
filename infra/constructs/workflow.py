"""Workflow: any declared workflow (`infra/workflows/<name>_asl.py` `WORKFLOW`) as a STANDARD state machine on
the function that runs its tasks, with its per-tenant schedules, its alarm on failed executions and the grant
that lets a function start it. A workflow whose function is its own (dreaming, migration) builds that
function inside itself (`function` is then a factory given the workflow's scope)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from ..config import DeploymentConfig
from ..workflows import workflow_specs
from ..workflows.spec import WorkflowSpec
from .network import Network
from .service_function import ServiceFunction
from .workflow_parts import failed_executions_alarm, grant_start, logged_state_machine, tenant_schedules

TaskFunction = ServiceFunction | Callable[[Construct], ServiceFunction]


class Workflow(Construct):
    """A state machine built from `spec.definition` (logs without execution data, X-Ray on, a role that may
    invoke only the task function), per configured tenant a schedule in `schedule_group` when the spec has
    schedules (retries, an SQS dead-letter queue), and the spec's failed-executions alarm."""

    def __init__(
        self,
        scope: Construct,
        spec: WorkflowSpec,
        config: DeploymentConfig,
        *,
        function: TaskFunction,
        schedule_group: scheduler.IScheduleGroup,
    ) -> None:
        super().__init__(scope, spec.construct_id)
        self.spec, self._config = spec, config
        self.function = function if isinstance(function, ServiceFunction) else function(self)
        fn = self.function.function
        self.log_group, self.state_machine = logged_state_machine(
            self,
            definition=spec.definition(
                fn.function_arn,
                partition=Stack.of(self).partition,
                config=config,
                task_timeout_seconds=config.functions.dreaming.timeout_seconds,  # both task functions' size
            ),
            function=fn,
            function_label=spec.runtime.host,
            log_retention_days=config.retention.log_days,
            retain_logs=config.retain_data,
            distributed_map=spec.distributed_map,
        )
        self.dead_letter_queue: sqs.Queue | None = None
        self.scheduler_role: iam.Role | None = None
        self.schedules: dict[str, scheduler.Schedule] = {}
        if spec.schedules is not None:
            self._schedules(schedule_group)
        self.alarm: cloudwatch.Alarm | None = None
        if spec.alarm is not None:
            self.alarm = failed_executions_alarm(
                self, spec.alarm.construct_id, self.state_machine, spec.alarm.description
            )

    def _schedules(self, schedule_group: scheduler.IScheduleGroup) -> None:
        schedules, config = self.spec.schedules, self._config
        assert schedules is not None
        settings = schedules.config(config)
        self.dead_letter_queue, self.scheduler_role, self.schedules = tenant_schedules(
            self,
            state_machine=self.state_machine,
            tenants=config.tenants,
            schedule_group=schedule_group,
            expression=settings.expression,
            enabled=settings.enabled,
            dead_letter_retention_days=config.retention.dead_letter_days,
            retry_attempts=schedules.retry_attempts,
            max_event_age=Duration.hours(schedules.max_event_age_hours),
            what=schedules.what,
            role_description=schedules.role_description,
            description=schedules.description,
            schedule_input=schedules.input,
        )

    @property
    def alarms(self) -> list[cloudwatch.Alarm]:
        """The alarms this workflow owns (for the alarm topic)."""
        return [self.alarm] if self.alarm is not None else []

    @property
    def started_on_demand(self) -> bool:
        """Whether functions may start it in this deployment (the spec names a start grant and allows it)."""
        return self.spec.start_sid is not None and self.spec.started_on_demand(self._config)

    def grant_start(self, function: ServiceFunction, network: Network) -> None:
        """Let `function` start executions (IAM, and the endpoint policy in the VPC) and tell it the state
        machine's ARN in the runtime's variable for it (`agent_memory.settings.workflows`)."""
        if self.spec.start_sid is None:
            raise ValueError(f"workflow {self.spec.runtime.name} declares no start grant")
        grant_start(
            self.state_machine,
            function,
            network,
            sid=self.spec.start_sid,
            environment_name=self.spec.runtime.arn_variable,
        )


def declared_workflows(
    scope: Construct,
    config: DeploymentConfig,
    *,
    own_functions: Mapping[str, Callable[[WorkflowSpec], Workflow]],
    schedule_group: scheduler.IScheduleGroup,
) -> dict[str, Workflow]:
    """Every workflow `agent_memory.settings.workflows` declares, by name, in declaration order. A workflow named in
    `own_functions` builds its task function itself (the function of that name); any other runs its tasks on
    its host's, which must be declared before it."""
    built: dict[str, Workflow] = {}
    hosts: dict[str, ServiceFunction] = {}
    for spec in workflow_specs():
        name, host = spec.runtime.name, spec.runtime.host
        if name in own_functions:
            built[name] = own_functions[name](spec)
            hosts[name] = built[name].function
        elif host in hosts:
            built[name] = Workflow(scope, spec, config, function=hosts[host], schedule_group=schedule_group)
        else:
            raise ValueError(f"workflow {name} runs on {host!r}, which no workflow declared before it builds")
    return built
