"""Idempotent requests (the `Idempotency-Key` header) through Powertools idempotency, whatever the store:
DynamoDB in AWS (adapters/aws/idempotency.py), SQLite locally (adapters/local/idempotency_store.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyValidationError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer
from aws_lambda_powertools.utilities.typing import LambdaContext

from ..domain.errors import Conflict, ValidationFailed

MAX_KEY_LENGTH = 128


class RequestBudget:
    """Stands in for the Lambda context outside Lambda: an in-progress record left by a crashed request
    expires after this budget instead of blocking its key until the record's TTL."""

    def __init__(self, milliseconds: int = 30_000) -> None:
        self._milliseconds = milliseconds

    def get_remaining_time_in_millis(self) -> int:
        return self._milliseconds


class IdempotentRunner:
    """Run a request once per (tenant, API key, client key): a repeat with the same body returns the stored first response
    without a second write; a repeat with a different body is refused (409)."""

    def __init__(self, persistence: BasePersistenceLayer, expires_after_seconds: int = 24 * 3600) -> None:
        self._persistence = persistence
        # The key is tenant + calling API key + client key: a client key is only unique per caller, so two API
        # keys of one tenant neither collide on nor can probe each other's keys (a 409 "already used" would
        # tell one key what the other sent). The body is validated so a reused key cannot silently return the
        # answer to a different request.
        self._config = IdempotencyConfig(
            event_key_jmespath="[tenant, caller, operation, key]",
            payload_validation_jmespath="request",
            expires_after_seconds=expires_after_seconds,
            raise_on_no_idempotency_key=True,
            use_local_cache=False,
        )
        # Powertools only calls get_remaining_time_in_millis() on the context; the stand-in provides it.
        self._config.register_lambda_context(cast(LambdaContext, RequestBudget()))

    def register_lambda_context(self, context: Any) -> None:
        """In Lambda: bound in-progress records by the invocation's remaining time."""
        self._config.register_lambda_context(context)

    def run(
        self,
        tenant: str,
        operation: str,
        key: str,
        request: dict[str, Any],
        compute: Callable[[], dict[str, Any]],
        *,
        caller: str,
    ) -> dict[str, Any]:
        """`compute()` once per (tenant, caller, operation, key); `caller` is the authenticated API key's id."""
        if not key or len(key) > MAX_KEY_LENGTH or not key.isprintable():
            raise ValidationFailed(f"Idempotency-Key must be 1-{MAX_KEY_LENGTH} printable characters")

        @idempotent_function(
            data_keyword_argument="data", persistence_store=self._persistence, config=self._config
        )
        def once(data: dict[str, Any]) -> dict[str, Any]:
            return compute()

        try:
            return once(
                data={
                    "tenant": tenant,
                    "caller": caller,
                    "operation": operation,
                    "key": key,
                    "request": request,
                }
            )
        except IdempotencyValidationError as error:
            raise Conflict(
                "this Idempotency-Key was already used with a different request body; use a new key",
                key=key,
            ) from error
        except IdempotencyAlreadyInProgressError as error:
            raise Conflict(
                "a request with this Idempotency-Key is still in progress; retry in a few seconds", key=key
            ) from error
