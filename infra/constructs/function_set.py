"""FunctionSet: how the stack builds its functions — one code asset, one dependencies layer, the environment they
share, and where each runs (in the VPC or on Lambda's own network) and reaches the memory files.

Every function is created in the stack's own scope under the id it has always had (`ApiFunction`, ...), so
the synthesized logical ids do not depend on this module."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_lambda as lambda_

from ..bundling import dependencies_layer_code, function_code
from ..config import FILE_FUNCTION_PROFILES, DeploymentConfig, FunctionSizing
from .memory_files import MEMORY_MOUNT_PATH, MemoryFiles
from .memory_tables import MemoryTables
from .network import Network
from .service_function import ServiceFunction

API_HANDLER = "agent_memory.handlers.api.handler"
AUTHORIZER_HANDLER = "agent_memory.handlers.authorizer.handler"
DECAY_JOB_HANDLER = "agent_memory.handlers.jobs.archive_decayed_handler"
CHAT_HANDLER = "agent_memory.handlers.chat.handler"
FILES_HANDLER = "agent_memory.handlers.files.handler"
CONSOLE_HANDLER = "agent_memory.handlers.console.handler"


class FunctionSet:
    """Builds `ServiceFunction`s with what they share. Profile `isolated`: every function in the VPC, the ones
    that work on memory files mount them. Profile `lean`: only the file function is in the VPC (it mounts the
    files and calls no AWS API); the others run outside and reach the files by invoking it."""

    def __init__(
        self,
        stack: Stack,
        config: DeploymentConfig,
        project_root: Path,
        network: Network,
        memory_files: MemoryFiles,
        tables: MemoryTables,
    ) -> None:
        self._stack, self._config, self._memory_files = stack, config, memory_files
        self.layer = lambda_.LayerVersion(
            stack,
            "DependenciesLayer",
            description="Third-party dependencies of the agent memory functions (layers/requirements.txt)",
            code=dependencies_layer_code(project_root / "layers"),
            compatible_runtimes=[lambda_.Runtime.PYTHON_3_14],
            compatible_architectures=[lambda_.Architecture.ARM_64],
        )
        self.options: dict[str, Any] = {
            "code": function_code(project_root / "functions"),
            "layer": self.layer,
            "log_retention_days": config.retention.log_days,
            "retain_logs": config.retain_data,
        }
        self.environment = {
            "AGENT_MEMORY_RUNTIME": "aws",
            "AGENT_MEMORY_TABLE": tables.memory.table_name,
            **tables.environment(),  # the declared tables (agent_memory.settings.resources)
            "AGENT_MEMORY_EMBEDDING_MODEL": config.embedding.model_id,
            "AGENT_MEMORY_EMBEDDING_DIMENSIONS": str(config.embedding.dimensions),
            # The STS interface endpoint serves the regional name only; the global one has no route here.
            "AWS_STS_REGIONAL_ENDPOINTS": "regional",
        }
        """What every function that touches data reads (the console function gets none of it)."""
        self.in_vpc: dict[str, Any] = {"vpc": network.vpc, "subnets": network.function_subnets}
        self.outside_vpc: dict[str, Any] = {"vpc": None, "subnets": None}
        self.unmounted = self.in_vpc if config.profile == "isolated" else self.outside_vpc
        """Where a function that works on no memory file runs."""
        self.file_function: ServiceFunction | None = None
        if config.profile in FILE_FUNCTION_PROFILES:
            self.file_function = ServiceFunction(
                stack,
                "FileFunction",
                handler=FILES_HANDLER,
                description="Memory files on the S3 Files mount for the functions outside the VPC (no AWS calls)",
                sizing=config.functions.files,
                # Nothing else: it reads no table, no bucket, no key; only the mount.
                environment={"AGENT_MEMORY_FILES_ROOT": MEMORY_MOUNT_PATH},
                filesystem=memory_files.mount_for("files"),
                **self.in_vpc,
                **self.options,
            )

    def add(
        self,
        construct_id: str,
        *,
        handler: str,
        description: str,
        sizing: FunctionSizing,
        environment: dict[str, str] | None = None,
        files: str | None = None,
        asynchronous: bool = False,
        shared_environment: bool = True,
    ) -> ServiceFunction:
        """A function with the shared environment (unless `shared_environment` is off: a function that touches
        no data) plus `environment`; `files`: the id under which it works on the memory files (its own mount,
        or the file function's invoke grant), None for none."""
        function = ServiceFunction(
            self._stack,
            construct_id,
            handler=handler,
            description=description,
            sizing=sizing,
            asynchronous=asynchronous,
            dead_letter_retention_days=self._config.retention.dead_letter_days,
            **self.options_for(files, environment, shared_environment=shared_environment),
        )
        if files:
            self.grant_files(function)
        return function

    def options_for(
        self,
        files: str | None = None,
        environment: dict[str, str] | None = None,
        *,
        shared_environment: bool = True,
    ) -> dict[str, Any]:
        """The keyword arguments that place a function (and a workflow construct that builds its own task
        function): code, layer, logs, network, environment, and with `files` the way to the memory files: the
        file function (`lean`, outside the VPC) or its own mount under that id (`isolated`, in the VPC)."""
        shared, extra = (self.environment if shared_environment else {}), environment or {}
        if not files:
            return {"environment": {**shared, **extra}, **self.unmounted, **self.options}
        if self.file_function is not None:
            reach = {"AGENT_MEMORY_FILE_FUNCTION": self.file_function.function.function_name}
            return {
                "environment": {**shared, **reach, **extra},
                "filesystem": None,
                **self.outside_vpc,
                **self.options,
            }
        return {
            "environment": {**shared, "AGENT_MEMORY_FILES_ROOT": MEMORY_MOUNT_PATH, **extra},
            "filesystem": self._memory_files.mount_for(files),
            **self.in_vpc,
            **self.options,
        }

    def grant_files(self, function: ServiceFunction) -> None:
        """`lean`: let `function` invoke the file function, only its unqualified ARN (callers invoke it by
        name, i.e. $LATEST), no version or alias wildcard. `isolated`: nothing (the mount is the access)."""
        if self.file_function is not None:
            self.file_function.function.grant_invoke_latest_version(function.role)

    # ------------------------------------------------------------------ the stack's functions

    def api(self) -> ServiceFunction:
        config = self._config
        environment = {"AGENT_MEMORY_ERASURE_RETENTION": erasure_retention(config)}
        if config.write_judge.model_id:
            # The optional LLM write judge runs in the API function's remembers (Converse on this model only).
            environment["AGENT_MEMORY_WRITE_JUDGE_MODEL_ID"] = config.write_judge.model_id
            environment["AGENT_MEMORY_POLICY"] = json.dumps(
                {"write_judge_tenants": list(config.write_judge.tenants)}
            )
        if config.rerank.model_id:
            # Recall's optional reranker: only this function serves POST /v1/recall.
            environment["AGENT_MEMORY_RERANK_MODEL_ID"] = config.rerank.model_id
        if config.api.iam_principals:
            environment["AGENT_MEMORY_IAM_PRINCIPALS"] = json.dumps(
                {
                    p.principal_arn: {
                        "tenant": p.tenant,
                        "namespaces": list(p.namespaces),
                        "scopes": list(p.scopes),
                    }
                    for p in config.api.iam_principals
                }
            )
        return self.add(
            "ApiFunction",
            handler=API_HANDLER,
            description="Agent memory REST API (remember, recall, memory files)",
            sizing=config.functions.api,
            environment=environment,
            files="api",
        )

    def authorizer(self) -> ServiceFunction:
        return self.add(
            "AuthorizerFunction",
            handler=AUTHORIZER_HANDLER,
            description="Bearer API key authorizer of the memory API",
            sizing=self._config.functions.authorizer,
        )

    def console(self) -> ServiceFunction:
        """The review console's static page (the API's only unauthenticated methods): its own small function
        with no environment and no grant, so an unauthenticated request never runs the 1 GB API function."""
        return self.add(
            "ConsoleFunction",
            handler=CONSOLE_HANDLER,
            description="Review console static page and assets (no data, no AWS calls)",
            sizing=self._config.functions.console,
            shared_environment=False,
        )

    def decay_job(self) -> ServiceFunction:
        """No memory-file mount: archiving decayed records touches the table and the vector index only."""
        return self.add(
            "DecayJobFunction",
            handler=DECAY_JOB_HANDLER,
            description="Scheduled forgetting job: archives records whose strength decayed",
            sizing=self._config.functions.decay_job,
            # Fallback tenant list of the job when invoked by hand without "tenants" in the event.
            environment={"AGENT_MEMORY_TENANTS": ",".join(self._config.tenant_ids)},
            asynchronous=True,
        )

    def chat(self) -> ServiceFunction | None:
        """Only with chat models configured."""
        if not self._config.chat_model_ids:
            return None
        return self.add(
            "ChatFunction",
            handler=CHAT_HANDLER,
            description="Sessions with a frozen memory snapshot and prompt-caching chat (Bedrock Converse)",
            sizing=self._config.functions.chat,
            environment={
                "AGENT_MEMORY_CHAT_PROVIDER": "bedrock",
                "AGENT_MEMORY_CHAT": json.dumps({"model_id": self._config.chat_model_ids[0]}),
            },
            files="chat",
        )

    def dreaming_options(self) -> dict[str, Any]:
        """The dreaming workflow's task function: it also runs the skills curator and the purge steps."""
        schedules = self._config.schedules
        environment = {"AGENT_MEMORY_ERASURE_RETENTION": erasure_retention(self._config)}
        if schedules.dreaming.model_id:
            environment["AGENT_MEMORY_DREAMING_MODEL_ID"] = schedules.dreaming.model_id
        if schedules.curator.model_id:
            environment["AGENT_MEMORY_CURATOR_MODEL_ID"] = schedules.curator.model_id
        return {
            "sizing": self._config.functions.dreaming,
            "dead_letter_retention_days": self._config.retention.dead_letter_days,
            **self.options_for("dreaming", environment),
        }


def erasure_retention(config: DeploymentConfig) -> str:
    """What a purge cannot erase at once (backups, file versions, logs): every purge plan lists it."""
    retention = config.retention
    return json.dumps(
        {
            "point_in_time_recovery_days": retention.point_in_time_recovery_days,
            "noncurrent_file_version_days": retention.noncurrent_file_version_days,
            "log_days": retention.log_days,
            "access_log_days": retention.access_log_days,
        }
    )
