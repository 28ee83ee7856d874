"""PurgeWorkflow: large purges (domain/erasure, issue 18) as a Step Functions state machine run on the dreaming
function (it holds the tenant role, the memory files and, for purges, the idempotency-table grant), started
by the API function when a plan is above the inline limit; an alarm on failed executions."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from ..config import DeploymentConfig
from ..workflows.purge_asl import definition_json
from .network import Network
from .service_function import ServiceFunction
from .workflow_parts import failed_executions_alarm, grant_start, logged_state_machine


class PurgeWorkflow(Construct):
    """A STANDARD state machine built from `workflows/purge_asl.py` (logs without execution data, X-Ray on, a
    role that may invoke only `function`)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        function: lambda_.Function,
        task_timeout_seconds: int,
        log_retention_days: int,
        retain_logs: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.log_group, self.state_machine = logged_state_machine(
            self,
            definition=definition_json(
                function.function_arn, partition=stack.partition, task_timeout_seconds=task_timeout_seconds
            ),
            function=function,
            function_label="dreaming",
            log_retention_days=log_retention_days,
            retain_logs=retain_logs,
        )
        self.alarm = failed_executions_alarm(
            self,
            "PurgeExecutionsFailed",
            self.state_machine,
            "A purge execution failed after its retries; the plan kept its finished steps: "
            "read its status and execute it again.",
        )

    @classmethod
    def for_deployment(
        cls, scope: Construct, construct_id: str, config: DeploymentConfig, *, function: ServiceFunction
    ) -> PurgeWorkflow:
        """Tasks on `function` (the dreaming function: tenant role, memory files, idempotency purge grant)."""
        return cls(
            scope,
            construct_id,
            function=function.function,
            task_timeout_seconds=config.functions.dreaming.timeout_seconds,
            log_retention_days=config.retention.log_days,
            retain_logs=config.retain_data,
        )

    def grant_start(self, function: ServiceFunction, network: Network) -> None:
        """The API function starts a purge whose plan is above its inline limit."""
        grant_start(
            self.state_machine,
            function,
            network,
            sid="StartPurge",
            environment_name="AGENT_MEMORY_PURGE_STATE_MACHINE_ARN",
        )
