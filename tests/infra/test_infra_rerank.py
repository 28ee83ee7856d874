"""Recall's optional Bedrock reranker in the CDK app: enabled (the test deployment), the API function — the only
one that serves recall — gets the model id and bedrock:Rerank + bedrock:InvokeModel on exactly that model, and
no other role gets either; the config refuses an unknown model and a Region Bedrock does not serve it in; off by
default (cdk.json)."""

from __future__ import annotations

from typing import Any

import pytest
from infra_support import ROOT, TEST_RERANK, TEST_TENANTS, Synthesized, as_list, policy_statements

from infra.config import ConfigError, DeploymentConfig, load_cdk_json_context

RERANK_SIDS = {"RerankApi", "RerankModel"}


def _variables(synthesized: Synthesized, logical_id: str) -> dict[str, Any]:
    return synthesized.resources[logical_id]["Properties"].get("Environment", {}).get("Variables", {})


def test_only_the_api_function_gets_the_rerank_model(profile_synthesized: Synthesized) -> None:
    functions = profile_synthesized.of_type("AWS::Lambda::Function")
    having = {k for k in functions if "AGENT_MEMORY_RERANK_MODEL_ID" in _variables(profile_synthesized, k)}
    (api,) = having
    assert api.startswith("ApiFunction")
    assert _variables(profile_synthesized, api)["AGENT_MEMORY_RERANK_MODEL_ID"] == TEST_RERANK["model_id"]


def test_the_api_role_may_rerank_with_exactly_that_model_and_no_other_role_may(
    profile_synthesized: Synthesized,
) -> None:
    api_role = profile_synthesized.logical_id("AWS::IAM::Role", "ApiFunctionRole")
    statements = {s.get("Sid"): s for s in policy_statements(profile_synthesized, api_role)}
    rerank, model = statements["RerankApi"], statements["RerankModel"]
    assert (rerank["Action"], rerank["Resource"]) == ("bedrock:Rerank", "*")  # no resource type exists
    assert model["Action"] == "bedrock:InvokeModel"
    assert (
        model["Resource"]
        == f"arn:<AWS::Partition>:bedrock:<AWS::Region>::foundation-model/{TEST_RERANK['model_id']}"
    )
    for logical_id in profile_synthesized.of_type("AWS::IAM::Role"):
        if logical_id == api_role:
            continue
        for statement in policy_statements(profile_synthesized, logical_id):
            assert statement.get("Sid") not in RERANK_SIDS, logical_id
            assert "bedrock:Rerank" not in as_list(statement["Action"]), logical_id


def test_the_rerank_wildcard_is_acknowledged_with_its_reason(synthesized: Synthesized) -> None:
    reasons = [
        reason
        for path, rule, reason in synthesized.acknowledgments
        if "ApiFunction" in path and rule.endswith("AwsSolutions-IAM5[Resource::*]")
    ]
    assert any("bedrock:Rerank" in reason for reason in reasons), reasons
    assert any("X-Ray" in reason for reason in reasons), reasons  # the role's other `*` keeps its own


def _deployment(**rerank: Any) -> dict[str, Any]:
    return {"tenants": TEST_TENANTS, "rerank": rerank}


def test_off_by_default_and_in_the_shipped_cdk_json() -> None:
    assert DeploymentConfig.from_context({"tenants": TEST_TENANTS}).rerank.model_id is None
    shipped = DeploymentConfig.model_validate(load_cdk_json_context(ROOT / "cdk.json")["agent-memory"])
    assert shipped.rerank.model_id is None


@pytest.mark.parametrize(
    ("rerank", "region", "message"),
    [
        ({"model_id": "amazon.titan-embed-text-v2:0"}, None, "not a Bedrock rerank model"),
        ({"model_id": "amazon.rerank-v1:0"}, "us-east-1", "does not serve 'amazon.rerank-v1:0' in us-east-1"),
        (
            {"model_id": "cohere.rerank-v3-5:0"},
            "eu-west-1",
            "does not serve 'cohere.rerank-v3-5:0' in eu-west-1",
        ),
    ],
)
def test_an_unknown_model_or_an_unserved_region_is_refused(
    rerank: dict[str, Any], region: str | None, message: str
) -> None:
    raw = _deployment(**rerank) | ({"region": region, "account": "123456789012"} if region else {})
    with pytest.raises((ConfigError, ValueError), match=message):
        DeploymentConfig.from_context(raw)


def test_a_served_region_names_the_alternative_when_the_model_is_not_served() -> None:
    raw = _deployment(model_id="amazon.rerank-v1:0") | {"region": "us-east-1", "account": "123456789012"}
    with pytest.raises((ConfigError, ValueError), match=r"in us-east-1 use \['cohere.rerank-v3-5:0'\]"):
        DeploymentConfig.from_context(raw)
    ok = _deployment(model_id="amazon.rerank-v1:0") | {"region": "us-west-2", "account": "123456789012"}
    assert DeploymentConfig.from_context(ok).rerank.model_id == "amazon.rerank-v1:0"


def _rerank_call(function: str, model_id: str) -> dict[str, Any]:
    """A recorded Rerank call as tests/iam/recorder.py writes it (bedrock-agent-runtime signs as `bedrock`)."""
    return {
        "service": "bedrock",
        "endpoint": "bedrock-agent-runtime",
        "operation": "Rerank",
        "params": {
            "queries": [{"type": "TEXT", "textQuery": {"text": "q"}}],
            "sources": [
                {"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": "d"}}}
            ],
            "rerankingConfiguration": {
                "type": "BEDROCK_RERANKING_MODEL",
                "bedrockRerankingConfiguration": {
                    "numberOfResults": 1,
                    "modelConfiguration": {
                        "modelArn": f"arn:aws:bedrock:us-east-1::foundation-model/{model_id}"
                    },
                },
            },
        },
        "region": "us-east-1",
        "principal": {"kind": "function", "function": function, "where": "adapters/aws/bedrock_rerank.py:1"},
        "test": "t",
    }


def test_the_iam_contract_allows_the_api_functions_rerank_and_nothing_beside_it(
    profile_synthesized: Synthesized,
) -> None:
    """The contract judges Rerank as bedrock:Rerank on `*` plus bedrock:InvokeModel on the model the request
    names, through the bedrock-agent-runtime endpoint with `isolated` (tests/iam/reference.py)."""
    from tests.iam.contract import check

    template, model = profile_synthesized.template, TEST_RERANK["model_id"]
    assert check([_rerank_call("api", model)], template, "us-east-1") == []
    other_model = check([_rerank_call("api", "amazon.rerank-v1:0")], template, "us-east-1")
    assert _denied(other_model) == {"bedrock:InvokeModel"}  # only the one model; Rerank itself is granted
    assert all("foundation-model/amazon.rerank-v1:0" in line for line in other_model)
    chat = check([_rerank_call("chat", model)], template, "us-east-1")
    assert _denied(chat) == {"bedrock:Rerank", "bedrock:InvokeModel"}  # no other function may rerank


def _denied(lines: list[str]) -> set[str]:
    """The actions of the DENY lines (`DENY <role>: <action> on <resource> — ...`)."""
    return {line.split(" on ")[0].split(": ")[-1] for line in lines if line.startswith("DENY")}
