"""Starts the dreaming state machine on demand (the nightly schedules start it too), and the embedding
backfill state machine (workflows/migration_asl.py) for a migration."""

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


class StepFunctionsBackfillLauncher:
    def __init__(self, client: Any, state_machine_arn: str) -> None:
        self._client = client
        self._arn = state_machine_arn

    def start(self, tenant: str, migration_id: str) -> str:
        # One execution per migration and start: a repeated start gets a new name (executions are unique).
        name = f"backfill-{tenant}-{uuid.uuid4().hex[:12]}"[:80]
        with upstream_errors("Step Functions", "StartExecution"):
            response = self._client.start_execution(
                stateMachineArn=self._arn,
                name=name,
                input=json.dumps({"tenant": tenant, "migration_id": migration_id}),
            )
        return str(response["executionArn"])
