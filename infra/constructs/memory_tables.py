"""MemoryTables: the DynamoDB tables of the service (keys and TTL attributes from the shared AWS contract)."""

from __future__ import annotations

from typing import TypedDict

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from constructs import Construct

from ..config import DeploymentConfig
from .network import DYNAMODB, Network
from .service_function import ServiceFunction

IDEMPOTENCY_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
"""Powertools idempotency records (the API and chat functions, with their own roles)."""
IDEMPOTENCY_PURGE_ACTIONS = ("dynamodb:Scan", "dynamodb:DeleteItem")
"""A purge's idempotency step (domain/erasure): find stored responses that name purged content, delete them
(the table is keyed by a hash, not by tenant, hence the Scan)."""
KEY_USE_ACTIONS = ("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey")


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
        self,
        scope: Construct,
        construct_id: str,
        *,
        key: kms.IKey,
        network: Network,
        retain: bool,
        recovery_days: int = 7,
    ) -> None:
        super().__init__(scope, construct_id)
        self._key, self._network = key, network
        self._key_users: list[ServiceFunction] = []
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
        # gsi3: namespace-tree listings (records only; partition gsi2pk = `<t>#REC`, sort `<ns>#<created>#<id>`).
        for index, partition in (("gsi1", "gsi1pk"), ("gsi2", "gsi2pk"), ("gsi3", "gsi2pk")):
            self.memory.add_global_secondary_index(
                index_name=index,
                partition_key=_string(partition),
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

    @classmethod
    def for_deployment(
        cls, scope: Construct, construct_id: str, config: DeploymentConfig, *, key: kms.IKey, network: Network
    ) -> MemoryTables:
        recovery_days = config.retention.point_in_time_recovery_days
        return cls(
            scope,
            construct_id,
            key=key,
            network=network,
            retain=config.retain_data,
            recovery_days=recovery_days,
        )

    # Least privilege per function, beyond the tenant role (whose grant on `memory` TenantVectors owns): the
    # idempotency records and the API keys are reached with each function's own role.

    def grant_idempotency(self, function: ServiceFunction) -> None:
        """Powertools idempotency records: read, write and expire them (the API and chat functions)."""
        self.idempotency.grant(function.role, *IDEMPOTENCY_ACTIONS)
        self._grant_key_use(function)
        self._network.allow_functions(
            DYNAMODB,
            [function],
            sid="IdempotencyRecords",
            actions=IDEMPOTENCY_ACTIONS,
            resources=[self.idempotency.table_arn],
        )

    def grant_idempotency_purge(self, function: ServiceFunction) -> None:
        """A purge (domain/erasure) scans the idempotency records for stored responses that name purged
        content and deletes them: inline in the API function, or in the purge workflow's steps."""
        self.idempotency.grant(function.role, *IDEMPOTENCY_PURGE_ACTIONS)
        self._grant_key_use(function)
        self._network.allow_functions(
            DYNAMODB,
            [function],
            sid="IdempotencyPurge",
            actions=IDEMPOTENCY_PURGE_ACTIONS,
            resources=[self.idempotency.table_arn],
        )

    def grant_api_key_lookup(self, function: ServiceFunction) -> None:
        """The authorizer reads API keys by hash: GetItem only, and only decrypting with the key."""
        self.api_keys.grant(function.role, "dynamodb:GetItem")
        self._key.grant(function.role, "kms:Decrypt", "kms:DescribeKey")
        self._network.allow_functions(
            DYNAMODB,
            [function],
            sid="ApiKeyLookup",
            actions=["dynamodb:GetItem"],
            resources=[self.api_keys.table_arn],
        )

    def _grant_key_use(self, function: ServiceFunction) -> None:
        if function not in self._key_users:
            self._key_users.append(function)
            self._key.grant(function.role, *KEY_USE_ACTIONS)
