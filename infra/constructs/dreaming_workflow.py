"""DreamingWorkflow: the nightly Light -> REM -> Deep consolidation as a Step Functions state machine, its
task function and one EventBridge schedule per tenant."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from ..config import DeploymentConfig, DreamingScheduleConfig, FunctionSizing, TenantConfig
from ..workflows.dreaming_asl import DreamingFunctions, definition_json
from .function_set import FunctionSet
from .network import Network
from .service_function import ServiceFunction
from .workflow_parts import grant_start, logged_state_machine, tenant_schedules

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

        self.function = self._task_function(
            tenants,
            sizing=sizing,
            environment=environment,
            filesystem=filesystem,
            code=code,
            layer=layer,
            vpc=vpc,
            subnets=subnets,
            log_retention_days=log_retention_days,
            retain_logs=retain_logs,
        )
        fn = self.function.function

        self.log_group, self.state_machine = logged_state_machine(
            self,
            definition=definition_json(
                DreamingFunctions.single(fn.function_arn),
                # `${AWS::Partition}` unless the stack pins a region: the integration ARN follows the
                # partition the stack is deployed to (cdk.json allows aws-cn).
                partition=stack.partition,
                max_concurrency=config.max_concurrency,
                task_timeout_seconds=sizing.timeout_seconds,
            ),
            function=fn,
            function_label="dreaming",
            log_retention_days=log_retention_days,
            retain_logs=retain_logs,
            distributed_map=True,  # each namespace is a child execution (workflows/_asl.py paged_sweep)
        )
        self.dead_letter_queue, self.scheduler_role, self.schedules = self._schedules(
            config, tenants, schedule_group, dead_letter_retention_days
        )

    def _schedules(
        self,
        config: DreamingScheduleConfig,
        tenants: Sequence[TenantConfig],
        schedule_group: scheduler.IScheduleGroup,
        dead_letter_retention_days: int,
    ) -> tuple[sqs.Queue, iam.Role, dict[str, scheduler.Schedule]]:
        return tenant_schedules(
            self,
            state_machine=self.state_machine,
            tenants=tenants,
            schedule_group=schedule_group,
            expression=config.expression,
            enabled=config.enabled,
            dead_letter_retention_days=dead_letter_retention_days,
            retry_attempts=SCHEDULE_RETRY_ATTEMPTS,
            max_event_age=SCHEDULE_MAX_EVENT_AGE,
            what="the dreaming schedules",
            role_description="EventBridge Scheduler: start the dreaming state machine",
            description=lambda tenant: f"Nightly dreaming sweep of tenant {tenant.id} ({tenant.time_zone})",
            # handlers/dreaming.py (list_targets): the tenants to sweep, and the time zone whose today is
            # the sweep day.
            schedule_input=lambda tenant: {"tenants": [tenant.id], "time_zone": tenant.time_zone},
        )

    def _task_function(self, tenants: Sequence[TenantConfig], **options: Any) -> ServiceFunction:
        """One function serves every task of the state machine; Step Functions waits for each result."""
        environment = options.pop("environment")
        return ServiceFunction(
            self,
            "DreamingFunction",
            handler=DREAMING_HANDLER,
            description="Dreaming sweep tasks (list targets, Light, REM, Deep, record failure)",
            environment={
                **environment,
                # Fallback when an execution is started by hand without "tenants" in its input.
                "AGENT_MEMORY_DREAMING_TENANTS": json.dumps([t.id for t in tenants]),
            },
            asynchronous=False,  # Step Functions waits for each task's result
            **options,
        )

    @classmethod
    def for_deployment(
        cls,
        scope: Construct,
        construct_id: str,
        config: DeploymentConfig,
        *,
        functions: FunctionSet,
        schedule_group: scheduler.IScheduleGroup,
    ) -> DreamingWorkflow:
        """The task function works on the memory files (the curator and purge steps run on it too)."""
        workflow = cls(
            scope,
            construct_id,
            config=config.schedules.dreaming,
            tenants=config.tenants,
            schedule_group=schedule_group,
            **functions.dreaming_options(),
        )
        functions.grant_files(workflow.function)
        return workflow

    def grant_start(self, function: ServiceFunction, network: Network) -> None:
        """On-demand dreaming: the API function starts a sweep of one tenant."""
        grant_start(
            self.state_machine,
            function,
            network,
            sid="StartDreaming",
            environment_name="AGENT_MEMORY_DREAMING_STATE_MACHINE_ARN",
        )
