"""What a Lambda cold start imports, checked structurally (no wall-clock limits: bench/cold_start.py measures).

Each handler module is imported in a fresh interpreter with the environment the Lambda runtime sets, and the
test asserts what must *not* be loaded then: services and adapters (built on the first request), the
OpenAPI object model (only /swagger needs it), libraries X-Ray would patch if Tracer patched everything, and
the write-path regular expressions (compiled on first use), and the request and record models (built on
first use)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agent_memory.domain.patterns import LazyPattern, lazy

FUNCTIONS = Path(__file__).resolve().parents[2] / "functions"
HANDLERS = ["api", "authorizer", "chat", "jobs", "dreaming", "files"]
NEVER_AT_IMPORT = [
    "aws_lambda_powertools.event_handler.openapi.models",  # the OpenAPI object model: /swagger only
    # services are built by the first invocation: only wiring/process.py's lazy slots load with a handler
    "agent_memory.wiring.aws",
    "agent_memory.wiring.aws_parts",
    "agent_memory.wiring.local",
    "agent_memory.wiring.parts",
    "agent_memory.wiring.config",
    "agent_memory.adapters.aws.dynamodb_store",
    "agent_memory.adapters.local.sqlite_store",
    "boto3",  # clients are created with the services (the authorizer's too, on its first request)
    "httpx",  # installed locally; Tracer patches botocore only
    "requests",
    "numpy",
]

PROBE = """
import json, sys
import agent_memory.handlers.{handler}
from agent_memory.domain import safety, text
from agent_memory.domain.memory import classify, contradiction
from agent_memory.domain.patterns import LazyPattern
compiled = [
    f"{{module.__name__}}.{{name}}"
    for module in (classify, contradiction, safety, text)
    for name, value in vars(module).items()
    if isinstance(value, LazyPattern) and value._compiled is not None
]
from agent_memory.domain.model import Model
def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)
built = sorted(f"{{m.__module__}}.{{m.__name__}}" for m in subclasses(Model) if m.__pydantic_complete__)
print(json.dumps({{"modules": sorted(sys.modules), "compiled": compiled, "built": built}}))
"""


def _import_in_lambda_environment(handler: str) -> dict:
    env = {
        **os.environ,
        "LAMBDA_TASK_ROOT": str(FUNCTIONS),
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.14",
        "AWS_LAMBDA_FUNCTION_NAME": f"agent-memory-{handler}",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AGENT_MEMORY_API_KEYS_TABLE": "keys",
        "PYTHONPATH": str(FUNCTIONS),
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(handler=handler)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=FUNCTIONS,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("handler", HANDLERS)
def test_a_cold_start_loads_neither_services_nor_swagger_nor_unused_libraries(handler):
    loaded = set(_import_in_lambda_environment(handler)["modules"])
    assert f"agent_memory.handlers.{handler}" in loaded
    assert "agent_memory.wiring.process" in loaded or handler == "console"
    expected_absent = NEVER_AT_IMPORT
    assert [module for module in expected_absent if module in loaded] == []


def test_only_the_api_function_loads_the_api_routes():
    for handler in ("jobs", "authorizer", "dreaming", "files"):
        loaded = set(_import_in_lambda_environment(handler)["modules"])
        assert "agent_memory.api.app" not in loaded, handler


@pytest.mark.parametrize("handler", ["api", "chat"])
def test_a_handler_loads_the_sessions_configuration_but_not_the_session_services(handler):
    # Settings hold the sessions wing's configuration; the services load with the first request (wiring).
    loaded = set(_import_in_lambda_environment(handler)["modules"])
    assert "agent_memory.domain.sessions.config" in loaded
    services = ["chat", "sessions", "prompt_cache", "ports", "snapshot_text"]
    assert [m for m in services if f"agent_memory.domain.sessions.{m}" in loaded] == []


def test_write_path_patterns_are_not_compiled_by_the_import():
    assert _import_in_lambda_environment("api")["compiled"] == []


def test_request_and_record_models_are_built_on_first_use_not_by_the_import():
    built = _import_in_lambda_environment("api")["built"]
    # Only the configuration models the settings instantiate as defaults are built at import.
    assert [name for name in built if ".api." in name or name.endswith(".MemoryRecord")] == []
    assert all(
        name.rsplit(".", 1)[1].endswith(
            ("Config", "Policy", "Weights", "Caps", "Profile", "Budget", "Windows")
        )
        for name in built
    )


def test_a_lazy_pattern_compiles_once_on_first_use_and_behaves_as_the_compiled_pattern():
    source, flags = r"(?P<word>colou?r)\s+(\w+)", re.IGNORECASE
    pattern, reference = lazy(source, flags), re.compile(source, flags)
    assert isinstance(pattern, LazyPattern) and pattern._compiled is None
    text = "Colour blue, color red"
    assert pattern.search(text).group("word") == reference.search(text).group("word") == "Colour"
    compiled = pattern._compiled
    assert compiled is not None and compiled.pattern == source and compiled.flags & re.IGNORECASE
    assert [m.span() for m in pattern.finditer(text)] == [m.span() for m in reference.finditer(text)]
    assert pattern.sub(r"\2", text) == reference.sub(r"\2", text)
    assert pattern._compiled is compiled  # compiled once
    assert pattern.pattern == source and pattern.groupindex == reference.groupindex
