"""The dreaming function: the task function of the dreaming workflow (and of the curator and purge workflows
that run on it), built inside the dreaming workflow's construct (`Workflow`, infra/constructs/workflow.py)."""

from __future__ import annotations

import json
from collections.abc import Callable

from constructs import Construct

from ..config import DeploymentConfig
from .function_set import FunctionSet
from .service_function import ServiceFunction

DREAMING_HANDLER = "agent_memory.handlers.dreaming.handler"
"""One function serves every task of the state machines it runs; it dispatches on the payload's `task`."""
DREAMING_METRICS_SERVICE = "dreaming"
"""The `service` dimension of the sweep's metrics (handlers/dreaming.py: `Metrics(service="dreaming")`)."""


def dreaming_function(
    config: DeploymentConfig, functions: FunctionSet
) -> Callable[[Construct], ServiceFunction]:
    """The dreaming function (a `ServiceFunction` mounting the memory files, invoked synchronously by Step
    Functions) in the scope it is given. Its role still needs its data grants (tenant role, embedding model,
    key) from the stack, like the other tenant functions."""

    def build(scope: Construct) -> ServiceFunction:
        options = functions.dreaming_options()
        environment = options.pop("environment")
        function = ServiceFunction(
            scope,
            "DreamingFunction",
            handler=DREAMING_HANDLER,
            description="Dreaming sweep tasks (list targets, Light, REM, Deep, record failure)",
            environment={
                **environment,
                # Fallback when an execution is started by hand without "tenants" in its input.
                "AGENT_MEMORY_DREAMING_TENANTS": json.dumps([t.id for t in config.tenants]),
            },
            asynchronous=False,  # Step Functions waits for each task's result
            **options,
        )
        functions.grant_files(function)  # the curator and purge steps run on it too
        return function

    return build
