"""API Gateway Lambda authorizer (REQUEST, or TOKEN): `Authorization: Bearer <key>` -> IAM policy + context.

Allows every method of the API's stage (`arn:aws:execute-api:<region>:<account>:<api>/<stage>/*/*`), so one
cached policy serves all routes of a key; what a key may do is decided by the API from the context it passes:
`tenant`, `namespaces` and `scopes` (comma-joined) and `key_id`. A missing, unknown or disabled key raises
`Unauthorized` (API Gateway answers 401 when the error message is exactly "Unauthorized"). A failure to read
the key table is NOT reported as Unauthorized: it propagates, API Gateway answers 500, and clients retry
instead of believing their key is bad.

Environment (settings/handlers.py): AGENT_MEMORY_API_KEYS_TABLE (required: without it the first request fails
with `Misconfigured`), POWERTOOLS_SERVICE_NAME, POWERTOOLS_LOG_LEVEL. Logging only: no tracer or metrics, so a
cold start imports no X-Ray SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.data_classes.api_gateway_authorizer_event import (
    APIGatewayAuthorizerRequestEvent,
    APIGatewayAuthorizerResponse,
    APIGatewayAuthorizerTokenEvent,
    parse_api_gateway_arn,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

from . import initialization, request_scoped

with initialization():  # the service's own modules: see initialization()
    from ..settings.handlers import get_handler_settings
    from ..wiring.process import AUTHORIZER, Lazy

if TYPE_CHECKING:
    from ..wiring.aws import ApiKeyLookup

logger = Logger()


class Unauthorized(Exception):
    """Raised with the exact message API Gateway maps to 401."""

    def __init__(self) -> None:
        super().__init__("Unauthorized")


def build_key_store() -> ApiKeyLookup:
    """The key lookup of `wiring.aws.build_authorizer` over the environment's handler settings."""
    from ..wiring.aws import build_authorizer

    return build_authorizer(get_handler_settings())


key_store: Lazy[ApiKeyLookup] = AUTHORIZER
"""Built by the first request, not at import: cold starts stay fast and tests can replace it (`set`)."""


def bearer_token(header: str | None) -> str | None:
    scheme, _, token = (header or "").strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        return None
    return token


@request_scoped
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    header: str | None
    if event.get("type") == "TOKEN":
        token_event = APIGatewayAuthorizerTokenEvent(event)
        header, method_arn = token_event.authorization_token, token_event.method_arn
    else:
        request_event = APIGatewayAuthorizerRequestEvent(event)
        header = request_event.headers.get("Authorization")  # case-insensitive in Powertools v3
        method_arn = request_event.method_arn

    token = bearer_token(header)
    if token is None:
        logger.info("denied: no bearer token")
        raise Unauthorized()
    key = key_store().find(token)
    if key is None:
        logger.info("denied: unknown key")
        raise Unauthorized()
    if key.disabled:
        logger.info("denied: disabled key", extra={"key_id": key.key_id, "tenant": key.tenant})
        raise Unauthorized()

    arn = parse_api_gateway_arn(method_arn)
    policy = APIGatewayAuthorizerResponse(
        principal_id=key.key_id,
        region=arn.region,
        aws_account_id=arn.aws_account_id,
        api_id=arn.api_id,
        stage=arn.stage,
        context={
            "tenant": key.tenant,
            "namespaces": ",".join(key.namespaces),
            "scopes": ",".join(key.scopes),
            "key_id": key.key_id,
        },
        partition=arn.partition,
    )
    policy.allow_all_routes()
    logger.info("allowed", extra={"key_id": key.key_id, "tenant": key.tenant})
    return policy.asdict()
