"""Helpers shared by the infra tests (imported by name: `conftest` is ambiguous across test folders)."""

from __future__ import annotations

import copy
import importlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.aws.support import RERANK_MODEL  # noqa: E402


class Deferred:
    """A module imported at its first attribute use, not when the test file is collected. Importing `aws_cdk`
    (or an `infra` module that does) starts the jsii kernel, ~10 s of CPU; every xdist worker collects every
    test file, but only the worker that runs the infra tests (the `cdk` group of tests/conftest.py) needs it."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("_"):  # pytest's collection looks for markers and mocks on module attributes
            raise AttributeError(attribute)
        return getattr(importlib.import_module(self._name), attribute)


# Deliberately not the cdk.json defaults (512 dimensions, other tenants and schedule): values that can only
# come from the config prove it is used. The metric must be cosine (the runtime refuses others).
TEST_TENANTS = [
    {"id": "acme", "display_name": "Acme Corp", "time_zone": "UTC"},
    {"id": "globex-eu", "display_name": "Globex Europe", "time_zone": "Europe/Berlin"},
    # Onboarded earlier with infra/onboard.py: scheduled, but its index is not CloudFormation's
    {"id": "initech", "display_name": "Initech", "time_zone": "UTC", "create_index": False},
]
TEST_DIMENSIONS = 512
TEST_METRIC = "cosine"
TEST_SCHEDULE = {"expression": "cron(40 2 * * ? *)", "time_zone": "Europe/Berlin", "enabled": True}
TEST_DREAMING_MODEL = "eu.anthropic.claude-haiku-4-5-20251001-v1:0"
TEST_DREAMING = {
    "expression": "cron(0 3 * * ? *)",
    "enabled": True,
    "max_concurrency": 7,
    "on_demand": True,
    "model_id": TEST_DREAMING_MODEL,
}
TEST_WRITE_JUDGE_MODEL = "eu.amazon.nova-micro-v1:0"
TEST_WRITE_JUDGE = {"model_id": TEST_WRITE_JUDGE_MODEL, "tenants": ["acme"]}
"""The optional LLM write judge for tenant acme (tests/behaviour/test_write_judge_api.py calls this model)."""
TEST_RERANK = {"model_id": RERANK_MODEL}
"""Bedrock reranking for the API function's recalls (tests/aws/test_bedrock_rerank.py calls this model)."""
TEST_IAM_PRINCIPAL = {
    "principal_arn": "arn:aws:iam::123456789012:role/agent-runner",
    "tenant": "acme",
    "namespaces": ["/projects/*"],
    "scopes": ["read", "write"],
}
"""The dreaming sweep at 03:00 in each tenant's time zone; 7 parallel namespaces (the default is 4)."""


@dataclass(frozen=True)
class Synthesized:
    profile: str
    stack_name: str
    template: dict[str, Any]
    assembly_dir: Path
    synth_error: str | None
    validation_report: dict[str, Any]
    manifest: dict[str, Any]
    acknowledgments: list[tuple[str, str, str]] = field(default_factory=list)
    """(construct path, rule id, reason) of every Validations acknowledgment in the app."""

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        return self.template["Resources"]

    def of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.resources.items() if v["Type"] == resource_type}

    def logical_id(self, resource_type: str, path_fragment: str) -> str:
        """The one resource of a type whose logical id contains `path_fragment`."""
        matches = [k for k in self.of_type(resource_type) if path_fragment in k]
        assert len(matches) == 1, f"expected one {resource_type} matching {path_fragment!r}, got {matches}"
        return matches[0]


def synthesized_from(profile: str, result: dict[str, Any]) -> Synthesized:
    """A `Synthesized` of what tests/iam/synth.py returns for a context (its `synthesize`, shared by the run,
    or its `_synthesize`, for a stack a test changes on purpose)."""
    return Synthesized(
        profile=profile,
        stack_name=result["stack_name"],
        template=result["template"],
        assembly_dir=Path(result["assembly_dir"]),
        synth_error=result["synth_error"],
        validation_report=result["validation_report"],
        manifest=result["manifest"],
        acknowledgments=[tuple(entry) for entry in result["acknowledgments"]],
    )


