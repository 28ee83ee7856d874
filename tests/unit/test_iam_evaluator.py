"""The IAM contract's policy evaluator (tests/iam/policy.py) and call mapping (tests/iam/reference.py)."""

from __future__ import annotations

import pytest

from tests.iam.policy import Request, Unsupported, evaluate, substitute
from tests.iam.reference import dependent_actions, needs_for

TABLE_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/MemoryTable"
ITEMS = {
    "Effect": "Allow",
    "Action": ["dynamodb:GetItem", "dynamodb:Query"],
    "Resource": [TABLE_ARN, f"{TABLE_ARN}/index/*"],
    "Condition": {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["${aws:PrincipalTag/tenant}#*"]}},
}
INDEX = {
    "Effect": "Allow",
    "Action": "s3vectors:QueryVectors",
    "Resource": "arn:aws:s3vectors:us-east-1:123456789012:bucket/b/index/mem-${aws:PrincipalTag/tenant}",
}


def _ctx(tenant: str, **extra: list[str]) -> dict[str, list[str]]:
    return {"aws:principaltag/tenant": [tenant], **{k.lower(): v for k, v in extra.items()}}


def test_allow_needs_action_resource_and_condition() -> None:
    request = Request("dynamodb:GetItem", TABLE_ARN, _ctx("acme", **{"dynamodb:leadingkeys": ["acme#m1"]}))
    assert evaluate([ITEMS], request).allowed


def test_actions_match_case_insensitively_and_by_wildcard() -> None:
    statement = {"Effect": "Allow", "Action": "DynamoDB:Get*", "Resource": "*"}
    assert evaluate([statement], Request("dynamodb:GetItem", TABLE_ARN)).allowed
    assert not evaluate([statement], Request("dynamodb:PutItem", TABLE_ARN)).allowed


def test_policy_variable_confines_a_session_to_its_own_index() -> None:
    own = "arn:aws:s3vectors:us-east-1:123456789012:bucket/b/index/mem-acme"
    other = "arn:aws:s3vectors:us-east-1:123456789012:bucket/b/index/mem-globex"
    assert evaluate([INDEX], Request("s3vectors:QueryVectors", own, _ctx("acme"))).allowed
    assert not evaluate([INDEX], Request("s3vectors:QueryVectors", other, _ctx("acme"))).allowed


def test_a_missing_policy_variable_matches_nothing() -> None:
    own = "arn:aws:s3vectors:us-east-1:123456789012:bucket/b/index/mem-acme"
    assert not evaluate([INDEX], Request("s3vectors:QueryVectors", own, {})).allowed
    assert substitute("a/${aws:PrincipalTag/tenant}", {}) is None
    assert substitute("literal-${*}", {}) is not None


def test_leading_keys_of_another_tenant_are_denied() -> None:
    keys = {"dynamodb:leadingkeys": ["acme#m1", "globex#m2"]}
    assert not evaluate([ITEMS], Request("dynamodb:GetItem", TABLE_ARN, _ctx("acme", **keys))).allowed


def test_for_all_values_with_no_keys_is_vacuously_true() -> None:
    """The documented pitfall: a request with no partition key passes ForAllValues, which is why the tenant
    role never grants Scan."""
    assert evaluate([ITEMS], Request("dynamodb:Query", TABLE_ARN, _ctx("acme"))).allowed


def test_explicit_deny_wins_over_allow() -> None:
    deny = {"Effect": "Deny", "Action": "dynamodb:*", "Resource": "*"}
    request = Request("dynamodb:GetItem", TABLE_ARN, _ctx("acme", **{"dynamodb:leadingkeys": ["acme#1"]}))
    decision = evaluate([ITEMS, deny], request)
    assert not decision.allowed and decision.reason == "explicit deny"


def test_not_action_and_not_resource() -> None:
    statement = {"Effect": "Allow", "NotAction": "iam:*", "NotResource": f"{TABLE_ARN}/index/*"}
    assert evaluate([statement], Request("dynamodb:GetItem", TABLE_ARN)).allowed
    assert not evaluate([statement], Request("iam:PassRole", TABLE_ARN)).allowed
    assert not evaluate([statement], Request("dynamodb:Query", f"{TABLE_ARN}/index/gsi1")).allowed


def test_null_and_string_equals_conditions() -> None:
    statement = {
        "Effect": "Allow",
        "Action": "sts:AssumeRole",
        "Resource": "*",
        "Condition": {
            "Null": {"aws:RequestTag/tenant": "false"},
            "ForAllValues:StringEquals": {"aws:TagKeys": ["tenant"]},
        },
    }
    tagged = {"aws:requesttag/tenant": ["acme"], "aws:tagkeys": ["tenant"]}
    assert evaluate([statement], Request("sts:AssumeRole", "r", tagged)).allowed
    assert not evaluate([statement], Request("sts:AssumeRole", "r", {})).allowed
    extra = {"aws:requesttag/tenant": ["acme"], "aws:tagkeys": ["tenant", "admin"]}
    assert not evaluate([statement], Request("sts:AssumeRole", "r", extra)).allowed


def test_unknown_operators_are_refused_not_guessed() -> None:
    statement = {
        "Effect": "Allow",
        "Action": "*",
        "Resource": "*",
        "Condition": {"IpAddress": {"aws:SourceIp": "1.2.3.4"}},
    }
    with pytest.raises(Unsupported):
        evaluate([statement], Request("s3:GetObject", "x", {"aws:sourceip": ["1.2.3.4"]}))


