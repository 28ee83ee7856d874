"""The set-up the Lambda entry points share (handlers/_runtime.py, settings/handlers.py): values built on the
first invocation and kept, the tenants an invocation sweeps, the metrics namespace, and that no handler reads
the environment except through the settings modules."""

from __future__ import annotations

import ast
from pathlib import Path

import aws_xray_sdk.core  # noqa: F401  # opens its UDP emitter socket on import: before sockets are disabled
import pytest

from agent_memory.domain.errors import ValidationFailed
from agent_memory.handlers._runtime import Lazy, powertools, tenants_of
from agent_memory.settings.handlers import HandlerSettings, get_handler_settings

HANDLERS = Path(__file__).resolve().parents[2] / "functions" / "agent_memory" / "handlers"


def test_a_lazy_value_is_built_by_the_first_use_only_and_can_be_replaced():
    builds: list[int] = []
    value = Lazy(lambda: builds.append(1) or len(builds))
    assert builds == []  # nothing at creation (import)
    assert value() == 1 and value() == 1 and builds == [1]
    value.set(42)
    assert value() == 42
    value.set(None)  # the next use builds again
    assert value() == 2 and builds == [1, 1]


@pytest.mark.parametrize(
    ("event", "fallback", "expected"),
    [
        ({"tenants": ["acme", "globex", "acme"]}, ["initech"], ["acme", "globex"]),
        ({"tenant": "acme"}, ["initech"], ["acme"]),
        ({}, ("initech", "acme"), ["initech", "acme"]),
        ({"tenants": []}, ["initech"], ["initech"]),
        ({}, (), []),
    ],
)
def test_the_tenants_of_an_invocation_are_its_own_else_the_configured_ones(event, fallback, expected):
    assert tenants_of(event, fallback) == expected


@pytest.mark.parametrize(
    ("event", "fallback"),
    [
        ({"tenants": ["acme", "../etc"]}, ()),
        ({"tenants": [7]}, ()),
        ({"tenants": "acme"}, ()),
        ({}, ["Not A Tenant"]),
    ],
)
def test_an_invalid_tenant_is_refused_with_a_domain_error(event, fallback):
    with pytest.raises(ValidationFailed):
        tenants_of(event, fallback)


def test_handler_settings_come_from_the_environment_with_a_namespace_that_is_never_empty():
    assert HandlerSettings.from_environment({}) == HandlerSettings("AgentMemory", "", ())
    parsed = HandlerSettings.from_environment(
        {
            "POWERTOOLS_METRICS_NAMESPACE": "",
            "AGENT_MEMORY_API_KEYS_TABLE": "Keys",
            "AGENT_MEMORY_TENANTS": "acme, globex,,",
        }
    )
    assert parsed == HandlerSettings("AgentMemory", "Keys", ("acme", "globex"))


def test_powertools_use_the_configured_metrics_namespace(handler_env):
    handler_env.setenv("POWERTOOLS_METRICS_NAMESPACE", "Elsewhere")
    assert get_handler_settings().metrics_namespace == "Elsewhere"
    logger, tracer, metrics = powertools("dreaming")
    assert metrics.namespace == "Elsewhere" and logger.service == "dreaming" and tracer.service == "dreaming"


def test_handlers_read_the_environment_only_through_the_settings_modules():
    readers = []
    for path in sorted(HANDLERS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in {"environ", "getenv", "environb"}:
                readers.append(f"{path.name}:{node.lineno}")
            if isinstance(node, ast.Import | ast.ImportFrom) and any(
                alias.name in {"os", "environ", "getenv"} for alias in node.names
            ):
                readers.append(f"{path.name}:{node.lineno}")
    assert readers == []
