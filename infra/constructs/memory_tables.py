"""MemoryTables: the DynamoDB tables of the service (keys and TTL attributes from the shared AWS contract)."""

from __future__ import annotations

from typing import TypedDict

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from constructs import Construct


def _string(name: str) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=name, type=dynamodb.AttributeType.STRING)


class _TableOptions(TypedDict):
    """The settings every table shares (passed as keyword arguments to `dynamodb.Table`)."""

    billing_mode: dynamodb.BillingMode
    encryption: dynamodb.TableEncryption
    encryption_key: kms.IKey
    point_in_time_recovery_specification: dynamodb.PointInTimeRecoverySpecification
    deletion_protection: bool
    removal_policy: RemovalPolicy


class MemoryTables(Construct):
    """Three on-demand tables, encrypted with the service key, with point-in-time recovery:

    - `memory`: records, change log and recall log. Every partition key (pk, gsi1pk, gsi2pk) starts with
      `<tenant>#`, which is what lets IAM confine a tenant with `dynamodb:LeadingKeys`.
    - `idempotency`: Powertools idempotency records (TTL `expiration`).
    - `api_keys`: SHA-256 hashes of API keys and what each may do; read only by the authorizer."""

    def __init__(
        self, scope: Construct, construct_id: str, *, key: kms.IKey, retain: bool, recovery_days: int = 7
    ) -> None:
        super().__init__(scope, construct_id)
        removal = RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY
        common: _TableOptions = {
            "billing_mode": dynamodb.BillingMode.PAY_PER_REQUEST,
            "encryption": dynamodb.TableEncryption.CUSTOMER_MANAGED,
            "encryption_key": key,
            "point_in_time_recovery_specification": dynamodb.PointInTimeRecoverySpecification(
                # The window in which a purged item can still be restored (erasure, docs/security.md).
                point_in_time_recovery_enabled=True,
                recovery_period_in_days=recovery_days,
            ),
            "deletion_protection": retain,
            "removal_policy": removal,
        }

        self.memory = dynamodb.Table(
            self,
            "Memory",
            partition_key=_string("pk"),
            sort_key=_string("sk"),
            time_to_live_attribute="expires_at",
            **common,
        )
        for index in ("gsi1", "gsi2"):
            self.memory.add_global_secondary_index(
                index_name=index,
                partition_key=_string(f"{index}pk"),
                sort_key=_string(f"{index}sk"),
                projection_type=dynamodb.ProjectionType.ALL,
            )

        self.idempotency = dynamodb.Table(
            self,
            "Idempotency",
            partition_key=_string("id"),
            time_to_live_attribute="expiration",
            **common,
        )

        self.api_keys = dynamodb.Table(self, "ApiKeys", partition_key=_string("key_hash"), **common)
