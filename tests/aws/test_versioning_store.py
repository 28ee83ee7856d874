"""The DynamoDB snapshot and reference store (domain/versioning): payloads cut under the 400 KB item limit,
names never reused (the loser's parts removed), tenants apart, atomic session counters, reviews."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agent_memory.adapters.aws.versioning_store import PART_BYTES, DynamoVersioningStore
from agent_memory.domain.errors import Conflict
from agent_memory.domain.versioning.ports import SnapshotMeta
from tests.aws.support import TABLE

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
NS = "/projects/billing"
DYNAMODB_ITEM_LIMIT = 400 * 1024


@pytest.fixture
def store(dynamodb: Any) -> DynamoVersioningStore:
    return DynamoVersioningStore(TABLE, lambda tenant: dynamodb)


def _meta(name: str, at: datetime = T0) -> SnapshotMeta:
    return SnapshotMeta(name=name, namespace=NS, created_at=at, counts={"records": 1})


def _item_bytes(item: dict[str, Any]) -> int:
    """DynamoDB's item size: attribute names plus values (binary as stored, strings as UTF-8)."""
    size = 0
    for name, value in item.items():
        size += len(name.encode())
        for kind, data in value.items():
            size += len(data) if kind == "B" else len(str(data).encode())
    return size


def test_a_large_payload_is_cut_into_parts_under_the_item_limit(
    store: DynamoVersioningStore, dynamodb: Any
) -> None:
    payload = os.urandom(2 * PART_BYTES + 17)
    store.put("alpha", _meta("big"), payload)
    items = dynamodb.scan(TableName=TABLE)["Items"]
    parts = [item for item in items if "#SNAPDATA#" in item["pk"]["S"]]
    assert len(parts) == 3
    assert max(_item_bytes(item) for item in items) < DYNAMODB_ITEM_LIMIT
    assert all(item["pk"]["S"].startswith("alpha#") for item in items)  # the tenant role's LeadingKeys
    meta, read = store.get("alpha", NS, "big") or (None, b"")
    assert read == payload and meta is not None and meta.name == "big"


def test_a_name_is_never_reused_and_the_losers_parts_are_removed(
    store: DynamoVersioningStore, dynamodb: Any
) -> None:
    store.put("alpha", _meta("s1"), b"first")
    with pytest.raises(Conflict):
        store.put("alpha", _meta("s1", T0 + timedelta(minutes=1)), b"second" * 100_000)
    assert store.get("alpha", NS, "s1") == (_meta("s1"), b"first")
    parts = [i for i in dynamodb.scan(TableName=TABLE)["Items"] if "#SNAPDATA#" in i["pk"]["S"]]
    assert len(parts) == 1


def test_listing_and_tenants(store: DynamoVersioningStore) -> None:
    store.put("alpha", _meta("later", T0 + timedelta(hours=1)), b"b")
    store.put("alpha", _meta("earlier"), b"a")
    assert [m.name for m in store.list("alpha", NS)] == ["earlier", "later"]
    assert store.list("beta", NS) == [] and store.get("beta", NS, "earlier") is None
    assert store.list("alpha", "/projects/other") == []


def test_session_counters_and_reviews(store: DynamoVersioningStore) -> None:
    store.add_session_uses("alpha", NS, ["h1", "h2"])
    store.add_session_uses("alpha", "/projects/many", [f"h{i}" for i in range(250)])  # three transactions
    assert len(store.session_uses("alpha", "/projects/many")) == 250
    store.add_session_uses("alpha", NS, ["h1"])
    assert store.session_uses("alpha", NS) == {"h1": 2, "h2": 1}
    assert store.session_uses("beta", NS) == {}
    store.mark_reviewed("alpha", "mem_1", T0)
    store.mark_reviewed("alpha", "mem_1", T0 + timedelta(days=1))
    ids = ["mem_1", *[f"mem_x{i}" for i in range(150)]]  # over one BatchGetItem's 100 keys
    assert store.reviewed("alpha", ids) == {"mem_1": T0 + timedelta(days=1)}
    assert store.reviewed("beta", ["mem_1"]) == {}
