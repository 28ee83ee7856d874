"""DynamoDB on moto: a record item whose `doc` no longer loads is skipped and counted, never a 500, and
repair fixes or quarantines it (the shared contract in tests/contract/unreadable_records_contract.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_memory.adapters.aws.dynamodb_store import DynamoRecordStore
from agent_memory.domain.records import MemoryRecord
from tests.aws.support import TABLE
from tests.contract.unreadable_records_contract import UnreadableRecordsContract


class TestDynamoUnreadableRecords(UnreadableRecordsContract):
    @pytest.fixture
    def record_store(self, dynamodb: Any) -> DynamoRecordStore:
        return DynamoRecordStore(TABLE, lambda tenant: dynamodb, page_size=2)

    @pytest.fixture
    def damage(self, dynamodb: Any) -> Any:
        def rewrite(record: MemoryRecord, edit: Any) -> None:
            key = {"pk": {"S": f"{record.tenant}#REC#{record.id}"}, "sk": {"S": "REC"}}
            if isinstance(edit, str):
                doc = edit
            else:
                data = json.loads(dynamodb.get_item(TableName=TABLE, Key=key)["Item"]["doc"]["S"])
                edit(data)
                doc = json.dumps(data)
            dynamodb.update_item(
                TableName=TABLE,
                Key=key,
                UpdateExpression="SET doc = :doc",
                ExpressionAttributeValues={":doc": {"S": doc}},
            )

        return rewrite
