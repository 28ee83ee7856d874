"""Authenticators of the Lambda runtime: the tenant comes only from API Gateway's request context."""

from __future__ import annotations

import pytest
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent

from agent_memory.api.auth import aws_authenticator, iam_identity_arn
from agent_memory.domain.errors import Unauthenticated
from agent_memory.domain.identity import Principal, Scope

ROLE = "arn:aws:iam::123456789012:role/agent-runner"
PRINCIPAL = Principal(
    tenant="acme", namespaces=("/projects/*",), scopes=frozenset({Scope.READ}), key_id="iam:r"
)


def event(authorizer=None, user_arn=None, body=None) -> APIGatewayProxyEvent:
    return APIGatewayProxyEvent(
        {
            "path": "/v1/recall",
            "httpMethod": "POST",
            "headers": {"X-Tenant": "evil"},
            "body": body,
            "requestContext": {"authorizer": authorizer, "identity": {"userArn": user_arn}},
        }
    )


def test_assumed_role_sessions_map_to_their_role():
    assert iam_identity_arn("arn:aws:sts::123456789012:assumed-role/agent-runner/session-1") == ROLE
    assert iam_identity_arn("arn:aws:iam::123456789012:user/alice") == "arn:aws:iam::123456789012:user/alice"


def test_authorizer_context_wins_and_nothing_is_read_from_headers_or_body():
    authenticate = aws_authenticator(lambda: {ROLE: PRINCIPAL})
    principal = authenticate(
        event(
            authorizer={"tenant": "beta", "namespaces": "*", "scopes": "read,write", "key_id": "k1"},
            body='{"tenant": "evil"}',
        )
    )
    assert principal.tenant == "beta" and principal.scopes == {Scope.READ, Scope.WRITE}


def test_iam_caller_gets_its_mapped_principal_and_unmapped_or_anonymous_are_refused():
    authenticate = aws_authenticator(lambda: {ROLE: PRINCIPAL})
    assert authenticate(event(user_arn="arn:aws:sts::123456789012:assumed-role/agent-runner/x")) == PRINCIPAL
    with pytest.raises(Unauthenticated, match="not mapped"):
        authenticate(event(user_arn="arn:aws:sts::123456789012:assumed-role/other/x"))
    with pytest.raises(Unauthenticated):
        authenticate(event())
