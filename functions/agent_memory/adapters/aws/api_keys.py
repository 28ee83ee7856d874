"""API keys in the ApiKeysTable (partition key `key_hash`), read by the API Gateway authorizer.

Only the SHA-256 of a key is stored: a leaked table does not leak usable keys, and the authorizer looks a key
up by hashing what the caller sent. The plaintext is returned once, by `create`, and never again.
Item: key_hash (S), key_id (S), tenant (S), namespaces (L of S: exact paths, `/prefix/*` or `*`),
scopes (L of S: read, write, admin), created_at (S, ISO 8601 UTC), disabled (BOOL).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from ...domain.errors import Conflict, ValidationFailed
from ...domain.identity import Scope, is_valid_pattern
from ...domain.ports import Clock
from ...domain.records import is_valid_tenant
from ..clock import SystemClock
from ._dynamo import dynamo_item, expr_values, read_flag, read_strings, read_text
from ._errors import error_code, upstream_errors

KEY_PREFIX = "amk_"


def hash_api_key(key: str) -> str:
    """Lowercase hex SHA-256 of the key as sent (the ApiKeysTable's partition key)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ApiKey:
    key_hash: str
    key_id: str
    tenant: str
    namespaces: tuple[str, ...]
    scopes: tuple[str, ...]
    created_at: str
    disabled: bool


class DynamoApiKeyStore:
    def __init__(self, table_name: str, client: Any, clock: Clock | None = None) -> None:
        self._table = table_name
        self._client = client
        self._clock = clock or SystemClock()

    def get(self, key_hash: str) -> ApiKey | None:
        with upstream_errors("DynamoDB", "GetItem"):
            item = self._client.get_item(TableName=self._table, Key=dynamo_item(key_hash=key_hash)).get(
                "Item"
            )
        if not item:
            return None
        return ApiKey(
            key_hash=read_text(item, "key_hash"),
            key_id=read_text(item, "key_id"),
            tenant=read_text(item, "tenant"),
            namespaces=tuple(read_strings(item, "namespaces")),
            scopes=tuple(read_strings(item, "scopes")),
            created_at=read_text(item, "created_at", ""),
            disabled=bool(read_flag(item, "disabled", False)),
        )

    def create(self, tenant: str, namespaces: Sequence[str], scopes: Sequence[str]) -> tuple[str, str]:
        """A new key for `tenant`; returns (plaintext key, key id). Store the plaintext now: it is not kept."""
        if not is_valid_tenant(tenant):
            raise ValidationFailed(f"invalid tenant id {tenant!r}")
        if not namespaces:
            raise ValidationFailed("an API key needs at least one namespace pattern (`*` for all)")
        bad = [p for p in namespaces if not is_valid_pattern(p)]
        if bad:
            raise ValidationFailed(f"invalid namespace patterns {bad}: use `/path`, `/path/*` or `*`")
        allowed = {s.value for s in Scope}
        unknown = sorted(set(scopes) - allowed)
        if not scopes or unknown:
            raise ValidationFailed(
                f"scopes must be a non-empty subset of {sorted(allowed)}, got {list(scopes)}"
            )
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        key_id = "key_" + secrets.token_hex(8)
        try:
            with upstream_errors("DynamoDB", "PutItem"):
                self._client.put_item(
                    TableName=self._table,
                    Item=dynamo_item(
                        key_hash=hash_api_key(key),
                        key_id=key_id,
                        tenant=tenant,
                        namespaces=list(dict.fromkeys(namespaces)),  # a list (L), never a set
                        scopes=list(dict.fromkeys(scopes)),
                        created_at=self._clock.now().isoformat(),
                        disabled=False,
                    ),
                    ConditionExpression="attribute_not_exists(key_hash)",
                )
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":  # 256 random bits: practically never
                raise Conflict("key collision; create the key again") from error
            raise
        return key, key_id

    def disable(self, key_hash: str) -> None:
        """Revoke a key (kept for audit). Takes effect once the authorizer's cached policy expires."""
        with upstream_errors("DynamoDB", "UpdateItem"):
            self._client.update_item(
                TableName=self._table,
                Key=dynamo_item(key_hash=key_hash),
                UpdateExpression="SET disabled = :true",
                ExpressionAttributeValues=expr_values(true=True),
            )
