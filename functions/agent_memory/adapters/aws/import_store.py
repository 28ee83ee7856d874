"""`ImportStore` in the MemoryTable (the interop wing's import state).

| item    | pk                          | sk                   | other attributes               |
|---------|-----------------------------|----------------------|--------------------------------|
| report  | `<t>#IMP#<import id>`       | `RUN`                | `doc` (the report's JSON), `gsi2pk` = `<t>#IMP`, `gsi2sk` = `<started at>#<id>` |
| outcome | `<t>#IMP#<import id>`       | `ITEM#<sha256(ref)>` | `doc` (what the item became)   |
| ref     | `<t>#IMPREF#<namespace>`    | `REF#<sha256(ref)>`  | `ref`, `import_id`             |

Every partition key starts with `<t>#`, so the tenant role's `dynamodb:LeadingKeys` condition confines each
call to the caller's tenant (the same grant as the records: GetItem, PutItem, Query, BatchGetItem,
BatchWriteItem); another tenant's import id is simply not found. Refs are hashed into the sort key so any
ref length fits DynamoDB's 1 KB sort-key limit. Batch calls respect the service maxima (BatchGetItem 100
keys, BatchWriteItem 25 requests) and resend unprocessed items with `_dynamo.until_processed` (full jitter, a
deadline, then 503 naming the items left).

It is also the purge's `ImportRows` (domain/erasure/imports.py): a tenant's imports are listed through GSI2
(`<t>#IMP`; reports saved before that key existed are not listed), outcomes rewritten in place (same keys),
an import deleted with its partition, a namespace's ref rows queried and deleted."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from typing import Any

from ...domain.interop.model import ImportReport, ItemOutcome
from ...domain.retry import DYNAMODB_BATCH, Retry
from ._dynamo import dynamo_item, expr_values, read_text, tenant_client, until_processed, write_all
from ._errors import upstream_errors

BATCH_GET_MAX = 100
BATCH_WRITE_MAX = 25

DynamoClientFactory = Callable[[str], Any]


def _digest(ref: str) -> str:
    return hashlib.sha256(ref.encode("utf-8")).hexdigest()


class DynamoImportStore:
    def __init__(
        self,
        table_name: str,
        client_factory: DynamoClientFactory,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._table = table_name
        self._client_factory = client_factory
        self._sleep = sleep

    def _client(self, tenant: str) -> Any:
        return tenant_client(self._client_factory, tenant)

    @staticmethod
    def _run_pk(tenant: str, import_id: str) -> str:
        return f"{tenant}#IMP#{import_id}"

    @staticmethod
    def _ref_pk(tenant: str, namespace: str) -> str:
        return f"{tenant}#IMPREF#{namespace}"

    def save(self, report: ImportReport) -> None:
        with upstream_errors("DynamoDB", "PutItem"):
            self._client(report.tenant).put_item(
                TableName=self._table,
                Item=dynamo_item(
                    pk=self._run_pk(report.tenant, report.id),
                    sk="RUN",
                    gsi2pk=f"{report.tenant}#IMP",
                    gsi2sk=f"{report.started_at.isoformat()}#{report.id}",
                    kind="import",
                    doc=report.model_dump_json(),
                ),
            )

    def get(self, tenant: str, import_id: str) -> ImportReport | None:
        with upstream_errors("DynamoDB", "GetItem"):
            response = self._client(tenant).get_item(
                TableName=self._table,
                Key=dynamo_item(pk=self._run_pk(tenant, import_id), sk="RUN"),
                ConsistentRead=True,
            )
        item = response.get("Item")
        return ImportReport.model_validate_json(read_text(item, "doc")) if item else None

    def seen(self, tenant: str, namespace: str, refs: Sequence[str]) -> set[str]:
        client = self._client(tenant)
        pk = self._ref_pk(tenant, namespace)
        found: set[str] = set()
        unique = list(dict.fromkeys(refs))
        for start in range(0, len(unique), BATCH_GET_MAX):
            keys: list[dict[str, Any]] = [
                dynamo_item(pk=pk, sk=f"REF#{_digest(ref)}") for ref in unique[start : start + BATCH_GET_MAX]
            ]
            request: dict[str, Any] = {
                self._table: {
                    "Keys": keys,
                    "ConsistentRead": True,
                    "ProjectionExpression": "#r",
                    "ExpressionAttributeNames": {"#r": "ref"},
                }
            }
            for response in until_processed(
                lambda pending: client.batch_get_item(RequestItems=pending),
                request,
                operation="BatchGetItem",
                advice="retry the import (items already imported are skipped)",
                retry=self._retry(),
            ):
                found.update(
                    read_text(item, "ref") for item in response.get("Responses", {}).get(self._table, [])
                )
        return found

    def add_outcomes(
        self, tenant: str, import_id: str, namespace: str, outcomes: Sequence[ItemOutcome]
    ) -> None:
        run_pk, ref_pk = self._run_pk(tenant, import_id), self._ref_pk(tenant, namespace)
        requests: list[dict[str, Any]] = []
        for outcome in outcomes:
            digest = _digest(outcome.ref)
            requests.append(
                {
                    "PutRequest": {
                        "Item": dynamo_item(
                            pk=run_pk, sk=f"ITEM#{digest}", kind="import_item", doc=outcome.model_dump_json()
                        )
                    }
                }
            )
            requests.append(
                {
                    "PutRequest": {
                        "Item": dynamo_item(
                            pk=ref_pk,
                            sk=f"REF#{digest}",
                            kind="import_ref",
                            ref=outcome.ref,
                            import_id=import_id,
                        )
                    }
                }
            )
        self._write(tenant, requests)

    def outcomes(self, tenant: str, import_id: str) -> list[ItemOutcome]:
        client = self._client(tenant)
        request: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :item)",
            "ExpressionAttributeValues": expr_values(pk=self._run_pk(tenant, import_id), item="ITEM#"),
            "ConsistentRead": True,
        }
        result: list[ItemOutcome] = []
        while True:
            with upstream_errors("DynamoDB", "Query"):
                response = client.query(**request)
            result.extend(
                ItemOutcome.model_validate_json(read_text(item, "doc")) for item in response.get("Items", [])
            )
            if "LastEvaluatedKey" not in response:
                return result
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def release(self, tenant: str, namespace: str, refs: Sequence[str]) -> None:
        pk = self._ref_pk(tenant, namespace)
        self._write(
            tenant,
            [
                {"DeleteRequest": {"Key": dynamo_item(pk=pk, sk=f"REF#{_digest(ref)}")}}
                for ref in dict.fromkeys(refs)
            ],
        )

    # ------------------------------------------------------------------ the purge's `ImportRows`

    def _query(self, tenant: str, request: dict[str, Any]) -> list[dict[str, Any]]:
        client = self._client(tenant)
        request = {"TableName": self._table, **request}
        items: list[dict[str, Any]] = []
        while True:
            with upstream_errors("DynamoDB", "Query"):
                response = client.query(**request)
            items.extend(response.get("Items", []))
            if "LastEvaluatedKey" not in response:
                return items
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def import_ids(self, tenant: str) -> list[str]:
        items = self._query(
            tenant,
            {
                "IndexName": "gsi2",
                "KeyConditionExpression": "gsi2pk = :pk",
                "ExpressionAttributeValues": expr_values(pk=f"{tenant}#IMP"),
                "ProjectionExpression": "pk",
            },
        )
        prefix = f"{tenant}#IMP#"
        return sorted(
            read_text(item, "pk")[len(prefix) :] for item in items if read_text(item, "pk").startswith(prefix)
        )

    def rewrite(self, report: ImportReport) -> None:
        self.save(report)

    def replace_outcomes(self, tenant: str, import_id: str, outcomes: Sequence[ItemOutcome]) -> None:
        run_pk = self._run_pk(tenant, import_id)
        self._write(
            tenant,
            [
                {
                    "PutRequest": {
                        "Item": dynamo_item(
                            pk=run_pk,
                            sk=f"ITEM#{_digest(outcome.ref)}",
                            kind="import_item",
                            doc=outcome.model_dump_json(),
                        )
                    }
                }
                for outcome in {o.ref: o for o in outcomes}.values()
            ],
        )

    def _keys(self, tenant: str, pk: str) -> list[dict[str, Any]]:
        return [
            {"pk": item["pk"], "sk": item["sk"]}
            for item in self._query(
                tenant,
                {
                    "KeyConditionExpression": "pk = :pk",
                    "ExpressionAttributeValues": expr_values(pk=pk),
                    "ProjectionExpression": "pk, sk",
                    "ConsistentRead": True,
                },
            )
        ]

    def delete_import(self, tenant: str, import_id: str) -> None:
        keys = self._keys(tenant, self._run_pk(tenant, import_id))
        # Outcomes first, the report last: an interrupted delete leaves the import listed, so it resumes.
        keys.sort(key=lambda key: read_text(key, "sk") == "RUN")
        self._write(tenant, [{"DeleteRequest": {"Key": key}} for key in keys])

    def ref_namespaces(self, tenant: str) -> list[str]:
        """The namespaces of the tenant's imports (ref rows are written under the import's namespace)."""
        namespaces = set()
        for import_id in self.import_ids(tenant):
            report = self.get(tenant, import_id)
            if report is not None:
                namespaces.add(report.namespace)
        return sorted(namespaces)

    def count_refs(self, tenant: str, namespace: str) -> int:
        return len(self._keys(tenant, self._ref_pk(tenant, namespace)))

    def forget_namespace(self, tenant: str, namespace: str) -> int:
        keys = self._keys(tenant, self._ref_pk(tenant, namespace))
        self._write(tenant, [{"DeleteRequest": {"Key": key}} for key in keys])
        return len(keys)

    def _write(self, tenant: str, requests: list[dict[str, Any]]) -> None:
        client = self._client(tenant)
        for start in range(0, len(requests), BATCH_WRITE_MAX):
            write_all(
                lambda pending: client.batch_write_item(RequestItems=pending),
                {self._table: requests[start : start + BATCH_WRITE_MAX]},
                advice="retry the import (items already imported are skipped)",
                retry=self._retry(),
            )

    def _retry(self) -> Retry:
        return Retry(DYNAMODB_BATCH, sleep=self._sleep)
