"""The table and bucket declarations (agent_memory.settings.resources) name settings that exist and functions
the stack deploys, and the wiring finds each table through its declaration."""

from __future__ import annotations

from agent_memory.settings.handlers import HandlerSettings
from agent_memory.settings.resources import (
    API_KEYS,
    BUCKETS,
    FUNCTIONS,
    IDEMPOTENCY,
    TABLES,
    TENANT_FUNCTIONS,
    Bucket,
    BucketAccess,
    accesses_of,
)
from agent_memory.settings.service import Settings


def test_each_declared_table_names_a_settings_field_and_known_functions() -> None:
    for table in TABLES:
        assert table.setting in Settings.model_fields or table.setting in HandlerSettings.__dataclass_fields__
        assert table.variable == f"AGENT_MEMORY_{table.setting.upper()}"
        sids = [access.sid for access in table.access]
        assert len(sids) == len(set(sids)), table.construct_id
        for access in table.access:
            assert set(access.functions) <= set(FUNCTIONS), access.sid
            assert access.actions and all(a.startswith("dynamodb:") for a in access.actions)


def test_each_function_gets_only_the_accesses_it_is_declared() -> None:
    assert [a.sid for _, a in accesses_of("api")] == ["IdempotencyRecords", "IdempotencyPurge"]
    assert [a.sid for _, a in accesses_of("authorizer")] == ["ApiKeyLookup"]
    assert accesses_of("console") == accesses_of("job_worker") == ()


def test_the_wiring_reads_each_table_name_through_its_declaration() -> None:
    settings = Settings(runtime="aws", idempotency_table="Idem")
    assert IDEMPOTENCY.name_in(settings) == "Idem"
    assert (
        API_KEYS.name_in(HandlerSettings.from_environment({"AGENT_MEMORY_API_KEYS_TABLE": "Keys"})) == "Keys"
    )


def test_each_declared_bucket_names_a_settings_field_and_known_functions() -> None:
    for bucket in BUCKETS:
        assert bucket.setting in Settings.model_fields, bucket.construct_id
        for access in bucket.access:
            assert set(access.functions) <= set(TENANT_FUNCTIONS if access.tenant else FUNCTIONS), access.sid
            assert access.actions and all(a.startswith("s3:") and "*" not in a for a in access.actions)


def test_every_access_has_its_own_statement_id() -> None:
    """One endpoint statement per sid: two accesses under one sid would be refused at synth."""
    sids = [a.sid for t in TABLES for a in t.access] + [a.sid for b in BUCKETS for a in b.access]
    assert len(sids) == len(set(sids)), sids
    assert set(TENANT_FUNCTIONS) <= set(FUNCTIONS)


def test_a_bucket_access_splits_its_calls_between_the_bucket_and_its_objects() -> None:
    access = BucketAccess("R", ("s3:GetObject", "s3:ListBucket", "s3:PutObject"), functions=("api",))
    assert access.object_actions == ("s3:GetObject", "s3:PutObject")
    assert access.bucket_actions == ("s3:ListBucket",)
    bucket = Bucket("Reports", setting="reports_bucket", access=(access,))
    assert bucket.variable == "AGENT_MEMORY_REPORTS_BUCKET"
    assert bucket.name_in(type("S", (), {"reports_bucket": "r-1"})()) == "r-1"
