"""A real local server on loopback (uvicorn in a thread) with three API keys, for HTTP-level tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
import uvicorn

from agent_memory.local_server import DEFAULT_LIMITS, ServerLimits, build_asgi, uvicorn_options
from agent_memory.settings.service import Settings
from agent_memory.wiring.local import LocalRuntime, build_local


@dataclass
class LiveServer:
    url: str
    keys: dict[str, str]
    settings: Settings

    def client(self, who: str | None = "alpha") -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[who]}"} if who else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


def start_server(
    settings: Settings, runtime: LocalRuntime | None = None, limits: ServerLimits = DEFAULT_LIMITS
) -> tuple[uvicorn.Server, threading.Thread, str]:
    """Serve `runtime` (default: `build_local(settings)`) on a free loopback port, configured as `agent-memory
    serve` configures uvicorn."""
    runtime = runtime or build_local(settings)
    config = uvicorn.Config(
        build_asgi(settings, runtime, limits),
        host="127.0.0.1",
        port=0,
        log_level="warning",
        **uvicorn_options(limits),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("local server did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    return server, thread, f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def live_server(tmp_path_factory) -> Iterator[LiveServer]:
    data_dir = tmp_path_factory.mktemp("data")
    settings = Settings(data_dir=data_dir, embedder="hashing", max_body_bytes=64 * 1024)
    runtime = build_local(settings)
    keys = {
        "alpha": runtime.keys.create("alpha", ["*"], ["read", "write", "admin"]).key,
        "beta": runtime.keys.create("beta", ["*"], ["read", "write", "admin"]).key,
        "alpha-billing-ro": runtime.keys.create("alpha", ["/projects/billing"], ["read"]).key,
    }
    server, thread, url = start_server(settings)
    yield LiveServer(url=url, keys=keys, settings=settings)
    server.should_exit = True
    thread.join(timeout=10)
