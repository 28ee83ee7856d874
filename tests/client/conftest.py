"""A real local server on loopback (as `agent-memory serve` configures it) with keys of different scopes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from agent_memory.settings.service import Settings
from agent_memory.wiring.local import build_local
from tests.integration.conftest import start_server


@dataclass
class Server:
    url: str
    keys: dict[str, str]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data_dir = tmp_path_factory.mktemp("sdk-data")
    settings = Settings(data_dir=data_dir, embedder="hashing")
    runtime = build_local(settings)
    keys = {
        "admin": runtime.keys.create("sdk", ["*"], ["read", "write", "admin"]).key,
        "purger": runtime.keys.create("sdk", ["*"], ["read", "write", "admin", "purge"]).key,
        "writer": runtime.keys.create("sdk", ["/projects/*"], ["read", "write"]).key,
        "reader": runtime.keys.create("sdk", ["/projects/*"], ["read"]).key,
        "solo": runtime.keys.create("sdk", ["/projects/solo"], ["read", "write"]).key,
        "me-a": runtime.keys.create("sdk", ["/me/a/*"], ["read", "write"]).key,  # below /me/a only
        "other-tenant": runtime.keys.create("other", ["*"], ["read", "write", "admin"]).key,
    }
    uvicorn_server, thread, url = start_server(settings, runtime)
    yield Server(url=url, keys=keys)
    uvicorn_server.should_exit = True
    thread.join(timeout=10)
