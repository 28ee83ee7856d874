"""The shared behaviour suites, run against the AWS adapters on moto: the same tests the local adapters pass."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.adapters.aws.dynamodb_store import DynamoRecordStore
from agent_memory.adapters.aws.s3vectors_index import S3VectorsIndex
from tests.aws.support import TABLE, VECTOR_BUCKET
from tests.contract.record_store_contract import TENANT_A, TENANT_B, RecordStoreContract
from tests.contract.search_index_contract import SearchIndexContract


class TestDynamoRecordStore(RecordStoreContract):
    @pytest.fixture
    def record_store(self, dynamodb: Any) -> DynamoRecordStore:
        # A small page size makes the filter-and-continue loops run several pages even on tiny data sets.
        store = DynamoRecordStore(TABLE, lambda tenant: dynamodb, page_size=2)
        for tenant in (TENANT_A, TENANT_B):  # as onboarding leaves a new tenant: its tree index complete
            assert store.backfill_tree_index(tenant).complete
        return store


class TestS3VectorsIndex(SearchIndexContract):
    @pytest.fixture
    def search_index(self, s3vectors: Any) -> S3VectorsIndex:
        return S3VectorsIndex(VECTOR_BUCKET, lambda tenant: s3vectors)
