"""CuratorWorkflow: the weekly skills curator as a Step Functions state machine run on the dreaming function
(which mounts the memory files, all the curator touches), and one EventBridge schedule per tenant."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from constructs import Construct

from ..config import CuratorScheduleConfig, DeploymentConfig, TenantConfig
from ..workflows.curator_asl import definition_json
from .service_function import ServiceFunction
from .workflow_parts import logged_state_machine, tenant_schedules

SCHEDULE_RETRY_ATTEMPTS = 3
SCHEDULE_MAX_EVENT_AGE = Duration.hours(6)


class CuratorWorkflow(Construct):
    """A STANDARD state machine built from `workflows/curator_asl.py` (logs without execution data, X-Ray on,
    a role that may invoke only `function`), and per configured tenant a schedule in `schedule_group` that
    starts it at the configured time in the tenant's time zone, with retries and an SQS dead-letter queue.
    `function` is the dreaming function: its role already holds the memory-file access the curator needs."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: CuratorScheduleConfig,
        tenants: Sequence[TenantConfig],
        schedule_group: scheduler.IScheduleGroup,
        function: lambda_.Function,
        task_timeout_seconds: int,
        log_retention_days: int,
        dead_letter_retention_days: int,
        retain_logs: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)

        self.log_group, self.state_machine = logged_state_machine(
            self,
            definition=definition_json(
                function.function_arn,
                partition=stack.partition,
                max_concurrency=config.max_concurrency,
                task_timeout_seconds=task_timeout_seconds,
            ),
            function=function,
            function_label="dreaming",
            log_retention_days=log_retention_days,
            retain_logs=retain_logs,
            distributed_map=True,  # each namespace is a child execution (workflows/_asl.py paged_sweep)
        )
        self.dead_letter_queue, self.scheduler_role, self.schedules = tenant_schedules(
            self,
            state_machine=self.state_machine,
            tenants=tenants,
            schedule_group=schedule_group,
            expression=config.expression,
            enabled=config.enabled,
            dead_letter_retention_days=dead_letter_retention_days,
            retry_attempts=SCHEDULE_RETRY_ATTEMPTS,
            max_event_age=SCHEDULE_MAX_EVENT_AGE,
            what="the curator schedules",
            role_description="EventBridge Scheduler: start the skills curator state machine",
            description=lambda tenant: f"Skills curator of tenant {tenant.id} ({tenant.time_zone})",
            schedule_input=lambda tenant: {"tenants": [tenant.id]},
        )

    @classmethod
    def for_deployment(
        cls,
        scope: Construct,
        construct_id: str,
        config: DeploymentConfig,
        *,
        function: ServiceFunction,
        schedule_group: scheduler.IScheduleGroup,
    ) -> CuratorWorkflow:
        """Tasks on `function` (the dreaming function), bounded by its timeout."""
        return cls(
            scope,
            construct_id,
            config=config.schedules.curator,
            tenants=config.tenants,
            schedule_group=schedule_group,
            function=function.function,
            task_timeout_seconds=config.functions.dreaming.timeout_seconds,
            log_retention_days=config.retention.log_days,
            dead_letter_retention_days=config.retention.dead_letter_days,
            retain_logs=config.retain_data,
        )
