"""The MCP tools as a model reads and calls them, in process (`build_server` over the running local server):
every parameter described and bounded, unknown arguments refused by name, compact answers (a recall hit is at
most 300 bytes, without tenant, hashes or embedding model), and the tools that list and resolve conflicts and
report a skill's outcome."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from agent_memory_client import AsyncClient, Client
from agent_memory_client.mcp_server import TOOL_NAMES, build_server

from .conftest import Server

BOUNDED = ("maxLength", "pattern", "enum", "maximum", "const")
"""A string or number parameter carries one of these (a length cap, a pattern, an enumeration, a range)."""


def _ns() -> str:
    return f"/projects/mcp-tools-{uuid.uuid4().hex[:8]}"


@dataclass
class Tools:
    """Calls the tools of an MCP server built for the admin key with `namespace` as its default. Each call
    builds the server on a fresh client: `asyncio.run` gives every call its own event loop."""

    url: str
    key: str
    namespace: str

    def server(self, client: AsyncClient | None = None) -> MCPServer:
        return build_server(client or AsyncClient(self.url, self.key), self.namespace)


def _run(tools: Tools, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async def go() -> Any:
        async with AsyncClient(tools.url, tools.key) as client:
            return await tools.server(client).call_tool(name, arguments)

    result = asyncio.run(go())
    structured = result.structured_content
    return dict(structured.get("result", structured)) if isinstance(structured, dict) else {}


@pytest.fixture
def namespace() -> str:
    return _ns()


@pytest.fixture
def mcp(server: Server, namespace: str) -> Iterator[Tools]:
    yield Tools(server.url, server.keys["admin"], namespace)


def _tools(tools: Tools) -> dict[str, Any]:
    return {tool.name: tool for tool in asyncio.run(tools.server().list_tools())}


def _branches(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The non-null alternatives of a property (an optional parameter is `anyOf [X, null]`)."""
    return [branch for branch in schema.get("anyOf", [schema]) if branch.get("type") != "null"]


def test_every_tool_parameter_is_described_bounded_and_strict(mcp: Tools) -> None:
    tools = _tools(mcp)
    assert set(tools) == set(TOOL_NAMES)
    for name, tool in tools.items():
        schema = tool.input_schema
        assert len(tool.description or "") > 40 and "  " not in (tool.description or ""), name
        assert schema.get("additionalProperties") is False, name
        for param, prop in schema.get("properties", {}).items():
            assert len(prop.get("description", "")) >= 15, f"{name}.{param} has no description"
            for branch in _branches(prop):
                if branch.get("type") in ("string", "integer"):
                    assert any(key in branch for key in BOUNDED), f"{name}.{param} is unbounded: {branch}"
                if branch.get("type") == "array":
                    assert "maxItems" in branch and "minItems" in branch, f"{name}.{param}"
                    assert any(key in branch["items"] for key in BOUNDED), f"{name}.{param} items"
    recall = tools["recall"].input_schema["properties"]
    assert (recall["k"]["minimum"], recall["k"]["maximum"], recall["k"]["default"]) == (1, 50, 8)
    (namespaces,) = _branches(recall["namespaces"])
    assert namespaces["items"]["pattern"].startswith("^(?:/")
    for name, tool in tools.items():
        if "namespace" in tool.input_schema["properties"]:
            (branch,) = _branches(tool.input_schema["properties"]["namespace"])
            assert branch["pattern"] == namespaces["items"]["pattern"], name
    assert tools["daily_log_read"].input_schema["properties"]["date"]["pattern"] == r"^\d{4}-\d{2}-\d{2}$"
    outcome = tools["skill_report_outcome"].input_schema["properties"]["outcome"]
    assert outcome["enum"] == ["helped", "failed", "misled"]


def test_an_unknown_or_out_of_bounds_argument_is_refused_with_what_the_tool_takes(mcp: Tools) -> None:
    with pytest.raises(ToolError) as unknown:
        _run(mcp, "recall", {"query": "deploys", "namespace": "/projects/x"})  # recall takes `namespaces`
    message = str(unknown.value)
    assert "unknown argument(s) namespace" in message and "namespaces" in message and "query" in message
    with pytest.raises(ToolError, match="less than or equal to 50"):
        _run(mcp, "recall", {"query": "deploys", "k": 500})
    with pytest.raises(ToolError, match="pattern"):
        _run(mcp, "daily_log_read", {"date": "31/03/2026"})
    with pytest.raises(ToolError, match="pattern"):
        _run(mcp, "remember", {"content": "A fact", "namespace": "projects/no-leading-slash"})


