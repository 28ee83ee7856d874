"""`Network.allow` declares a call one caller at a time (issue 31: constructs own their grants): callers of one
`sid` share one endpoint statement, each role added to its `aws:PrincipalArn` list, and a second declaration of
a `sid` with other actions or resources is refused instead of silently widening or splitting the statement."""

from __future__ import annotations

from typing import Any

import pytest
from infra_support import Deferred

from infra.config import NetworkConfig

cdk = Deferred("aws_cdk")  # the jsii kernel: started by the worker that runs these tests, not at collection
iam = Deferred("aws_cdk.aws_iam")
constructs = Deferred("infra.constructs")


def _network() -> tuple[cdk.Stack, constructs.Network, list[iam.Role]]:
    stack = cdk.Stack(cdk.App())
    network = constructs.Network(
        stack,
        "Network",
        config=NetworkConfig(interface_endpoints=("sts",), flow_logs=False),
        endpoint_azs=1,
        dynamodb_endpoint=False,
    )
    roles = [
        iam.Role(stack, f"Role{i}", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com")) for i in range(3)
    ]
    return stack, network, roles


def _statements(stack: cdk.Stack) -> list[dict[str, Any]]:
    template = cdk.assertions.Template.from_stack(stack).to_json()
    (endpoint,) = [
        r
        for r in template["Resources"].values()
        if r["Type"] == "AWS::EC2::VPCEndpoint" and "PolicyDocument" in r["Properties"]
    ]
    return list(endpoint["Properties"]["PolicyDocument"]["Statement"])


def _callers(statement: dict[str, Any]) -> list[str]:
    return [arn["Fn::GetAtt"][0] for arn in statement["Condition"]["ArnEquals"]["aws:PrincipalArn"]]


def test_callers_of_one_sid_share_one_statement() -> None:
    stack, network, (first, second, other) = _network()
    for role in (first, second, first):
        network.allow("sts", roles=[role], sid="Creds", actions=["sts:AssumeRole"], resources=["*"])
    network.allow("sts", roles=[other], sid="Other", actions=["sts:GetCallerIdentity"], resources=["*"])
    network.check_policies()
    statements = {s["Sid"]: s for s in _statements(stack)}
    assert sorted(statements) == ["Creds", "Other"]
    ids = [stack.get_logical_id(r.node.default_child) for r in (first, second, other)]  # type: ignore[arg-type]
    assert _callers(statements["Creds"]) == ids[:2]
    assert _callers(statements["Other"]) == ids[2:]


def test_a_sid_declared_again_with_other_actions_is_refused() -> None:
    _, network, (first, second, _) = _network()
    network.allow("sts", roles=[first], sid="Creds", actions=["sts:AssumeRole"], resources=["*"])
    with pytest.raises(ValueError, match="Creds"):
        network.allow(
            "sts", roles=[second], sid="Creds", actions=["sts:AssumeRole", "sts:TagSession"], resources=["*"]
        )


def test_an_endpoint_nothing_calls_still_fails_synth() -> None:
    _, network, _ = _network()
    with pytest.raises(ValueError, match="no endpoint policy"):
        network.check_policies()
