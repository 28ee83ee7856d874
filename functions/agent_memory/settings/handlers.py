"""What the Lambda entry points read from the environment themselves, before (or without) building services.

- `POWERTOOLS_METRICS_NAMESPACE`: the CloudWatch namespace of the functions' metrics (set by the stack; unset
  or empty: `AgentMemory`, since a metrics flush without a namespace fails the invocation).
- `AGENT_MEMORY_API_KEYS_TABLE`: the table the authorizer reads API keys from.
- `AGENT_MEMORY_TENANTS`: comma-separated tenants the scheduled jobs and the dreaming sweep fall back to when
  their input names none. Not validated here: the function that uses the list refuses a bad id.
- `AGENT_MEMORY_FILES_ROOT`: where the file function (`handlers/files.py`) finds the S3 Files mount.

A plain dataclass rather than pydantic-settings: the authorizer and the decay job import nothing else that
needs pydantic-settings, and their cold starts should not pay for it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

DEFAULT_METRICS_NAMESPACE = "AgentMemory"


@dataclass(frozen=True)
class HandlerSettings:
    metrics_namespace: str = DEFAULT_METRICS_NAMESPACE
    api_keys_table: str = ""
    tenants: tuple[str, ...] = ()
    files_root: str = "/mnt/memory"

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> HandlerSettings:
        env = os.environ if environ is None else environ
        return cls(
            metrics_namespace=env.get("POWERTOOLS_METRICS_NAMESPACE") or DEFAULT_METRICS_NAMESPACE,
            api_keys_table=env.get("AGENT_MEMORY_API_KEYS_TABLE", "").strip(),
            tenants=tuple(t.strip() for t in env.get("AGENT_MEMORY_TENANTS", "").split(",") if t.strip()),
            files_root=env.get("AGENT_MEMORY_FILES_ROOT", "").strip() or "/mnt/memory",
        )


@lru_cache(maxsize=1)
def get_handler_settings() -> HandlerSettings:
    return HandlerSettings.from_environment()
