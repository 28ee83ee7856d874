"""Translate AWS failures that survive botocore's retries into domain errors.

Every adapter call runs inside `upstream_errors(...)`: throttling, 5xx and connection failures become
`UpstreamUnavailable` (HTTP 503, safe to retry later); anything else is re-raised unchanged, because it means
a bug or a misconfiguration that a retry would not fix and that must stay visible in the logs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from ...domain.errors import UpstreamUnavailable

RETRYABLE_ERROR_CODES = frozenset(
    {
        # DynamoDB
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "ThrottlingException",
        "InternalServerError",
        "LimitExceededException",
        # S3 Vectors
        "TooManyRequestsException",
        "ServiceUnavailableException",
        "InternalServerException",
        "RequestTimeoutException",
        # Bedrock
        "ModelNotReadyException",
        "ModelTimeoutException",
        # generic
        "ServiceUnavailable",
        "Throttling",
        "SlowDown",
    }
)
"""Error codes that mean "try again later", never "your request is wrong"."""

CONNECTION_ERRORS: tuple[type[Exception], ...] = (
    EndpointConnectionError,
    ConnectTimeoutError,
    ReadTimeoutError,
    ConnectionClosedError,
)


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def is_retryable(error: Exception) -> bool:
    if isinstance(error, CONNECTION_ERRORS):
        return True
    if isinstance(error, ClientError):
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        return error_code(error) in RETRYABLE_ERROR_CODES or status >= 500
    return False


@contextmanager
def upstream_errors(service: str, operation: str) -> Iterator[None]:
    try:
        yield
    except (ClientError, *CONNECTION_ERRORS) as error:
        if not is_retryable(error):
            raise
        code = error_code(error) if isinstance(error, ClientError) else type(error).__name__
        raise UpstreamUnavailable(
            f"{service} is unavailable or throttling ({code}) during {operation}; retry in a few seconds",
            service=service,
            operation=operation,
            aws_error=code,
        ) from error
