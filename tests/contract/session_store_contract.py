"""The behaviour every `SessionStore` adapter must have.

Subclass it in a test module and provide a `session_store` fixture that yields an empty store:

    class TestSqliteSessionStore(SessionStoreContract):
        @pytest.fixture
        def session_store(self, tmp_path): ...
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agent_memory.domain.errors import ConcurrentModification
from agent_memory.domain.sessions.ports import (
    SessionClosed,
    SessionRecord,
    SessionStatus,
    SessionStore,
    SessionUsage,
    TurnRecord,
    new_session_id,
)

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
TENANT_A = "acme"
TENANT_B = "globex"
NS = "/projects/billing"


def make_session(
    tenant: str = TENANT_A, *, at: datetime = T0, hours: float = 24, **overrides: Any
) -> SessionRecord:
    snapshot = overrides.pop(
        "snapshot", '<memory-snapshot namespace="/projects/billing">\nUses Postgres 16 — ✓ 数据库\n'
    )
    fields: dict[str, Any] = {
        "id": new_session_id(),
        "tenant": tenant,
        "namespace": NS,
        "actor": "key:test",
        "base_system": "You are helpful.",
        "snapshot": snapshot,
        "snapshot_sha256": hashlib.sha256(snapshot.encode()).hexdigest(),
        "cache_ttl": "5m",
        "created_at": at,
        "expires_at": at + timedelta(hours=hours),
    }
    fields.update(overrides)
    return SessionRecord(**fields)


def make_turn(session: SessionRecord, index: int, text: str = "hello") -> TurnRecord:
    return TurnRecord(
        tenant=session.tenant,
        session_id=session.id,
        index=index,
        messages=[
            {"role": "user", "content": [{"text": text}]},
            {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": "t1", "name": "recall", "input": {"query": "x"}}}],
            },
            {
                "role": "user",
                "content": [
                    {"toolResult": {"toolUseId": "t1", "content": [{"text": "{}"}], "status": "success"}}
                ],
            },
            {"role": "assistant", "content": [{"text": f"reply to {text}"}]},
        ],
        usage={
            "inputTokens": 10,
            "outputTokens": 5,
            "cacheReadInputTokens": 1200,
            "cacheWriteInputTokens": 0,
        },
        cost_usd=0.0001,
        model_id="anthropic.claude-sonnet-4-5-20250929-v1:0",
        stop_reason="end_turn",
        created_at=T0 + timedelta(minutes=index),
    )


class SessionStoreContract:
    @pytest.fixture
    def session_store(self) -> SessionStore:  # pragma: no cover - provided by subclasses
        raise NotImplementedError

    def test_given_created_session_when_read_then_every_byte_of_the_snapshot_is_kept(self, session_store):
        session = make_session()
        session_store.create(session)

        loaded = session_store.get(TENANT_A, session.id)

        assert loaded == session
        assert loaded.snapshot.encode() == session.snapshot.encode()

    def test_given_existing_id_when_created_again_then_concurrent_modification(self, session_store):
        session = make_session()
        session_store.create(session)
        with pytest.raises(ConcurrentModification):
            session_store.create(session)

    def test_given_session_of_tenant_a_when_tenant_b_reads_it_then_nothing(self, session_store):
        session = make_session()
        session_store.create(session)
        session_store.append_turn(make_turn(session, 0), now=T0)

        assert session_store.get(TENANT_B, session.id) is None
        assert session_store.list_turns(TENANT_B, session.id) == []
        assert session_store.end(TENANT_B, session.id, T0) is None
        assert session_store.get(TENANT_A, session.id).status is SessionStatus.OPEN

    def test_given_turns_when_listed_then_in_index_order_with_their_messages(self, session_store):
        session = make_session()
        session_store.create(session)
        for index in range(3):
            session_store.append_turn(make_turn(session, index, f"message {index}"), now=T0)

        turns = session_store.list_turns(TENANT_A, session.id)

        assert [turn.index for turn in turns] == [0, 1, 2]
        assert turns[2].messages[0]["content"][0]["text"] == "message 2"
        assert turns[0] == make_turn(session, 0, "message 0")

    def test_given_turn_index_taken_when_appended_again_then_concurrent_modification(self, session_store):
        session = make_session()
        session_store.create(session)
        session_store.append_turn(make_turn(session, 0, "first"), now=T0)

        with pytest.raises(ConcurrentModification):
            session_store.append_turn(make_turn(session, 0, "second"), now=T0)

        assert [
            t.messages[0]["content"][0]["text"] for t in session_store.list_turns(TENANT_A, session.id)
        ] == ["first"]

    def test_given_ended_session_when_turn_appended_then_refused_and_nothing_stored(self, session_store):
        session = make_session()
        session_store.create(session)

        ended = session_store.end(TENANT_A, session.id, T0 + timedelta(minutes=3))

        assert ended.status is SessionStatus.ENDED
        assert ended.ended_at == T0 + timedelta(minutes=3)
        assert ended.snapshot == session.snapshot
        with pytest.raises(SessionClosed):
            session_store.append_turn(make_turn(session, 0), now=T0 + timedelta(minutes=4))
        assert session_store.list_turns(TENANT_A, session.id) == []

    def test_given_ended_session_when_ended_again_then_unchanged(self, session_store):
        session = make_session()
        session_store.create(session)
        first = session_store.end(TENANT_A, session.id, T0 + timedelta(minutes=1))

        again = session_store.end(TENANT_A, session.id, T0 + timedelta(minutes=9))

        assert again == first
        assert session_store.get(TENANT_A, session.id) == first

    def test_given_expired_session_when_turn_appended_then_refused(self, session_store):
        session = make_session(hours=1)
        session_store.create(session)

        with pytest.raises(SessionClosed):
            session_store.append_turn(make_turn(session, 0), now=T0 + timedelta(hours=1, seconds=1))
        assert session_store.list_turns(TENANT_A, session.id) == []

    def test_given_missing_session_when_turn_appended_then_refused(self, session_store):
        ghost = make_session()
        with pytest.raises(SessionClosed):
            session_store.append_turn(make_turn(ghost, 0), now=T0)
        assert session_store.end(TENANT_A, ghost.id, T0) is None

    def test_given_sessions_when_counted_then_only_the_tenants_open_unexpired_ones(self, session_store):
        short = make_session(hours=1)
        ended = make_session()
        for session in (make_session(), make_session(), short, ended, make_session(TENANT_B)):
            session_store.create(session)
        session_store.end(TENANT_A, ended.id, T0 + timedelta(minutes=1))

        assert session_store.count_open(TENANT_A, T0 + timedelta(minutes=2), limit=100) == 3
        assert session_store.count_open(TENANT_A, T0 + timedelta(hours=1), limit=100) == 2  # short expired
        assert session_store.count_open(TENANT_A, T0 + timedelta(minutes=2), limit=2) >= 2
        assert session_store.count_open(TENANT_B, T0, limit=100) == 1
        assert session_store.count_open("initech", T0, limit=100) == 0

    def test_given_sessions_when_counted_by_namespace_and_key_then_only_those(self, session_store):
        other = make_session(namespace="/other/hr", actor="key:admin")
        for session in (make_session(), make_session(), other, make_session(TENANT_B, namespace="/other/hr")):
            session_store.create(session)
        at = T0 + timedelta(minutes=1)

        assert session_store.count_open(TENANT_A, at, limit=100, namespace=NS) == 2
        assert session_store.count_open(TENANT_A, at, limit=100, namespace="/other/hr") == 1
        assert session_store.count_open(TENANT_A, at, limit=100, namespace="/nowhere") == 0
        assert session_store.count_open(TENANT_A, at, limit=100, actor="key:admin") == 1
        assert session_store.count_open(TENANT_A, at, limit=100, actor="key:admin", namespace=NS) == 0
        assert session_store.count_open(TENANT_B, at, limit=100, actor="key:admin") == 0

    def test_given_turns_when_appended_then_session_totals_add_their_usage_atomically(self, session_store):
        session = make_session()
        session_store.create(session)
        assert session_store.get(TENANT_A, session.id).usage == SessionUsage()

        session_store.append_turn(make_turn(session, 0), now=T0)
        broken = make_turn(session, 1).model_copy(update={"cache_break": True, "cached_prefix_tokens": 1300})
        session_store.append_turn(broken, now=T0)

        usage = session_store.get(TENANT_A, session.id).usage
        assert (usage.turns, usage.input_tokens, usage.output_tokens) == (2, 20, 10)
        assert (usage.cache_read_input_tokens, usage.cache_write_input_tokens) == (2400, 0)
        assert usage.cost_usd == pytest.approx(0.0002)
        assert usage.cache_breaks == 1
        assert session_store.list_turns(TENANT_A, session.id)[1].cached_prefix_tokens == 1300
        # a refused turn adds nothing; ending keeps the totals
        with pytest.raises(ConcurrentModification):
            session_store.append_turn(make_turn(session, 1), now=T0)
        ended = session_store.end(TENANT_A, session.id, T0 + timedelta(minutes=1))
        assert ended.usage == usage == session_store.get(TENANT_A, session.id).usage
        with pytest.raises(SessionClosed):
            session_store.append_turn(make_turn(session, 2), now=T0 + timedelta(minutes=2))
        assert session_store.get(TENANT_A, session.id).usage == usage
