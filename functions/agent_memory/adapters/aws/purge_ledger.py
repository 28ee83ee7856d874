"""The purge ledger in the memory table (`<t>#PURGE#<id>` / `PLAN`, listed through GSI2 `<t>#PURGE`): plans
and their tombstones, versioned; the `state` attribute lets the write fence list the executing ones."""

from __future__ import annotations

import builtins
from typing import Any

from botocore.exceptions import ClientError

from ...domain.erasure.model import PurgePlan
from ...domain.errors import ConcurrentModification
from ._dynamo import dynamo_item, expr_values, read_text
from ._errors import error_code, upstream_errors

Item = dict[str, Any]


class DynamoPurgeLedger:
    def __init__(self, table: Any) -> None:
        self._t = table  # adapters/aws/erasure.py `_Table`

    def save(self, plan: PurgePlan, *, expected_version: int | None) -> None:
        t = plan.tenant
        item: Item = dynamo_item(
            pk=f"{t}#PURGE#{plan.id}",
            sk="PLAN",
            gsi2pk=f"{t}#PURGE",
            gsi2sk=f"{plan.planned_at.isoformat()}#{plan.id}",
            kind="purge",
            version=plan.version,
            state=plan.state.value,
            doc=plan.model_dump_json(),
        )
        condition: dict[str, Any] = (
            {"ConditionExpression": "attribute_not_exists(pk)"}
            if expected_version is None
            else {
                "ConditionExpression": "version = :v",
                "ExpressionAttributeValues": expr_values(v=expected_version),
            }
        )
        try:
            with upstream_errors("DynamoDB", "PutItem"):
                self._t.client(t).put_item(TableName=self._t.table, Item=item, **condition)
        except ClientError as error:
            if error_code(error) != "ConditionalCheckFailedException":
                raise
            raise ConcurrentModification(
                f"purge plan {plan.id} changed meanwhile; read its status and retry", plan_id=plan.id
            ) from error

    def get(self, tenant: str, plan_id: str) -> PurgePlan | None:
        with upstream_errors("DynamoDB", "GetItem"):
            response = self._t.client(tenant).get_item(
                TableName=self._t.table,
                Key=dynamo_item(pk=f"{tenant}#PURGE#{plan_id}", sk="PLAN"),
                ConsistentRead=True,
            )
        item = response.get("Item")
        return PurgePlan.model_validate_json(read_text(item, "doc")) if item else None

    def list(self, tenant: str, limit: int = 50) -> list[PurgePlan]:
        plans = [
            PurgePlan.model_validate_json(read_text(i, "doc"))
            for i in self._t.gsi2(tenant, f"{tenant}#PURGE")
        ]
        return sorted(plans, key=lambda p: (p.planned_at, p.id), reverse=True)[:limit]

    def executing(self, tenant: str) -> builtins.list[PurgePlan]:
        """The executing plans, read from the (eventually consistent) GSI2 listing and filtered on `state`;
        a plan saved before `state` was written is not listed (the re-plan still catches its writes)."""
        return [
            PurgePlan.model_validate_json(read_text(i, "doc"))
            for i in self._t.gsi2(tenant, f"{tenant}#PURGE")
            if read_text(i, "state", None) == "executing"
        ]