def test_dynamodb_calls_map_to_item_actions_with_their_leading_keys() -> None:
    schemas = {"MemoryTable": {None: "pk", "gsi1": "gsi1pk"}}
    transact = {
        "TransactItems": [
            {"Put": {"TableName": "MemoryTable", "Item": {"pk": {"S": "acme#r1"}, "sk": {"S": "x"}}}},
            {
                "ConditionCheck": {
                    "TableName": "MemoryTable",
                    "Key": {"pk": {"S": "acme#r2"}, "sk": {"S": "y"}},
                }
            },
        ]
    }
    needs = needs_for("dynamodb", "TransactWriteItems", transact, "us-east-1", schemas)
    assert [(n.action, n.context["dynamodb:leadingkeys"]) for n in needs] == [
        ("dynamodb:PutItem", ["acme#r1"]),
        ("dynamodb:ConditionCheckItem", ["acme#r2"]),
    ]
    query = {
        "TableName": "MemoryTable",
        "IndexName": "gsi1",
        "KeyConditionExpression": "#p = :p AND begins_with(gsi1sk, :s)",
        "ExpressionAttributeNames": {"#p": "gsi1pk"},
        "ExpressionAttributeValues": {":p": {"S": "acme#/ns"}, ":s": {"S": "x"}},
    }
    (need,) = needs_for("dynamodb", "Query", query, "us-east-1", schemas)
    assert need.resource == f"{TABLE_ARN}/index/gsi1"
    assert need.context["dynamodb:leadingkeys"] == ["acme#/ns"]


def test_query_vectors_needs_get_vectors_as_the_reference_says() -> None:
    assert dependent_actions("s3vectors", "QueryVectors") == ["s3vectors:GetVectors"]
    params = {"vectorBucketName": "b", "indexName": "mem-acme"}
    actions = [n.action for n in needs_for("s3vectors", "QueryVectors", params, "us-east-1", {})]
    assert actions == ["s3vectors:QueryVectors", "s3vectors:GetVectors"]


def test_assume_role_with_tags_needs_tag_session() -> None:
    params = {"RoleArn": "arn:aws:iam::123456789012:role/T", "Tags": [{"Key": "tenant", "Value": "acme"}]}
    needs = needs_for("sts", "AssumeRole", params, "us-east-1", {})
    assert [n.action for n in needs] == ["sts:AssumeRole", "sts:TagSession"]
    assert needs[0].context["aws:requesttag/tenant"] == ["acme"]


def test_an_unmapped_service_is_an_error_not_a_pass() -> None:
    with pytest.raises(KeyError):
        needs_for("sqs", "SendMessage", {}, "us-east-1", {})


def test_endpoint_policies_take_everyone_narrowed_by_the_principal_arn() -> None:
    role = "arn:aws:iam::123456789012:role/Api"
    endpoint = {
        "Effect": "Allow",
        "Principal": "*",
        "Action": "states:StartExecution",
        "Resource": "*",
        "Condition": {"ArnEquals": {"aws:PrincipalArn": [role]}},
    }
    allowed = Request("states:StartExecution", "sm", {"aws:principalarn": [role]})
    other = Request("states:StartExecution", "sm", {"aws:principalarn": ["arn:aws:iam::123456789012:role/X"]})
    assert evaluate([endpoint], allowed, resource_policy=True).allowed
    assert not evaluate([endpoint], other, resource_policy=True).allowed
    with pytest.raises(Unsupported):  # a Principal in an identity policy is a mistake, not a match
        evaluate([endpoint], allowed)
    with pytest.raises(Unsupported):  # Federated and CanonicalUser principals are not implemented
        evaluate([{**endpoint, "Principal": {"Federated": "x"}}], allowed, resource_policy=True)


def test_resource_policies_match_named_principals_and_the_resource_they_are_attached_to() -> None:
    role = "arn:aws:iam::123456789012:role/Api"
    trust = {
        "Effect": "Allow",
        "Principal": {"AWS": [role]},
        "Action": ["sts:AssumeRole", "sts:TagSession"],  # a trust policy names no Resource
        "Condition": {"Null": {"aws:RequestTag/tenant": "false"}},
    }
    tagged = {"aws:requesttag/tenant": ["acme"]}
    assert evaluate(
        [trust], Request("sts:TagSession", "r", tagged, principal=role), resource_policy=True
    ).allowed
    other = "arn:aws:iam::123456789012:role/Authorizer"
    assert not evaluate(
        [trust], Request("sts:AssumeRole", "r", tagged, principal=other), resource_policy=True
    ).allowed
    assert not evaluate(
        [trust], Request("sts:AssumeRole", "r", {}, principal=role), resource_policy=True
    ).allowed
    topic = {
        "Effect": "Allow",
        "Principal": {"Service": "cloudwatch.amazonaws.com"},
        "Action": "sns:Publish",
        "Resource": "t",
    }
    assert evaluate(
        [topic], Request("sns:Publish", "t", principal="cloudwatch.amazonaws.com"), resource_policy=True
    ).allowed
    assert not evaluate(
        [topic], Request("sns:Publish", "t", principal="events.amazonaws.com"), resource_policy=True
    ).allowed
    tls = {
        "Effect": "Deny",
        "Principal": {"AWS": "*"},
        "Action": "s3:*",
        "Resource": "*",
        "Condition": {"NumericLessThan": {"s3:TlsVersion": 1.2}},
    }
    assert (
        evaluate([tls], Request("s3:GetObject", "o", {"s3:tlsversion": ["1.0"]}), resource_policy=True).reason
        == "explicit deny"
    )
    assert not evaluate(
        [tls], Request("s3:GetObject", "o", {"s3:tlsversion": ["1.3"]}), resource_policy=True
    ).statement
