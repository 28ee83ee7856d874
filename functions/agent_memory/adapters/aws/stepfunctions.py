"""Starts the dreaming state machine on demand (the nightly schedules start it too)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from ._errors import upstream_errors


class StepFunctionsDreamLauncher:
    def __init__(self, client: Any, state_machine_arn: str) -> None:
        self._client = client
        self._arn = state_machine_arn

    def start(self, tenant: str, namespaces: Sequence[str]) -> str:
        name = f"ondemand-{tenant}-{uuid.uuid4().hex[:12]}"  # execution names: at most 80 characters
        payload: dict[str, Any] = {"tenants": [tenant]}
        if namespaces:
            payload["namespaces"] = list(namespaces)
        with upstream_errors("Step Functions", "StartExecution"):
            response = self._client.start_execution(
                stateMachineArn=self._arn, name=name, input=json.dumps(payload)
            )
        return str(response["executionArn"])
