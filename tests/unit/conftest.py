"""Unit tests never reach the network: sockets are disabled for the whole directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pytest_socket import disable_socket, enable_socket


@pytest.fixture(autouse=True)
def _no_network():
    disable_socket(allow_unix_socket=True)
    yield
    enable_socket()


@pytest.fixture
def aws_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """AWS runtime settings and static credentials for the wiring tests: building makes no call (clients are
    created, never used)."""
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    from agent_memory.settings.service import Settings
    from agent_memory.wiring.config import RuntimeSettings

    return RuntimeSettings.of(
        Settings(
            runtime="aws",
            table="MemoryTable",
            vector_bucket="vectors",
            tenant_role_arn="arn:aws:iam::123456789012:role/tenant",
            files_root=tmp_path,
            region="eu-west-1",
            idempotency_table="Idempotency",
            dreaming_state_machine_arn="arn:aws:states:eu-west-1:123456789012:stateMachine:dreaming",
        )
    )
