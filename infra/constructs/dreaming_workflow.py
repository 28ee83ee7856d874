"""DreamingWorkflow: the nightly Light -> REM -> Deep consolidation as a Step Functions state machine, its
task function and one EventBridge schedule per tenant."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import cast

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Stack, TimeZone, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as scheduler_targets
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from agent_memory.workflows.dreaming_asl import DreamingFunctions, definition_json

from ..config import DreamingScheduleConfig, FunctionSizing, TenantConfig
from .service_function import ServiceFunction, dead_letter_queue

DREAMING_HANDLER = "agent_memory.handlers.dreaming.handler"
"""One function serves every task of the state machine; it dispatches on the payload's `task`."""
DREAMING_METRICS_SERVICE = "dreaming"
"""The `service` dimension of the sweep's metrics (handlers/dreaming.py: `Metrics(service="dreaming")`)."""

SCHEDULE_RETRY_ATTEMPTS = 3
SCHEDULE_MAX_EVENT_AGE = Duration.hours(2)


class DreamingWorkflow(Construct):
    """The dreaming function (a `ServiceFunction` mounting the memory files, invoked synchronously by Step
    Functions), a STANDARD state machine built from `workflows/dreaming_asl.py` (logs without execution
    data, X-Ray on, a role that may invoke only that function), and per configured tenant a schedule in
    `schedule_group` that starts the state machine at the configured time in the tenant's time zone, with
    retries and an SQS dead-letter queue. The function's role still needs its data grants (tenant role,
    embedding model, key) from the stack, like the other tenant functions."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DreamingScheduleConfig,
        tenants: Sequence[TenantConfig],
        schedule_group: scheduler.IScheduleGroup,
        sizing: FunctionSizing,
        environment: Mapping[str, str],
        filesystem: lambda_.FileSystem | None,
        code: lambda_.Code,
        layer: lambda_.ILayerVersion,
        vpc: ec2.IVpc | None,
        subnets: ec2.SubnetSelection | None,
        log_retention_days: int,
        dead_letter_retention_days: int,
        retain_logs: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)

        self.function = ServiceFunction(
            self,
            "DreamingFunction",
            handler=DREAMING_HANDLER,
            description="Dreaming sweep tasks (list targets, Light, REM, Deep, record failure)",
            code=code,
            layer=layer,
            vpc=vpc,
            subnets=subnets,
            sizing=sizing,
            log_retention_days=log_retention_days,
            environment={
                **environment,
                # Fallback when an execution is started by hand without "tenants" in its input.
                "AGENT_MEMORY_DREAMING_TENANTS": json.dumps([t.id for t in tenants]),
            },
            filesystem=filesystem,
            asynchronous=False,  # Step Functions waits for each task's result
            retain_logs=retain_logs,
        )
        fn = self.function.function

        self.log_group = logs.LogGroup(
            self,
            "StateMachineLogs",
            removal_policy=RemovalPolicy.RETAIN if retain_logs else RemovalPolicy.DESTROY,
        )
        # Only the values in config.LOG_RETENTION_DAYS reach here, all valid for CloudWatch Logs.
        cast(logs.CfnLogGroup, self.log_group.node.default_child).retention_in_days = log_retention_days

        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            definition_body=sfn.DefinitionBody.from_string(
                definition_json(
                    DreamingFunctions.single(fn.function_arn),
                    # `${AWS::Partition}` unless the stack pins a region: the integration ARN follows the
                    # partition the stack is deployed to (cdk.json allows aws-cn).
                    partition=stack.partition,
                    max_concurrency=config.max_concurrency,
                    task_timeout_seconds=sizing.timeout_seconds,
                )
            ),
            state_machine_type=sfn.StateMachineType.STANDARD,
            # Every event, for a full trail of each namespace's stages, but never the state data: it
            # carries sweep summaries taken from memory content.
            logs=sfn.LogOptions(
                destination=self.log_group, level=sfn.LogLevel.ALL, include_execution_data=False
            ),
            tracing_enabled=True,
        )
        # A definition from a string hides its resources from CDK, so the invoke grant is explicit.
        fn.grant_invoke(self.state_machine.role)

        fn_logical_id = stack.get_logical_id(cast(lambda_.CfnFunction, fn.node.default_child))
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
            self, "ScheduleDeadLetterQueue", dead_letter_retention_days, "the dreaming schedules"
        )

        # Its own role, so this schedule may start this state machine and nothing else.
        self.scheduler_role = iam.Role(
            self,
            "SchedulerRole",
            description="EventBridge Scheduler: start the dreaming state machine",
            assumed_by=iam.ServicePrincipal("scheduler.amazonaws.com").with_conditions(
                {"StringEquals": {"aws:SourceAccount": stack.account}}
            ),
        )
        self.schedules: dict[str, scheduler.Schedule] = {}
        for tenant in tenants:
            schedule = scheduler.Schedule(
                self,
                f"Schedule-{tenant.id}",
                description=f"Nightly dreaming sweep of tenant {tenant.id} ({tenant.time_zone})",
                schedule_group=schedule_group,
                schedule=scheduler.ScheduleExpression.expression(
                    config.expression, TimeZone.of(tenant.time_zone)
                ),
                enabled=config.enabled,
                target=scheduler_targets.StepFunctionsStartExecution(
                    self.state_machine,
                    # handlers/dreaming.py (list_targets): the tenants to sweep, and the time zone whose
                    # today is the sweep day.
                    input=scheduler.ScheduleTargetInput.from_object(
                        {"tenants": [tenant.id], "time_zone": tenant.time_zone}
                    ),
                    dead_letter_queue=self.dead_letter_queue,
                    retry_attempts=SCHEDULE_RETRY_ATTEMPTS,
                    max_event_age=SCHEDULE_MAX_EVENT_AGE,
                    role=self.scheduler_role,
                ),
            )
            # The group is referenced by name (a literal), so CloudFormation needs the ordering spelled out.
            schedule.node.add_dependency(schedule_group)
            self.schedules[tenant.id] = schedule
