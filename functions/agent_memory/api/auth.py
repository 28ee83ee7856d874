"""Authenticators: turn an incoming request into a Principal. The tenant never comes from the body."""

from __future__ import annotations

from collections.abc import Callable

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
