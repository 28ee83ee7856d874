"""Starts a workflow's state machine: one launcher class for every workflow, given the state machine's ARN and
what the workflow's declaration (`agent_memory.settings.workflows`) says of a start: its execution input and name."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ._errors import upstream_errors

S = TypeVar("S")


class StepFunctionsLauncher(Generic[S]):
    """`start(tenant, subject)` starts an execution of `state_machine_arn` with the workflow's input and
    execution name for them (the `DreamLauncher`, `PurgeLauncher` and `BackfillLauncher` ports) and returns
    the execution's ARN."""

    def __init__(
        self,
        client: Any,
        state_machine_arn: str,
        start_input: Callable[[str, S], dict[str, Any]],
        execution_name: Callable[[str, S], str],
    ) -> None:
        self._client = client
        self._arn = state_machine_arn
        self._input, self._name = start_input, execution_name

    def start(self, tenant: str, subject: S) -> str:
        with upstream_errors("Step Functions", "StartExecution"):
            response = self._client.start_execution(
                stateMachineArn=self._arn,
                name=self._name(tenant, subject),
                input=json.dumps(self._input(tenant, subject)),
            )
        return str(response["executionArn"])
