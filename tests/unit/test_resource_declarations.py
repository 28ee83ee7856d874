"""The table declarations (agent_memory.settings.resources) name settings that exist and functions the stack
deploys, and the wiring finds each table through its declaration."""

from __future__ import annotations

from agent_memory.settings.handlers import HandlerSettings
from agent_memory.settings.resources import API_KEYS, FUNCTIONS, IDEMPOTENCY, TABLES, accesses_of
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