DEFAULT_PROFILE = "lean"
"""The profile cdk.json ships (and `infra.config.DeploymentConfig.profile` defaults to)."""

FILE_WORKERS = ("ApiFunction", "JobWorkerFunction", "ChatFunction", "DreamingFunction")
"""The functions that work on memory files (logical id fragments)."""
MOUNTING_FUNCTIONS = {"lean": ("FileFunction",), "isolated": FILE_WORKERS}
"""Per profile, the functions with the S3 Files mount: `lean` mounts it into the file function only, which the
FILE_WORKERS invoke from outside the VPC; `isolated` mounts it into each of them."""


def functions_by_module(synthesized: Synthesized) -> dict[str, tuple[str, dict[str, Any]]]:
    """handler module -> (its role's logical id, its environment), for the service's own functions."""
    found = {}
    for function in synthesized.of_type("AWS::Lambda::Function").values():
        properties = function["Properties"]
        handler = properties.get("Handler", "")
        if handler.startswith("agent_memory.handlers."):
            role = properties["Role"]["Fn::GetAtt"][0]
            found[handler.split(".")[-2]] = (role, properties.get("Environment", {}).get("Variables", {}))
    return found


def infra_test_context(profile: str | None = None) -> dict[str, Any]:
    """The test deployment; `profile` overrides cdk.json's (`lean` or `isolated`)."""
    from infra.config import CONTEXT_KEY, load_cdk_json_context

    context = copy.deepcopy(load_cdk_json_context(ROOT / "cdk.json"))
    deployment = context[CONTEXT_KEY]
    if profile is not None:
        deployment["profile"] = profile
    deployment["tenants"] = TEST_TENANTS
    deployment["embedding"] = {
        **deployment["embedding"],
        "dimensions": TEST_DIMENSIONS,
        "distance_metric": TEST_METRIC,
    }
    deployment["schedules"] = {"decay": TEST_SCHEDULE, "dreaming": TEST_DREAMING}
    deployment["alarms"] = {**deployment.get("alarms", {}), "email": "oncall@example.com"}
    deployment["api"] = {**deployment.get("api", {}), "iam_principals": [TEST_IAM_PRINCIPAL]}
    deployment["write_judge"] = TEST_WRITE_JUDGE
    deployment["rerank"] = TEST_RERANK
    context["skip-layer-build"] = "true"  # no pip/PyPI during tests; the bundler has its own tests
    return context


def render(value: Any) -> Any:
    """CloudFormation intrinsics flattened to readable strings: {"Fn::Join": ["", ["a", {"Ref": "B"}]]}
    becomes "a<B>" and {"Fn::GetAtt": ["C", "Arn"]} becomes "<C.Arn>", so assertions can compare ARNs."""
    if isinstance(value, list):
        return [render(v) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((name, arg),) = value.items()
        if name == "Fn::Join":
            separator, parts = arg
            return separator.join(str(render(p)) for p in parts)
        if name == "Ref":
            return f"<{arg}>"
        if name == "Fn::GetAtt":
            return f"<{'.'.join(arg)}>"
    return {k: render(v) for k, v in value.items()}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def policy_statements(synthesized: Synthesized, role_logical_id: str) -> list[dict[str, Any]]:
    """Every statement of the inline policies attached to a role (AWS::IAM::Policy and Role.Policies)."""
    statements: list[dict[str, Any]] = []
    for policy in synthesized.of_type("AWS::IAM::Policy").values():
        roles = [r.get("Ref") for r in policy["Properties"].get("Roles", [])]
        if role_logical_id in roles:
            statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    role = synthesized.resources[role_logical_id]["Properties"]
    for inline in role.get("Policies", []):
        statements.extend(inline["PolicyDocument"]["Statement"])
    return [render(s) for s in statements]


def actions_of(statements: list[dict[str, Any]]) -> set[str]:
    return {action for s in statements for action in as_list(s["Action"])}
