"""The MCP server over streamable HTTP (`--transport streamable-http`), as a separate process, reached by the
`mcp` SDK's client at its URL."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time

import httpx
from mcp import Client

from agent_memory_client.mcp_server import TOOL_NAMES

from .conftest import Server


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_streamable_http_transport(server: Server) -> None:
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agent_memory_client.mcp_server",
            "--url",
            server.url,
            "--namespace",
            "/projects/mcp-http",
            "--transport",
            "streamable-http",
            "--port",
            str(port),
        ],
        env={**os.environ, "AGENT_MEMORY_API_KEY": server.keys["writer"]},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=1)
                break
            except httpx.TransportError:
                assert process.poll() is None, process.stderr.read() if process.stderr else b""
                assert time.monotonic() < deadline, "the MCP server did not start listening"
                time.sleep(0.1)

        async def run() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                assert {tool.name for tool in (await client.list_tools()).tools} == set(TOOL_NAMES)
                added = await client.call_tool(
                    "remember", {"content": "The HTTP transport stores memories too"}
                )
                assert not added.is_error
                hits = await client.call_tool("recall", {"query": "HTTP transport"})
                assert not hits.is_error and "HTTP transport stores" in hits.content[0].text

        asyncio.run(run())
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_streamable_http_refuses_a_non_loopback_address_without_allow_remote() -> None:
    from agent_memory_client.mcp_server import main

    assert main(["--transport", "streamable-http", "--host", "0.0.0.0"]) == 2


def test_the_server_needs_an_api_key(monkeypatch) -> None:
    from agent_memory_client.mcp_server import main

    monkeypatch.delenv("AGENT_MEMORY_API_KEY", raising=False)
    assert main([]) == 2
