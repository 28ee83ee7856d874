"""The nightly decay job completes the namespace-tree index (issue 32) on moto, through the Lambda entry point
and the jobs function's own graph (`wiring.aws.build_jobs`, tenant credentials from moto's STS): a tenant
whose records predate `gsi3sk` is completed a bounded step per run, and its tree listings move from the old
filtered read (gsi2) to the index (gsi3) once it is complete. No operator command is involved."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from agent_memory.adapters.aws.dynamodb_store import DynamoRecordStore
from agent_memory.domain.errors import ValidationFailed
from agent_memory.domain.ports import RecordQuery, RecordWrite
from agent_memory.handlers import jobs
from agent_memory.settings.service import Settings
from agent_memory.wiring.aws import build_jobs
from agent_memory.wiring.parts import AwsClients
from tests.aws.support import REGION, TABLE, VECTOR_BUCKET, CallCounter
from tests.contract.record_store_contract import make_change, make_record

ROLE = "arn:aws:iam::123456789012:role/TenantAccessRole"
TREE = RecordQuery(namespaces=("/me",), namespaces_below=("/me",), limit=100)
MARKER = {"pk": {"S": "acme#META"}, "sk": {"S": "TREE_INDEX"}}


class LambdaContext:
    function_name = "agent-memory-decay"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:agent-memory-decay"
    aws_request_id = "req-1"

    def __init__(self, remaining_ms: int = 900_000) -> None:
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


@pytest.fixture
def older_tenant(dynamodb: Any, tmp_path: Any, handler_env: Any) -> Any:
    """18 records of tenant `acme` written before the tree index existed (no `gsi3sk`), created just now so
    that the decay job archives none of them; and the decay job's graph on moto."""
    handler_env.delenv("AGENT_MEMORY_TENANTS", raising=False)
    store = DynamoRecordStore(TABLE, lambda tenant: dynamodb)
    names = ["/me/users/u-2", "/me", "/mexico", "/me/users/u-1", "/me-too", "/other"]
    start = datetime.now(UTC) - timedelta(hours=1)
    records = [
        make_record(f"fact {i}", namespace=names[i % 6], at=start + timedelta(minutes=i)) for i in range(18)
    ]
    store.commit([RecordWrite(r, None) for r in records], [make_change(r) for r in records[:5]])
    for item in dynamodb.scan(TableName=TABLE)["Items"]:
        if "gsi3sk" in item:
            dynamodb.update_item(
                TableName=TABLE, Key={"pk": item["pk"], "sk": item["sk"]}, UpdateExpression="REMOVE gsi3sk"
            )
    settings = Settings(
        runtime="aws",
        table=TABLE,
        vector_bucket=VECTOR_BUCKET,
        tenant_role_arn=ROLE,
        files_root=tmp_path,
        region=REGION,
    )
    jobs.graph.set(build_jobs(settings, AwsClients(sts=boto3.client("sts", region_name=REGION))))
    yield records
    jobs.graph.set(None)


def _tree(dynamodb: Any) -> tuple[list[str], set[str]]:
    """The tree `/me` as a fresh store (another Lambda) lists it, and the indexes its Queries read."""
    calls = CallCounter(dynamodb)
    page = DynamoRecordStore(TABLE, lambda tenant: dynamodb).list("acme", TREE)
    return [r.namespace for r in page.items], {p.get("IndexName", "") for p in calls.params("Query")}


def test_given_an_older_tenant_when_the_decay_job_runs_nightly_then_the_tree_index_completes_in_bounded_steps(
    older_tenant: Any, dynamodb: Any
):
    in_tree = [r for r in older_tenant if r.namespace == "/me" or r.namespace.startswith("/me/")]
    by_creation = [r.namespace for r in sorted(in_tree, key=lambda r: (r.created_at, r.id))]
    by_tree = [r.namespace for r in sorted(in_tree, key=lambda r: (r.namespace, r.created_at, r.id))]
    event = {"tenants": ["acme", "globex"], "tree_index_records": 7}

    first = jobs.archive_decayed_handler(event, LambdaContext())
    assert first["tenants"]["acme"]["archived"] == 0  # the forgetting job ran first, as before
    # At most 7 records of acme this night; globex (a tenant with no older records) is complete at once
    assert first["tree_index"] == {
        "acme": {"read": 7, "updated": 7, "complete": False},
        "globex": {"read": 0, "updated": 0, "complete": True},
    }
    assert _tree(dynamodb) == (by_creation, {"gsi2"})  # still the old filtered read

    second = jobs.archive_decayed_handler(event, LambdaContext())
    assert second["tree_index"]["acme"] == {"read": 7, "updated": 7, "complete": False}  # resumed, not redone
    third = jobs.archive_decayed_handler(event, LambdaContext())
    assert third["tree_index"]["acme"] == {"read": 4, "updated": 4, "complete": True}
    assert dynamodb.get_item(TableName=TABLE, Key=MARKER)["Item"]["state"] == {"S": "complete"}

    # Complete: the tree lists from gsi3, in the index's order; later nights cost only the marker read
    assert _tree(dynamodb) == (by_tree, {"gsi3"})
    fourth = jobs.archive_decayed_handler(event, LambdaContext())
    assert fourth["tree_index"]["acme"] == {"read": 0, "updated": 0, "complete": True}
    items = dynamodb.scan(TableName=TABLE)["Items"]
    assert sum("gsi3sk" in item for item in items) == len(older_tenant)


def test_given_the_default_bound_when_the_job_runs_once_then_a_small_tenant_completes_that_night(
    older_tenant: Any, dynamodb: Any
):
    done = jobs.archive_decayed_handler({"tenant": "acme"}, LambdaContext())
    assert done["tree_index"] == {"acme": {"read": 18, "updated": 18, "complete": True}}
    assert _tree(dynamodb)[1] == {"gsi3"}


def test_given_no_time_left_or_a_dry_run_or_a_zero_bound_then_the_job_indexes_nothing(
    older_tenant: Any, dynamodb: Any
):
    late = jobs.archive_decayed_handler({"tenant": "acme"}, LambdaContext(remaining_ms=30_000))
    assert late["tree_index"] == {}  # the tenant is left for the next night, its marker untouched
    dry = jobs.archive_decayed_handler({"tenant": "acme", "dry_run": True}, LambdaContext())
    assert "tree_index" not in dry
    off = jobs.archive_decayed_handler({"tenant": "acme", "tree_index_records": 0}, LambdaContext())
    assert off["tree_index"] == {}
    assert "Item" not in dynamodb.get_item(TableName=TABLE, Key=MARKER)
    assert _tree(dynamodb)[1] == {"gsi2"}


@pytest.mark.parametrize("bound", [-1, "many", 2.5, True])
def test_given_a_bad_bound_in_the_schedule_input_then_the_run_is_refused_before_anything_runs(
    older_tenant: Any, bound: Any
):
    with pytest.raises(ValidationFailed, match="tree_index_records must be a whole number"):
        jobs.archive_decayed_handler({"tenant": "acme", "tree_index_records": bound}, LambdaContext())
