"""Open sessions are capped per namespace too (issue 29): the keys of one busy namespace cannot use up the
tenant's cap for the others. On the local runtime's real session store (SQLite)."""

from __future__ import annotations

import pytest

from agent_memory.domain.sessions.config import SessionConfig
from agent_memory.domain.sessions.ports import TooManySessions
from agent_memory.settings.service import Settings
from agent_memory.wiring.local import build_local


def test_a_namespace_has_at_most_max_open_sessions_per_namespace(tmp_path) -> None:
    config = SessionConfig(
        max_open_sessions=10, max_open_sessions_per_key=5, max_open_sessions_per_namespace=3
    )
    sessions = build_local(Settings(data_dir=tmp_path, embedder="hashing", sessions=config)).services.sessions
    assert sessions is not None
    opened = [
        sessions.start("alpha", "/projects/alpha", actor=actor).session
        for actor in ("key:a", "key:a", "key:b")  # two keys, each under its own cap
    ]
    with pytest.raises(TooManySessions) as refused:
        sessions.start("alpha", "/projects/alpha", actor="key:c")
    assert refused.value.details["per"] == "namespace" and refused.value.details["limit"] == 3
    # another namespace of the tenant, and the same namespace of another tenant, are not affected
    assert sessions.start("alpha", "/other/hr", actor="key:admin").session.namespace == "/other/hr"
    assert sessions.start("beta", "/projects/alpha", actor="key:c").session.tenant == "beta"
    # ending one makes room for one
    sessions.end("alpha", opened[0].id)
    assert sessions.start("alpha", "/projects/alpha", actor="key:c").session.namespace == "/projects/alpha"
