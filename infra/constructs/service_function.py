"""ServiceFunction: the one way this app builds a Lambda function."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from ..config import FunctionSizing

SERVICE_NAME = "agent-memory"
METRICS_NAMESPACE = "AgentMemory"

POWERTOOLS_ENVIRONMENT = {
    "POWERTOOLS_SERVICE_NAME": SERVICE_NAME,
    "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
    "POWERTOOLS_LOG_LEVEL": "INFO",
    # Responses hold memory content; traces must not copy it into X-Ray.
    "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
}

_VPC_ACCESS_POLICY = "service-role/AWSLambdaVPCAccessExecutionRole"


MAX_EVENT_AGE_HOURS = 6
"""How long Lambda keeps an asynchronous event of ours (throttled or between retries) before it goes to the
dead-letter queue: the service's maximum."""


def dead_letter_queue(scope: Construct, construct_id: str, retention_days: int, of_what: str) -> sqs.Queue:
    """An encrypted, TLS-only SQS dead-letter queue (cdk-nag's SQS3 asks a queue for its own DLQ; this one
    is the DLQ)."""
    queue = sqs.Queue(
        scope,
        construct_id,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=Duration.days(retention_days),
    )
    Validations.of(queue).acknowledge(
        Acknowledgment(
            id="AwsSolutions-SQS3", reason=f"This queue is itself the dead-letter queue of {of_what}."
        )
    )
    return queue


class ServiceFunction(Construct):
    """A function of this service: Python 3.14 on arm64, the shared code asset and dependencies layer, in
    the VPC's function subnets when given a VPC (else on Lambda's own network), Powertools environment, JSON logs into its own log group with retention,
    active tracing, its own role (which starts with nothing but logging, tracing and VPC networking) and,
    when `asynchronous`, an SQS dead-letter queue for events that still fail after Lambda's retries."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        handler: str,
        description: str,
        code: lambda_.Code,
        layer: lambda_.ILayerVersion,
        vpc: ec2.IVpc | None = None,
        subnets: ec2.SubnetSelection | None = None,
        sizing: FunctionSizing,
        log_retention_days: int,
        environment: Mapping[str, str],
        filesystem: lambda_.FileSystem | None = None,
        asynchronous: bool = False,
        dead_letter_retention_days: int = 14,
        retain_logs: bool = True,
    ) -> None:
        super().__init__(scope, construct_id)
        self.handler_module = handler.split(".")[-2]
        """Its handler module (`agent_memory.handlers.<module>`): the name declarations give it."""
        self.log_group = self._log_group(log_retention_days, retain_logs)
        self.role = self._role(construct_id, in_vpc=vpc is not None)
        self.log_group.grant_write(self.role)
        self.dead_letter_queue: sqs.Queue | None = None
        if asynchronous:
            self.dead_letter_queue = dead_letter_queue(
                self, "DeadLetterQueue", dead_letter_retention_days, "the function and its schedule"
            )

        self.function = lambda_.Function(
            self,
            "Function",
            description=description,
            runtime=lambda_.Runtime.PYTHON_3_14,
            architecture=lambda_.Architecture.ARM_64,
            handler=handler,
            code=code,
            layers=[layer],
            role=self.role,
            memory_size=sizing.memory_mb,
            timeout=Duration.seconds(sizing.timeout_seconds),
            vpc=vpc,
            vpc_subnets=subnets,
            filesystem=filesystem,
            tracing=lambda_.Tracing.ACTIVE,
            logging_format=lambda_.LoggingFormat.JSON,
            application_log_level_v2=lambda_.ApplicationLogLevel.INFO,
            system_log_level_v2=lambda_.SystemLogLevel.WARN,
            log_group=self.log_group,
            environment={**POWERTOOLS_ENVIRONMENT, **environment},
            dead_letter_queue=self.dead_letter_queue,
            retry_attempts=2 if asynchronous else None,
            max_event_age=Duration.hours(MAX_EVENT_AGE_HOURS) if asynchronous else None,
        )

        self._acknowledge(in_vpc=vpc is not None)

    def _log_group(self, retention_days: int, retain: bool) -> logs.LogGroup:
        log_group = logs.LogGroup(
            self,
            "Logs",
            removal_policy=RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY,
        )
        # Only the values in config.LOG_RETENTION_DAYS reach here, all valid for CloudWatch Logs.
        cfn_log_group = cast(logs.CfnLogGroup, log_group.node.default_child)
        cfn_log_group.retention_in_days = retention_days
        return log_group

    def _role(self, construct_id: str, *, in_vpc: bool) -> iam.Role:
        return iam.Role(
            self,
            "Role",
            description=f"Execution role of {construct_id}",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            # In the VPC: the AWS-managed minimum for the function's network interfaces. Outside: nothing
            # beyond the log group and tracing grants.
            managed_policies=(
                [iam.ManagedPolicy.from_aws_managed_policy_name(_VPC_ACCESS_POLICY)] if in_vpc else []
            ),
        )

    def _acknowledge(self, *, in_vpc: bool) -> None:
        Validations.of(self.role).acknowledge(
            Acknowledgment(
                id="AwsSolutions-IAM5[Resource::*]",
                reason="X-Ray PutTraceSegments/PutTelemetryRecords support no resource-level permissions.",
            ),
        )
        if not in_vpc:
            return
        policy_arn = f"arn:<AWS::Partition>:iam::aws:policy/{_VPC_ACCESS_POLICY}"
        Validations.of(self.role).acknowledge(
            Acknowledgment(
                id=f"AwsSolutions-IAM4[Policy::{policy_arn}]",
                reason="AWS-maintained minimum for Lambda's VPC network interfaces; the EC2 ENI actions it "
                "grants support no resource-level scoping.",
            ),
        )
        # Egress stays open: DynamoDB is reached through a gateway endpoint whose prefix-list id an
        # environment-agnostic template cannot name. Without NAT the subnets have no route to the internet, and
        # every endpoint's policy admits only the calls the stack declares (Network.allow).
        Validations.of(self).acknowledge(
            Acknowledgment(
                id="@aws-cdk/aws-ec2:ipv4IgnoreEgressRule",
                reason="Functions keep allow-all egress (gateway endpoint prefix lists are unknown at "
                "synth); the NFS rule to the mount targets is implied by it.",
            )
        )

    def add_environment(self, name: str, value: str) -> None:
        self.function.add_environment(name, value)