def test_a_recall_hit_is_compact_and_verbose_gives_the_whole_record(mcp: Tools, namespace: str) -> None:
    long = (
        "Deploy runbook for the billing service: " + "check the canary, then widen the rollout; " * 60
    ).strip()
    added = _run(mcp, "remember", {"content": long, "type": "task_action"})
    assert added["decision"] == "added" and set(added["memory"]) == {"id", "content", "time"}
    _run(mcp, "remember", {"content": "Billing deploys are frozen on Fridays ✋ — après 15h"})

    compact = _run(mcp, "recall", {"query": "how do we deploy billing", "k": 5})
    hits = compact["results"]
    assert len(hits) == 2
    for hit in hits:
        size = len(json.dumps(hit, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        assert size <= 300, (size, hit)
        assert set(hit) == {"id", "content", "score", "time"}
    cut = next(hit for hit in hits if hit["id"] == added["memory"]["id"])
    assert cut["content"].endswith("…") and long.startswith(cut["content"][:-1])
    text = json.dumps(compact)
    for hidden in ("tenant", "content_hash", "embedding_model", "query_hash"):
        assert hidden not in text

    verbose = _run(mcp, "recall", {"query": "how do we deploy billing", "k": 5, "verbose": True})
    full = next(r["memory"] for r in verbose["results"] if r["memory"]["id"] == added["memory"]["id"])
    assert full["content"] == long and "embedding_model" in full


def test_recall_passes_rerank_through_and_says_whether_it_applied(mcp: Tools) -> None:
    from agent_memory_client import _mcp_shapes as shape

    recall = _tools(mcp)["recall"].input_schema["properties"]["rerank"]
    assert [branch.get("enum") or [branch["const"]] for branch in _branches(recall)] == [["bedrock"]]
    # The local server has no reranker: the API's 422 reaches the model with what to do
    with pytest.raises(ToolError, match="not available on this deployment"):
        _run(mcp, "recall", {"query": "how do we deploy billing", "rerank": "bedrock"})
    with pytest.raises(ToolError):
        _run(mcp, "recall", {"query": "how do we deploy billing", "rerank": "cohere"})
    hit = {"memory": {"id": "mem_1", "content": "Deploys run on Fridays"}, "score": 0.5}
    applied = shape.recall({"results": [hit], "rerank": {"applied": True}}, with_namespace=False)
    kept = shape.recall(
        {"results": [hit], "rerank": {"applied": False, "fallback": "x"}}, with_namespace=False
    )
    plain = shape.recall({"results": [hit], "rerank": None}, with_namespace=False)
    assert (applied["reranked"], kept["reranked"], "reranked" in plain) == (True, False, False)


def test_conflicts_are_listed_and_resolved_from_the_tools(mcp: Tools, namespace: str) -> None:
    assert _run(mcp, "conflicts_list", {})["conflicts"] == []
    # A conflict is two values both dated to the same moment (issue 27); the tools have no valid_from, so the
    # agent's developer seeds it through the API.
    moment = "2026-11-02T09:00:00+00:00"
    with httpx.Client(base_url=mcp.url, headers={"Authorization": f"Bearer {mcp.key}"}) as api:
        first = api.post(
            "/v1/memories",
            json={"content": "The standup is at 9:00", "namespace": mcp.namespace, "valid_from": moment},
        ).json()["memory"]["id"]
        held = api.post(
            "/v1/memories",
            json={"content": "The standup is at 10:00", "namespace": mcp.namespace, "valid_from": moment},
        ).json()
    assert held["decision"] == "pending", held

    (group,) = _run(mcp, "conflicts_list", {})["conflicts"]
    assert {m["id"] for m in group["memories"]} == {first, held["memory"]["id"]}
    assert {m["status"] for m in group["memories"]} == {"pending"}

    resolved = _run(mcp, "conflict_resolve", {"group": group["group"], "keep": [held["memory"]["id"]]})
    statuses = {m["id"]: m.get("status", "active") for m in resolved["memories"]}
    assert statuses[held["memory"]["id"]] == "active"
    after = _run(mcp, "conflicts_list", {})
    assert after["conflicts"] == [] and "no open conflict" in after["note"]
    with pytest.raises(ToolError, match="404"):
        _run(mcp, "conflict_resolve", {"group": group["group"], "keep": [first]})


def test_a_skill_outcome_is_reported(server: Server, mcp: Tools, namespace: str) -> None:
    body = "# When\nBefore a release.\n\n# Steps\nRun the checks.\n"
    with Client(server.url, server.keys["admin"]) as admin:
        admin.create_skill(namespace, "release-check", "How to check a release", body)
    first = _run(mcp, "skill_report_outcome", {"name": "release-check", "outcome": "misled", "note": "stale"})
    assert first["outcomes"].get("misled") == 1
    second = _run(mcp, "skill_report_outcome", {"name": "release-check", "outcome": "helped"})
    assert (second["outcomes"].get("misled"), second["outcomes"].get("helped")) == (1, 1)
    with pytest.raises(ToolError, match="pattern"):
        _run(mcp, "skill_report_outcome", {"name": "Release Check", "outcome": "helped"})


def test_a_hit_is_cut_to_300_bytes_on_character_boundaries() -> None:
    from agent_memory_client import _mcp_shapes as shape

    for unit in ("a", "é", "✋", "🙂"):
        content = "Start " + unit * 400
        hit = shape.fit(
            {"id": "mem_" + "0" * 32, "content": content, "time": "2026-03-31T09:15:02Z", "score": 0.5}
        )
        size = len(json.dumps(hit, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        assert 280 <= size <= 300, (unit, size)  # cut, but not far below the budget
        assert hit["content"].endswith("…") and content.startswith(hit["content"][:-1])


def test_memories_are_listed_with_their_children_by_page_and_an_empty_parent_alone_names_them(
    mcp: Tools, namespace: str
) -> None:
    parent = namespace
    for user, fact in (
        ("ana", "Ana prefers green tea after lunch"),
        ("ben", "Ben reviews the schema changes"),
    ):
        _run(mcp, "remember", {"content": fact, "namespace": f"{parent}/users/{user}"})

    empty = _run(mcp, "memories_list", {"include_children": False})
    first = _run(mcp, "memories_list", {"limit": 1})  # children included by default
    rest = _run(mcp, "memories_list", {"limit": 1, "cursor": first["next_cursor"]})

    assert empty["memories"] == [] and f"{parent}/users/ana" in empty["note"]
    assert empty["child_namespaces"] == [f"{parent}/users/ana", f"{parent}/users/ben"]
    listed = first["memories"] + rest["memories"]
    assert [m["namespace"] for m in listed] == [f"{parent}/users/ana", f"{parent}/users/ben"]
    assert all(set(m) == {"id", "content", "time", "namespace"} for m in listed)
    schema = _tools(mcp)["memories_list"].input_schema["properties"]
    assert (schema["limit"]["minimum"], schema["limit"]["maximum"]) == (1, 100)
