"""The MCP server: the memory API as MCP tools, over stdio or streamable HTTP (the official `mcp` SDK).

It is a client of the API, not of the storage: every tool is one call of `AsyncClient` with the API key the
server was started with, so the key's tenant, namespaces and scopes govern every tool (a tool the key may not
use answers the API's refusal, e.g. `403 forbidden: ...`, as the tool's error), and the same server works
against the local runtime (`agent-memory serve`) or a deployed API URL. It lives in the client package
(`pip install 'agent-memory-client[mcp]'`, console script `agent-memory-mcp`) so an agent's machine needs
neither the server package nor AWS libraries.

    AGENT_MEMORY_URL=http://127.0.0.1:8765 AGENT_MEMORY_API_KEY=... agent-memory-mcp --namespace /projects/x
    agent-memory-mcp --transport streamable-http --port 8808     # http://127.0.0.1:8808/mcp
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from . import __version__
from ._operations import FileKind, MemoryType, Tier
from .client import KEY_ENV, URL_ENV, AsyncClient
from .errors import ApiError

NAMESPACE_ENV = "AGENT_MEMORY_NAMESPACE"
LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
TOOL_NAMES = (
    "whoami",
    "remember",
    "recall",
    "correct",
    "archive",
    "history",
    "memory_file_read",
    "memory_file_add",
    "memory_file_replace",
    "memory_file_remove",
    "daily_log_append",
    "daily_log_read",
)

INSTRUCTIONS = (
    "Long-term memory shared across agent tools. `recall` before answering anything that may depend on the "
    "user's preferences or the project's state; `remember` durable facts (preferences, decisions, project "
    "state), not transient chatter; `correct` a memory that turned out wrong instead of adding a second one. "
    "MEMORY.md / USER.md entries (memory_file_*) are always in the agent's prompt: keep them short."
)

_READ = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
_WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
_DESTRUCTIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)


def build_server(client: AsyncClient, default_namespace: str | None = None) -> MCPServer:
    """An MCP server whose tools call the API through `client`. A tool call that names no namespace uses
    `default_namespace`, else the key's one namespace when the key is bound to exactly one (`GET /v1/whoami`)."""
    server: MCPServer = MCPServer(name="agent-memory", version=__version__, instructions=INSTRUCTIONS)
    key_namespace: list[str] = []

    async def ns(namespace: str | None) -> str:
        if namespace or default_namespace:
            return namespace or default_namespace or ""
        if not key_namespace:
            patterns = (await call(client.whoami())).get("namespaces", [])
            exact = [p for p in patterns if "*" not in p]
            if len(patterns) != 1 or len(exact) != 1:
                raise ToolError(
                    "no namespace: pass `namespace` (e.g. /projects/billing) or start the server with --namespace; "
                    f"this key may use {', '.join(patterns) or 'no namespace'}"
                )
            key_namespace.append(exact[0])
        return key_namespace[0]

    async def call(awaitable: Any) -> dict[str, Any]:
        try:
            result: dict[str, Any] = await awaitable
        except ApiError as exc:
            raise ToolError(str(exc)) from exc
        return result

    @server.tool(annotations=_READ)
    async def whoami() -> dict[str, Any]:
        """What this server's API key may do: its tenant, namespace patterns and scopes."""
        return await call(client.whoami())

    @server.tool(annotations=_WRITE)
    async def remember(
        content: str,
        namespace: str | None = None,
        type: MemoryType | None = None,
        tier: Tier | None = None,
        context: str | None = None,
    ) -> dict[str, Any]:
        """Remember one durable fact (a preference, a decision, project state). The service decides: added,
        merged with a near-duplicate, superseding, pending a conflict, or rejected; unsafe content is refused."""
        return await call(
            client.remember(
                content, await ns(namespace), type=type, tier=tier, context=context, source_kind="tool"
            )
        )

    @server.tool(annotations=_READ)
    async def recall(
        query: str, namespaces: list[str] | None = None, k: int = 8, types: list[MemoryType] | None = None
    ) -> dict[str, Any]:
        """Find memories relevant to `query` (hybrid vector + keyword search), best first."""
        chosen = namespaces or [await ns(None)]
        return await call(client.recall(query, chosen, k=k, types=types))

    @server.tool(annotations=_WRITE)
    async def correct(memory_id: str, content: str, reason: str = "") -> dict[str, Any]:
        """Correct a memory that is wrong: the new content supersedes it (both stay in its history)."""
        return await call(client.correct(memory_id, content, reason=reason or None))

    @server.tool(annotations=_DESTRUCTIVE)
    async def archive(memory_id: str, reason: str = "") -> dict[str, Any]:
        """Archive a memory that no longer holds (never deleted; it can be restored)."""
        return await call(client.archive(memory_id, reason=reason or None))

    @server.tool(annotations=_READ)
    async def history(memory_id: str) -> dict[str, Any]:
        """A memory's lineage (the versions it corrected or merged) and its change log."""
        return await call(client.history(memory_id))

    @server.tool(annotations=_READ)
    async def memory_file_read(kind: FileKind = "memory", namespace: str | None = None) -> dict[str, Any]:
        """Read MEMORY.md (kind=memory) or USER.md (kind=user): its entries and usage against its cap."""
        return await call(client.read_file(kind, await ns(namespace)))

    @server.tool(annotations=_WRITE)
    async def memory_file_add(
        content: str, kind: FileKind = "memory", namespace: str | None = None
    ) -> dict[str, Any]:
        """Add an entry to MEMORY.md (kind=memory) or USER.md (kind=user); refused over the file's cap."""
        return await call(client.add_file_entry(kind, content, await ns(namespace)))

    @server.tool(annotations=_WRITE)
    async def memory_file_replace(
        match: str, content: str, kind: FileKind = "memory", namespace: str | None = None
    ) -> dict[str, Any]:
        """Replace the one entry of MEMORY.md / USER.md that contains `match`."""
        return await call(client.replace_file_entry(kind, match, content, await ns(namespace)))

    @server.tool(annotations=_DESTRUCTIVE)
    async def memory_file_remove(
        match: str, kind: FileKind = "memory", namespace: str | None = None
    ) -> dict[str, Any]:
        """Remove the one entry of MEMORY.md / USER.md that contains `match`."""
        return await call(client.remove_file_entry(kind, match, await ns(namespace)))

    @server.tool(annotations=_WRITE)
    async def daily_log_append(text: str, namespace: str | None = None) -> dict[str, Any]:
        """Append a line to today's daily log (memory/YYYY-MM-DD.md)."""
        return await call(client.append_daily_log(text, await ns(namespace)))

    @server.tool(annotations=_READ)
    async def daily_log_read(date: str, namespace: str | None = None) -> dict[str, Any]:
        """Read one day's log (`date` as YYYY-MM-DD)."""
        return await call(client.read_daily_log(await ns(namespace), date))

    return server


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agent-memory-mcp", description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help=f"the API's URL (default ${URL_ENV}, else http://127.0.0.1:8765)")
    parser.add_argument(
        "--api-key-env",
        default=KEY_ENV,
        help=f"the environment variable holding the API key (default {KEY_ENV}; never pass a key as an argument)",
    )
    parser.add_argument(
        "--namespace", help=f"namespace used when a tool call names none (default ${NAMESPACE_ENV})"
    )
    parser.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="streamable HTTP: address to listen on")
    parser.add_argument("--port", type=int, default=8808, help="streamable HTTP: port to listen on")
    parser.add_argument("--path", default="/mcp", help="streamable HTTP: endpoint path")
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="streamable HTTP: allow an address other than loopback (anyone who reaches it acts with the key)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.transport == "streamable-http" and args.host not in LOOPBACK and not args.allow_remote:
        print(
            f"agent-memory-mcp: refusing to listen on {args.host}: the server has no authentication of its own "
            "and acts with its API key; use a loopback address or pass --allow-remote",
            file=sys.stderr,
        )
        return 2
    api_key = os.environ.get(args.api_key_env)
    if not api_key:
        print(f"agent-memory-mcp: set {args.api_key_env} to an API key", file=sys.stderr)
        return 2
    client = AsyncClient(args.url, api_key)
    server = build_server(client, args.namespace or os.environ.get(NAMESPACE_ENV))
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=args.host, port=args.port, streamable_http_path=args.path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
