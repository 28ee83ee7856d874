"""CuratorWorkflow: the weekly skills curator as a Step Functions state machine run on the dreaming function
(which mounts the memory files, all the curator touches), and one EventBridge schedule per tenant."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Stack, TimeZone, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as scheduler_targets
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from agent_memory.workflows.curator_asl import definition_json

from ..config import CuratorScheduleConfig, TenantConfig
from .service_function import dead_letter_queue

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

        self.log_group = logs.LogGroup(
            self,
            "StateMachineLogs",
            removal_policy=RemovalPolicy.RETAIN if retain_logs else RemovalPolicy.DESTROY,
        )
        cast(logs.CfnLogGroup, self.log_group.node.default_child).retention_in_days = log_retention_days

        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            definition_body=sfn.DefinitionBody.from_string(
                definition_json(
                    function.function_arn,
                    partition=stack.partition,
                    max_concurrency=config.max_concurrency,
                    task_timeout_seconds=task_timeout_seconds,
                )
            ),
            state_machine_type=sfn.StateMachineType.STANDARD,
            # Never the state data: run summaries name skills.
            logs=sfn.LogOptions(
                destination=self.log_group, level=sfn.LogLevel.ALL, include_execution_data=False
            ),
            tracing_enabled=True,
        )
        function.grant_invoke(self.state_machine.role)

        fn_logical_id = stack.get_logical_id(cast(lambda_.CfnFunction, function.node.default_child))
        Validations.of(self.state_machine.role).acknowledge(
            Acknowledgment(
                id=f"AwsSolutions-IAM5[Resource::<{fn_logical_id}.Arn>:*]",
                reason="Invoke versions/aliases of the dreaming function only (CDK's standard grant).",
            ),
            Acknowledgment(
                id="AwsSolutions-IAM5[Resource::*]",
                reason="Log delivery (logs:CreateLogDelivery and friends) and X-Ray PutTraceSegments "
                "support no resource-level permissions.",
            ),
        )

        self.dead_letter_queue = dead_letter_queue(
            self, "ScheduleDeadLetterQueue", dead_letter_retention_days, "the curator schedules"
        )
        self.scheduler_role = iam.Role(
            self,
            "SchedulerRole",
            description="EventBridge Scheduler: start the skills curator state machine",
            assumed_by=iam.ServicePrincipal("scheduler.amazonaws.com").with_conditions(
                {"StringEquals": {"aws:SourceAccount": stack.account}}
            ),
        )
        self.schedules: dict[str, scheduler.Schedule] = {}
        for tenant in tenants:
            schedule = scheduler.Schedule(
                self,
                f"Schedule-{tenant.id}",
                description=f"Skills curator of tenant {tenant.id} ({tenant.time_zone})",
                schedule_group=schedule_group,
                schedule=scheduler.ScheduleExpression.expression(
                    config.expression, TimeZone.of(tenant.time_zone)
                ),
                enabled=config.enabled,
                target=scheduler_targets.StepFunctionsStartExecution(
                    self.state_machine,
                    input=scheduler.ScheduleTargetInput.from_object({"tenants": [tenant.id]}),
                    dead_letter_queue=self.dead_letter_queue,
                    retry_attempts=SCHEDULE_RETRY_ATTEMPTS,
                    max_event_age=SCHEDULE_MAX_EVENT_AGE,
                    role=self.scheduler_role,
                ),
            )
            schedule.node.add_dependency(schedule_group)
            self.schedules[tenant.id] = schedule
