"""The opt-in Bedrock guardrail (`guardrail.enabled` in the deployment config): synthesized with the context off
(the suite's shared template: nothing of it exists) and on (a CfnGuardrail with the prompt-attack and PII
filters, a published version, the functions that write memory files pointed at it and allowed
bedrock:ApplyGuardrail on that guardrail only, in IAM and in the bedrock-runtime endpoint policy)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from infra_support import Synthesized, infra_test_context

from infra.config import DEFAULT_BLOCKED_PII, ConfigError, DeploymentConfig
from tests.iam.contract import BINDING
from tests.iam.policy import Request, evaluate
from tests.iam.reference import ACCOUNT, needs_for
from tests.iam.template import ResolvedTemplate, resolve_template

REGION = "us-east-1"
GUARDRAIL_ID = BINDING["AGENT_MEMORY_GUARDRAIL_ID"]
WRITERS = ("api", "chat", "dreaming")
"""The functions that write memory files (API routes, chat memory tools, dreaming promotions)."""
OTHERS = ("authorizer", "jobs")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def with_guardrail(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import aws_cdk as cdk

    from app import build_app
    from infra.config import CONTEXT_KEY

    context = copy.deepcopy(infra_test_context())
    context[CONTEXT_KEY]["guardrail"] = {"enabled": True}
    context[CONTEXT_KEY]["chat_model_ids"] = ["us.anthropic.claude-haiku-4-5-20251001-v1:0"]
    outdir = tmp_path_factory.mktemp("cdk.out.guardrail")
    app = cdk.App(context=context, outdir=str(outdir))
    build_app(app)
    app.synth()  # cdk-nag findings would fail here
    name = context[CONTEXT_KEY]["stack_name"]
    return json.loads((outdir / f"{name}.template.json").read_text())


@pytest.fixture(scope="module")
def resolved(with_guardrail: dict[str, Any]) -> ResolvedTemplate:
    return resolve_template(with_guardrail, REGION, BINDING)


def _of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def _functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    from tests.iam.template import HANDLER_FUNCTIONS

    by_handler = {v: k for k, v in HANDLER_FUNCTIONS.items()}
    return {
        by_handler[r["Properties"]["Handler"]]: r["Properties"].get("Environment", {}).get("Variables", {})
        for r in _of_type(template, "AWS::Lambda::Function").values()
        if r["Properties"].get("Handler") in by_handler
    }


def _allowed(resolved: ResolvedTemplate, role: str, guardrail: str) -> bool:
    """Role policy and (for functions in the VPC) the bedrock-runtime endpoint policy both allow the call."""
    needs = needs_for("bedrock", "ApplyGuardrail", {"guardrailIdentifier": guardrail}, REGION, {})
    in_vpc = {r for f, r in resolved.function_roles().items() if f in resolved.functions_in_vpc()}
    # Outside the VPC (`lean`: every function but the file function) no endpoint policy applies
    endpoint = resolved.endpoint_policies()["bedrock-runtime"] if role in in_vpc else None
    principal = {"aws:principalarn": [resolved.get_att(role, "Arn")]}
    return all(
        evaluate(resolved.role_statements(role), Request(n.action, n.resource, n.context)).allowed
        and (
            endpoint is None
            or evaluate(
                endpoint, Request(n.action, n.resource, {**n.context, **principal}), resource_policy=True
            ).allowed
        )
        for n in needs
    )


def test_off_by_default_nothing_of_the_guardrail_is_deployed(synthesized: Synthesized) -> None:
    assert DeploymentConfig().guardrail.enabled is False
    assert not synthesized.of_type("AWS::Bedrock::Guardrail")
    assert not synthesized.of_type("AWS::Bedrock::GuardrailVersion")
    assert "ApplyGuardrail" not in json.dumps(synthesized.template)
    for variables in _functions(synthesized.template).values():
        assert "AGENT_MEMORY_GUARDRAIL_ID" not in variables


def test_on_a_guardrail_with_the_prompt_attack_and_pii_filters_is_published(
    with_guardrail: dict[str, Any],
) -> None:
    (guardrail,) = _of_type(with_guardrail, "AWS::Bedrock::Guardrail").values()
    props = guardrail["Properties"]
    assert props["ContentPolicyConfig"]["FiltersConfig"] == [
        {"Type": "PROMPT_ATTACK", "InputStrength": "HIGH", "OutputStrength": "NONE"}
    ]
    pii = props["SensitiveInformationPolicyConfig"]["PiiEntitiesConfig"]
    assert [(p["Type"], p["Action"]) for p in pii] == [(kind, "BLOCK") for kind in DEFAULT_BLOCKED_PII]
    assert not {"NAME", "EMAIL", "PHONE", "ADDRESS"} & {p["Type"] for p in pii}  # USER.md is a profile
    (version,) = _of_type(with_guardrail, "AWS::Bedrock::GuardrailVersion").values()
    (logical,) = _of_type(with_guardrail, "AWS::Bedrock::Guardrail")
    assert version["Properties"]["GuardrailIdentifier"] == {"Fn::GetAtt": [logical, "GuardrailId"]}


def test_on_only_the_functions_that_write_memory_files_are_pointed_at_it(
    with_guardrail: dict[str, Any],
) -> None:
    (logical,) = _of_type(with_guardrail, "AWS::Bedrock::Guardrail")
    (version,) = _of_type(with_guardrail, "AWS::Bedrock::GuardrailVersion")
    functions = _functions(with_guardrail)
    for name in WRITERS:
        assert functions[name]["AGENT_MEMORY_GUARDRAIL_ID"] == {"Fn::GetAtt": [logical, "GuardrailId"]}, name
        assert functions[name]["AGENT_MEMORY_GUARDRAIL_VERSION"] == {"Fn::GetAtt": [version, "Version"]}, name
    for name in OTHERS:
        assert "AGENT_MEMORY_GUARDRAIL_ID" not in functions[name], name


def test_on_apply_guardrail_is_granted_on_that_guardrail_only_to_the_writers(
    resolved: ResolvedTemplate,
) -> None:
    roles = resolved.function_roles()
    assert set(WRITERS) | set(OTHERS) <= set(roles)
    for name in WRITERS:
        assert _allowed(resolved, roles[name], GUARDRAIL_ID), name
        assert not _allowed(resolved, roles[name], "another-guardrail"), name
        arn = f"arn:aws:bedrock:{REGION}:{ACCOUNT}:guardrail/{GUARDRAIL_ID}"
        assert _allowed(resolved, roles[name], arn), name  # the id and its ARN name the same guardrail
    for name in OTHERS:
        assert not _allowed(resolved, roles[name], GUARDRAIL_ID), name
    assert not _allowed(resolved, resolved.tenant_role(), GUARDRAIL_ID)


def test_an_unknown_pii_type_fails_synth_with_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="unknown PII types"):
        DeploymentConfig.from_context({"guardrail": {"enabled": True, "blocked_pii": ["PASSWRD"]}})
