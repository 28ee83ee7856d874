"""The MCP server as an MCP client sees it: spawned over stdio by the `mcp` SDK's client, against the running
local server with an API key; remember → recall → correct → history, memory files, the daily log, and the
API's refusal of a tool the key's scope forbids."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from agent_memory_client.mcp_server import TOOL_NAMES

from .conftest import Server

NS = "/projects/mcp"


def _params(server: Server, key: str, namespace: str | None = NS) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "agent_memory_client.mcp_server", "--url", server.url]
        + (["--namespace", namespace] if namespace else []),
        env={"AGENT_MEMORY_API_KEY": server.keys[key]},
    )


def _result(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return dict(result.structured_content)
    return json.loads(result.content[0].text)


def test_tools_over_stdio_remember_recall_correct_history(server: Server) -> None:
    async def run() -> None:
        async with Client(_params(server, "writer")) as client:
            listed = await client.list_tools()
            assert {tool.name for tool in listed.tools} == set(TOOL_NAMES)
            remember = next(tool for tool in listed.tools if tool.name == "remember")
            assert remember.input_schema["required"] == ["content"]
            by_name = {tool.name: tool for tool in listed.tools}
            assert by_name["recall"].annotations.read_only_hint is True
            assert by_name["remember"].annotations.read_only_hint is False
            assert by_name["archive"].annotations.destructive_hint is True

            added = _result(
                await client.call_tool(
                    "remember",
                    {
                        "content": "The user prefers pytest over unittest",
                        "type": "user_preference",
                        "verbose": True,
                    },
                )
            )
            assert added["decision"] == "added"
            memory_id = added["memory"]["id"]
            assert added["memory"]["namespace"] == NS and added["memory"]["source"]["kind"] == "tool"

            hits = _result(
                await client.call_tool("recall", {"query": "which test framework does the user like"})
            )
            assert hits["results"][0]["id"] == memory_id

            corrected = _result(
                await client.call_tool(
                    "correct",
                    {
                        "memory_id": memory_id,
                        "content": "The user prefers pytest with xdist",
                        "reason": "more precise",
                    },
                )
            )
            new_id = corrected["memory"]["id"]
            assert corrected["previous"]["id"] == memory_id

            history = _result(await client.call_tool("history", {"memory_id": new_id}))
            assert {m["id"] for m in history["lineage"]} >= {memory_id, new_id}
            assert "correct" in {change["operation"] for change in history["changes"]}

            archived = _result(
                await client.call_tool("archive", {"memory_id": new_id, "reason": "test over"})
            )
            assert archived["status"] == "archived"

            assert _result(await client.call_tool("memory_file_add", {"content": "CI runs on every push"}))[
                "entries"
            ] == ["CI runs on every push"]
            replaced = _result(
                await client.call_tool(
                    "memory_file_replace", {"match": "every push", "content": "CI runs on every PR"}
                )
            )
            assert replaced["entries"] == ["CI runs on every PR"]
            assert (
                _result(await client.call_tool("memory_file_remove", {"match": "every PR"}))["entries"] == []
            )
            assert _result(await client.call_tool("memory_file_read", {"kind": "user"}))["entries"] == []

            _result(await client.call_tool("daily_log_append", {"text": "wired the MCP server"}))
            today = datetime.now(UTC).date().isoformat()
            log = _result(await client.call_tool("daily_log_read", {"date": today}))
            assert "wired the MCP server" in log["text"]

            conflict = await client.call_tool("memory_file_remove", {"match": "nothing like this"})
            assert conflict.is_error and "404 not_found" in conflict.content[0].text

    asyncio.run(run())


def test_a_tool_the_keys_scope_forbids_answers_the_apis_refusal(server: Server) -> None:
    async def run() -> None:
        async with Client(_params(server, "reader")) as client:
            refused = await client.call_tool("remember", {"content": "Readers cannot write"})
            assert refused.is_error
            assert "403 forbidden" in refused.content[0].text
            allowed = await client.call_tool("recall", {"query": "anything"})
            assert not allowed.is_error
            outside = await client.call_tool("recall", {"query": "anything", "namespaces": ["/users/u-1"]})
            assert outside.is_error and "403" in outside.content[0].text

    asyncio.run(run())


def test_without_namespace_the_keys_own_namespace_is_used_or_the_choice_is_explained(server: Server) -> None:
    async def run() -> None:
        async with Client(_params(server, "solo", namespace=None)) as client:
            me = _result(await client.call_tool("whoami", {}))
            assert me["namespaces"] == ["/projects/solo"]
            added = _result(
                await client.call_tool(
                    "remember", {"content": "The solo project ships weekly", "verbose": True}
                )
            )
            assert added["memory"]["namespace"] == "/projects/solo"
        async with Client(_params(server, "writer", namespace=None)) as client:
            unclear = await client.call_tool("remember", {"content": "Where would this go"})
            assert unclear.is_error and "/projects/*" in unclear.content[0].text
            named = await client.call_tool(
                "remember", {"content": "The sdk project uses httpx", "namespace": NS}
            )
            assert not named.is_error

    asyncio.run(run())
