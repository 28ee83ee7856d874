"""The parts of the generic `Workflow` construct (infra/constructs/workflow.py): a STANDARD state machine from an
ASL string with its own log group, and per-tenant EventBridge schedules with their dead-letter queue and
scheduler role.

Every construct is created in the caller's scope under the ids the workflows have always used
(`StateMachineLogs`, `StateMachine`, `ScheduleDeadLetterQueue`, `SchedulerRole`, `Schedule-<tenant>`), so the
synthesized logical ids do not depend on this module."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from aws_cdk import Acknowledgment, ArnFormat, Duration, RemovalPolicy, Stack, TimeZone, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as scheduler_targets
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ..config import TenantConfig
from .network import Network
from .service_function import ServiceFunction, dead_letter_queue


def logged_state_machine(
    scope: Construct,
    *,
    definition: str,
    function: lambda_.Function,
    function_label: str,
    log_retention_days: int,
    retain_logs: bool,
    distributed_map: bool = False,
) -> tuple[logs.LogGroup, sfn.StateMachine]:
    """A STANDARD state machine from the ASL `definition` whose only task target is `function`: every event
    logged to its own log group but never the state data (it carries summaries taken from memory content),
    X-Ray on, and a role that may invoke only `function` (`function_label` names it in cdk-nag's
    acknowledgment)."""
    log_group = logs.LogGroup(
        scope,
        "StateMachineLogs",
        removal_policy=RemovalPolicy.RETAIN if retain_logs else RemovalPolicy.DESTROY,
    )
    # Only the values in config.LOG_RETENTION_DAYS reach here, all valid for CloudWatch Logs.
    cast(logs.CfnLogGroup, log_group.node.default_child).retention_in_days = log_retention_days

    state_machine = sfn.StateMachine(
        scope,
        "StateMachine",
        definition_body=sfn.DefinitionBody.from_string(definition),
        state_machine_type=sfn.StateMachineType.STANDARD,
        logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=False),
        tracing_enabled=True,
    )
    # A definition from a string hides its resources from CDK, so the invoke grant is explicit.
    function.grant_invoke(state_machine.role)

    stack = Stack.of(scope)
    fn_logical_id = stack.get_logical_id(cast(lambda_.CfnFunction, function.node.default_child))
    Validations.of(state_machine.role).acknowledge(
        Acknowledgment(
            id=f"AwsSolutions-IAM5[Resource::<{fn_logical_id}.Arn>:*]",
            reason=f"Invoke versions/aliases of the {function_label} function only (CDK's standard grant).",
        ),
        Acknowledgment(
            id="AwsSolutions-IAM5[Resource::*]",
            reason="Log delivery (logs:CreateLogDelivery and friends) and X-Ray PutTraceSegments "
            "support no resource-level permissions.",
        ),
    )
    if distributed_map:
        _allow_child_executions(scope, state_machine)
    return log_group, state_machine


def _allow_child_executions(scope: Construct, state_machine: sfn.StateMachine) -> None:
    """A Distributed Map runs each item as a child execution of its own state machine: the role must start
    the state machine and describe and stop its executions (AWS's documented minimum for Distributed Map).
    A separate policy (not the role's default one, on which the state machine depends) avoids a cycle."""
    stack = Stack.of(scope)
    executions = stack.format_arn(
        service="states",
        resource="execution",
        resource_name=f"{state_machine.state_machine_name}/*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
    policy = iam.Policy(
        scope,
        "ChildExecutionsPolicy",
        roles=[state_machine.role],
        statements=[
            iam.PolicyStatement(
                sid="StartChildExecutions",
                actions=["states:StartExecution"],
                resources=[state_machine.state_machine_arn],
            ),
            iam.PolicyStatement(
                sid="WatchChildExecutions",
                actions=["states:DescribeExecution", "states:StopExecution"],
                resources=[executions],
            ),
        ],
    )
    sm_logical_id = stack.get_logical_id(cast(sfn.CfnStateMachine, state_machine.node.default_child))
    Validations.of(policy).acknowledge(
        Acknowledgment(
            id="AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:"
            f"execution:<{sm_logical_id}.Name>/*]",
            reason="The Distributed Map's child executions of this state machine only (their names are "
            "generated per map run).",
        )
    )


def tenant_schedules(
    scope: Construct,
    *,
    state_machine: sfn.StateMachine,
    tenants: Sequence[TenantConfig],
    schedule_group: scheduler.IScheduleGroup,
    expression: str,
    enabled: bool,
    dead_letter_retention_days: int,
    retry_attempts: int,
    max_event_age: Duration,
    what: str,
    role_description: str,
    description: Callable[[TenantConfig], str],
    schedule_input: Callable[[TenantConfig], Mapping[str, Any]],
) -> tuple[sqs.Queue, iam.Role, dict[str, scheduler.Schedule]]:
    """Per tenant a schedule in `schedule_group` that starts `state_machine` at `expression` in the tenant's
    time zone with `schedule_input(tenant)`, retried and then dead-lettered to one SQS queue (`what` names
    the schedules in its cdk-nag acknowledgment), assuming its own role so it may start this state machine
    and nothing else."""
    queue = dead_letter_queue(scope, "ScheduleDeadLetterQueue", dead_letter_retention_days, what)
    role = iam.Role(
        scope,
        "SchedulerRole",
        description=role_description,
        assumed_by=iam.ServicePrincipal("scheduler.amazonaws.com").with_conditions(
            {"StringEquals": {"aws:SourceAccount": Stack.of(scope).account}}
        ),
    )
    schedules: dict[str, scheduler.Schedule] = {}
    for tenant in tenants:
        schedule = scheduler.Schedule(
            scope,
            f"Schedule-{tenant.id}",
            description=description(tenant),
            schedule_group=schedule_group,
            schedule=scheduler.ScheduleExpression.expression(expression, TimeZone.of(tenant.time_zone)),
            enabled=enabled,
            target=scheduler_targets.StepFunctionsStartExecution(
                state_machine,
                input=scheduler.ScheduleTargetInput.from_object(dict(schedule_input(tenant))),
                dead_letter_queue=queue,
                retry_attempts=retry_attempts,
                max_event_age=max_event_age,
                role=role,
            ),
        )
        # The group is referenced by name (a literal), so CloudFormation needs the ordering spelled out.
        schedule.node.add_dependency(schedule_group)
        schedules[tenant.id] = schedule
    return queue, role, schedules


def failed_executions_alarm(
    scope: Construct, construct_id: str, state_machine: sfn.StateMachine, description: str
) -> cloudwatch.Alarm:
    """An alarm on any failed execution of `state_machine` within 5 minutes (missing data is not breaching)."""
    return cloudwatch.Alarm(
        scope,
        construct_id,
        metric=state_machine.metric_failed(period=Duration.minutes(5), statistic="Sum"),
        threshold=1,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        alarm_description=description,
    )


def grant_start(
    state_machine: sfn.StateMachine,
    function: ServiceFunction,
    network: Network,
    *,
    sid: str,
    environment_name: str,
) -> None:
    """Let `function` start executions of `state_machine` (IAM, and the Step Functions endpoint when it runs in
    the VPC) and tell it the state machine's ARN in `environment_name`."""
    state_machine.grant_start_execution(function.role)
    function.add_environment(environment_name, state_machine.state_machine_arn)
    network.allow_functions(
        "states",
        [function],
        sid=sid,
        actions=["states:StartExecution"],
        resources=[state_machine.state_machine_arn],
    )
