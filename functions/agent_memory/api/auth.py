"""Authenticators: turn an incoming request into a Principal. The tenant never comes from the body."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from aws_lambda_powertools.utilities.data_classes.common import BaseProxyEvent

from ..domain.errors import Unauthenticated
from ..domain.identity import Principal, Scope

KeyLookup = Callable[[str], Principal | None]
"""Given the plaintext bearer key, the principal it belongs to (None when unknown or disabled)."""


def bearer_token(event: BaseProxyEvent) -> str:
    header = event.headers.get("authorization") or event.headers.get("Authorization") or ""
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("send your API key as the header 'Authorization: Bearer <api key>'")
    return token.strip()


def api_key_authenticator(lookup: KeyLookup) -> Callable[[BaseProxyEvent], Principal]:
    """Local runtime: the API key is checked in-process against the hashed key file."""

    def authenticate(event: BaseProxyEvent) -> Principal:
        principal = lookup(bearer_token(event))
        if principal is None:
            raise Unauthenticated("unknown or disabled API key")
        return principal

    return authenticate


IAM_PREFIX = "/iam"
"""Routes under /iam/v1/... are the SigV4 (AWS_IAM) entrance; the resolver strips the prefix."""

IamPrincipals = Mapping[str, Principal]
"""IAM role or user ARN (`arn:aws:iam::<account>:role/<name>`) → the principal it acts as."""

_ASSUMED_ROLE = re.compile(r"^arn:(aws[a-z-]*):sts::(\d{12}):assumed-role/([^/]+)/[^/]+$")


def iam_identity_arn(user_arn: str) -> str:
    """The IAM ARN a SigV4 caller is configured under: an assumed-role session ARN becomes its role's ARN."""
    match = _ASSUMED_ROLE.match(user_arn)
    if match:
        partition, account, role = match.groups()
        return f"arn:{partition}:iam::{account}:role/{role}"
    return user_arn


def aws_authenticator(iam_principals: Callable[[], IamPrincipals]) -> Callable[[BaseProxyEvent], Principal]:
    """Lambda runtime. Bearer-key callers arrive with the token authorizer's context; callers inside AWS may
    instead sign with SigV4 on the IAM-authorized routes (`/iam/v1/...`), where API Gateway has verified the
    signature and put the caller's ARN in `requestContext.identity.userArn`. Either way the tenant comes from
    API Gateway's request context, never from the request itself."""

    def authenticate(event: BaseProxyEvent) -> Principal:
        request_context = event.get("requestContext") or {}
        if (request_context.get("authorizer") or {}).get("tenant"):
            return authorizer_context_authenticator(event)
        user_arn = (request_context.get("identity") or {}).get("userArn")
        if user_arn:
            principal = iam_principals().get(iam_identity_arn(user_arn))
            if principal is None:
                raise Unauthenticated(
                    f"IAM caller {iam_identity_arn(user_arn)} is not mapped to a tenant "
                    "(api.iam_principals in cdk.json)"
                )
            return principal
        raise Unauthenticated("request reached the API without an authorizer context or IAM identity")

    return authenticate


def authorizer_context_authenticator(event: BaseProxyEvent) -> Principal:
    """Lambda runtime: API Gateway already ran the authorizer; trust only its context (never headers or body).

    The authorizer puts tenant, namespaces and scopes (comma-joined) and key_id in its context."""
    request_context = event.get("requestContext") or {}
    context = request_context.get("authorizer") or {}
    tenant = context.get("tenant")
    if not tenant:
        raise Unauthenticated("request reached the API without an authorizer context")
    try:
        return Principal(
            tenant=tenant,
            namespaces=tuple(p for p in str(context.get("namespaces", "")).split(",") if p),
            scopes=frozenset(Scope(s) for s in str(context.get("scopes", "")).split(",") if s),
            key_id=str(context.get("key_id") or context.get("principalId") or "unknown"),
        )
    except ValueError as error:
        raise Unauthenticated(f"authorizer context is invalid: {error}") from error
