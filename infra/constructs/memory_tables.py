"""MemoryTables: the DynamoDB tables of the service (keys and TTL attributes from the shared AWS contract)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypedDict

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from constructs import Construct

from agent_memory.settings import resources
from agent_memory.settings.resources import TABLES, Access, Table

from ..config import DeploymentConfig
from .network import DYNAMODB, Network
from .service_function import ServiceFunction

IDEMPOTENCY_ACTIONS = resources.IDEMPOTENCY_ACTIONS
IDEMPOTENCY_PURGE_ACTIONS = resources.IDEMPOTENCY_PURGE_ACTIONS
KEY_USE_ACTIONS = resources.KEY_USE_ACTIONS


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
    """On-demand tables, encrypted with the service key, with point-in-time recovery:

    - `memory`: records, change log and recall log. Every partition key (pk, gsi1pk, gsi2pk) starts with
      `<tenant>#`, which is what lets IAM confine a tenant with `dynamodb:LeadingKeys`.
    - every table `agent_memory.settings.resources` declares (`declared`), with the accesses it names:
      `idempotency` (Powertools idempotency records, TTL `expiration`) and `api_keys` (SHA-256 hashes of API
      keys and what each may do; read only by the authorizer)."""

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
        self._key_users: list[tuple[ServiceFunction, tuple[str, ...]]] = []
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

        self.declared: dict[str, dynamodb.Table] = {
            table.construct_id: dynamodb.Table(
                self,
                table.construct_id,
                partition_key=_string(table.partition_key),
                time_to_live_attribute=table.time_to_live,
                **common,
            )
            for table in TABLES
        }
        """Every table `agent_memory.settings.resources` declares, by its construct id."""
        self.idempotency = self.declared[resources.IDEMPOTENCY.construct_id]
        self.api_keys = self.declared[resources.API_KEYS.construct_id]

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
    # declared tables (the idempotency records, the API keys) are reached with each function's own role.

    def environment(self) -> dict[str, str]:
        """Each declared table's name under its variable, for every function that touches data."""
        return {table.variable: self.declared[table.construct_id].table_name for table in TABLES}

    def grant_declared(self, functions: Iterable[ServiceFunction | None]) -> None:
        """Every access the declarations name, to those of the stack's `functions` they name by handler module
        (a function the deployment lacks is skipped): the only grants on these tables."""
        by_module = {f.handler_module: f for f in functions if f is not None}
        for table in TABLES:
            for access in table.access:
                for name in access.functions:
                    if name not in resources.FUNCTIONS:
                        raise ValueError(
                            f"table {table.construct_id}: {access.sid} names no function {name!r}"
                        )
                    if name in by_module:
                        self.grant(table, access, by_module[name])

    def grant(self, table: Table, access: Access, function: ServiceFunction) -> None:
        """One declared access: the actions on the table (IAM), the key use they need, and for a function in
        the VPC the same call in the DynamoDB endpoint's policy (statement `access.sid`)."""
        resource = self.declared[table.construct_id]
        resource.grant(function.role, *access.actions)
        if (function, access.key_actions) not in self._key_users:
            self._key_users.append((function, access.key_actions))
            self._key.grant(function.role, *access.key_actions)
        self._network.allow_functions(
            DYNAMODB, [function], sid=access.sid, actions=access.actions, resources=[resource.table_arn]
        )
