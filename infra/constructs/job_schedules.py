"""The stack's EventBridge Scheduler group and the decay job's schedule (the workflows' per-tenant schedules are
in `workflow_parts.tenant_schedules`). Created in the caller's scope under the ids they have always had
(`JobSchedules`, `SchedulerRole`, `DecaySchedule`), so the synthesized logical ids do not depend on this
module."""

from __future__ import annotations

from typing import cast

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Stack, TimeZone, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as scheduler_targets

from ..config import DeploymentConfig
from .service_function import ServiceFunction


def job_schedule_group(stack: Stack) -> scheduler.ScheduleGroup:
    """Not retained: the group holds nothing but this stack's schedules, which CloudFormation deletes with the
    stack anyway, and a retained group would keep its fixed name, so the next deploy after `cdk destroy` would
    fail to create it (CDK's default for a ScheduleGroup is RETAIN)."""
    return scheduler.ScheduleGroup(
        stack,
        "JobSchedules",
        schedule_group_name=f"{stack.stack_name}-jobs",
        removal_policy=RemovalPolicy.DESTROY,
    )


def decay_job_schedule(
    stack: Stack,
    *,
    function: ServiceFunction,
    schedule_group: scheduler.ScheduleGroup,
    config: DeploymentConfig,
) -> tuple[iam.Role, scheduler.Schedule]:
    """The forgetting job's schedule, invoking `function` (asynchronously, retried, then dead-lettered to the
    function's own queue) with a role of its own (rather than the shared one CDK would create) so its grant
    can be reviewed here."""
    decay, tenant_ids = config.schedules.decay, config.tenant_ids
    dead_letters = function.dead_letter_queue
    if dead_letters is None:  # the decay job is built asynchronous, which always creates it
        raise RuntimeError("the decay job function has no dead-letter queue")
    role = iam.Role(
        stack,
        "SchedulerRole",
        description="EventBridge Scheduler: invoke the scheduled job functions",
        assumed_by=iam.ServicePrincipal("scheduler.amazonaws.com").with_conditions(
            {"StringEquals": {"aws:SourceAccount": stack.account}}
        ),
    )
    schedule = scheduler.Schedule(
        stack,
        "DecaySchedule",
        description="Runs the forgetting job",
        schedule_group=schedule_group,
        schedule=scheduler.ScheduleExpression.expression(decay.expression, TimeZone.of(decay.time_zone)),
        enabled=decay.enabled,
        target=scheduler_targets.LambdaInvoke(
            function.function,
            # The job works on the tenants named in its input (handlers/jobs.py): the configured ones.
            input=scheduler.ScheduleTargetInput.from_object(
                {"job": "archive_decayed", "tenants": list(tenant_ids)}
            ),
            dead_letter_queue=dead_letters,
            retry_attempts=3,
            max_event_age=Duration.hours(2),
            role=role,
        ),
    )
    # The group is referenced by name (a literal), so CloudFormation needs the ordering spelled out.
    schedule.node.add_dependency(schedule_group)
    function_id = stack.get_logical_id(cast(lambda_.CfnFunction, function.function.node.default_child))
    Validations.of(role).acknowledge(
        Acknowledgment(
            id=f"AwsSolutions-IAM5[Resource::<{function_id}.Arn>:*]",
            reason="Invoke versions/aliases of the decay job function only (CDK's standard grant).",
        )
    )
    return role, schedule
