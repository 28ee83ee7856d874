"""The optional LLM write judge in the CDK app: configured, the API function (and only it, with the job function
that runs its large batches) gets the model id, the judged tenants in its policy, and bedrock:InvokeModel on
exactly that model; the config refuses half a setting and tenants it does not deploy."""

from __future__ import annotations

import json
from typing import Any

import pytest
from infra_support import (
    TEST_TENANTS,
    TEST_WRITE_JUDGE,
    TEST_WRITE_JUDGE_MODEL,
    Synthesized,
    policy_statements,
)

from infra.config import ConfigError, DeploymentConfig


def _environment(synthesized: Synthesized, name: str) -> dict[str, Any]:
    function = synthesized.resources[synthesized.logical_id("AWS::Lambda::Function", name)]
    return function["Properties"]["Environment"]["Variables"]


def test_the_api_function_judges_the_configured_tenants_with_the_configured_model(
    synthesized: Synthesized,
) -> None:
    environment = _environment(synthesized, "ApiFunction")
    assert environment["AGENT_MEMORY_WRITE_JUDGE_MODEL_ID"] == TEST_WRITE_JUDGE_MODEL
    assert json.loads(environment["AGENT_MEMORY_POLICY"]) == {"write_judge_tenants": ["acme"]}
    for other in ("DecayJobFunction", "ChatFunction"):
        matches = [k for k in synthesized.of_type("AWS::Lambda::Function") if other in k]
        for logical_id in matches:
            variables = synthesized.resources[logical_id]["Properties"]["Environment"]["Variables"]
            assert "AGENT_MEMORY_WRITE_JUDGE_MODEL_ID" not in variables
            assert "AGENT_MEMORY_POLICY" not in variables


def test_the_api_role_may_invoke_exactly_the_judge_model(synthesized: Synthesized) -> None:
    api_role = synthesized.logical_id("AWS::IAM::Role", "ApiFunctionRole")
    judge = [s for s in policy_statements(synthesized, api_role) if s.get("Sid") == "WriteJudgeModels"]
    assert len(judge) == 1
    (statement,) = judge
    assert statement["Action"] == "bedrock:InvokeModel"
    resources = sorted(statement["Resource"])
    foundation = TEST_WRITE_JUDGE_MODEL.split(".", 1)[1]
    assert len(resources) == 2
    assert resources[0].endswith(f":bedrock:*::foundation-model/{foundation}")
    assert resources[1].endswith(f":inference-profile/{TEST_WRITE_JUDGE_MODEL}")
    # no other role holds the judge's grant but the job function's, which runs the API's large batches and
    # imports (infra/constructs/job_worker.py): the same statement
    job_role = synthesized.logical_id("AWS::IAM::Role", "JobWorkerFunctionRole")
    assert [
        s for s in policy_statements(synthesized, job_role) if s.get("Sid") == "WriteJudgeModels"
    ] == judge
    for logical_id in synthesized.of_type("AWS::IAM::Role"):
        if logical_id not in (api_role, job_role):
            assert not any(
                s.get("Sid") == "WriteJudgeModels" for s in policy_statements(synthesized, logical_id)
            )


def _deployment(**write_judge: Any) -> dict[str, Any]:
    return {"tenants": TEST_TENANTS, "write_judge": write_judge}


def test_off_by_default() -> None:
    config = DeploymentConfig.from_context({"tenants": TEST_TENANTS})
    assert config.write_judge.model_id is None and config.write_judge.tenants == ()
    assert DeploymentConfig.from_context(_deployment(**TEST_WRITE_JUDGE)).write_judge.tenants == ("acme",)


@pytest.mark.parametrize(
    "write_judge, message",
    [
        ({"model_id": TEST_WRITE_JUDGE_MODEL}, "set both"),
        ({"tenants": ["acme"]}, "set both"),
        ({"model_id": TEST_WRITE_JUDGE_MODEL, "tenants": ["nobody"]}, "not in `tenants`"),
        ({"model_id": "not a model!", "tenants": ["acme"]}, "not a Bedrock model"),
    ],
)
def test_half_a_setting_or_an_unknown_tenant_is_refused(write_judge: dict[str, Any], message: str) -> None:
    with pytest.raises((ConfigError, ValueError), match=message):
        DeploymentConfig.from_context(_deployment(**write_judge))


def test_a_profile_of_another_geography_is_refused() -> None:
    raw = {**_deployment(**TEST_WRITE_JUDGE), "region": "us-east-1", "account": "123456789012"}
    with pytest.raises((ConfigError, ValueError), match=r"write_judge\.model_id"):
        DeploymentConfig.from_context(raw)
