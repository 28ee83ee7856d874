"""Powertools idempotency persistence on the IdempotencyTable (key `id`, TTL attribute `expiration`)."""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

from .credentials import DEFAULT_CLIENT_CONFIG


def dynamodb_idempotency_store(
    table_name: str, client: Any | None = None, region: str | None = None
) -> DynamoDBPersistenceLayer:
    """The idempotency table is keyed by a hash of (tenant, operation, key), so it is not tenant-partitioned;
    it is read and written with the function's own role, never the tenant role."""
    client = client or boto3.client("dynamodb", region_name=region, config=DEFAULT_CLIENT_CONFIG)
    return DynamoDBPersistenceLayer(table_name=table_name, boto3_client=client)
