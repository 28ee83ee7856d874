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
from typing import Annotated, Any, cast

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp_types import ToolAnnotations
from pydantic import Field, create_model

from . import __version__
from . import _mcp_shapes as shape
from ._mcp_shapes import (
    Content,
    Context,
    Cursor,
    Date,
    EntryMatch,
    Group,
    IncludeChildren,
    K,
    Keep,
    Kind,
    LogLine,
    MemoryId,
    Namespaces,
    Note,
    OptionalNamespace,
    Outcome,
    PageLimit,
    Query,
    Reason,
    Rerank,
    SkillName,
    StatusArg,
    StrictArguments,
    TierArg,
    TypeArg,
    Types,
    Verbose,
)
from .client import KEY_ENV, URL_ENV, AsyncClient
from .errors import ApiError

NAMESPACE_ENV = "AGENT_MEMORY_NAMESPACE"
LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
TOOL_NAMES = (
    "whoami",
    "remember",
    "recall",
    "memories_list",
    "correct",
    "archive",
    "history",
    "conflicts_list",
    "conflict_resolve",
    "memory_file_read",
    "memory_file_add",
    "memory_file_replace",
    "memory_file_remove",
    "daily_log_append",
    "daily_log_read",
    "skill_report_outcome",
)

INSTRUCTIONS = (
    "Long-term memory shared across agent tools. `recall` before answering anything that may depend on the "
    "user's preferences or the project's state; `remember` durable facts (preferences, decisions, project "
    "state), not transient chatter; `correct` a memory that turned out wrong instead of adding a second one. "
    "A memory that contradicts another is held `pending` until `conflicts_list` / `conflict_resolve` settle "
    "it. MEMORY.md / USER.md entries (memory_file_*) are always in the agent's prompt: keep them short. "
    "Answers are compact; pass verbose=true only when you need a record's full fields."
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


def strict_tool(fn: Any, annotations: ToolAnnotations) -> Tool:
    """A tool whose arguments are checked strictly: its JSON schema says `additionalProperties: false` and
    a call with an argument the tool does not take is refused, naming the arguments it takes."""
    description = " ".join((fn.__doc__ or "").split())  # one paragraph, without the source's indentation
    tool = Tool.from_function(fn, description=description, annotations=annotations)
    loose = tool.fn_metadata.arg_model
    strict = cast("type[ArgModelBase]", create_model(loose.__name__, __base__=(loose, StrictArguments)))
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)
    return tool


def build_server(client: AsyncClient, default_namespace: str | None = None) -> MCPServer:
    """An MCP server whose tools call the API through `client`. A tool call that names no namespace uses
    `default_namespace`, else the key's one namespace when the key is bound to exactly one (`GET /v1/whoami`)."""
    key_namespace: list[str] = []
    tools: list[Tool] = []

    def tool(annotations: ToolAnnotations) -> Any:
        def register(fn: Any) -> Any:
            tools.append(strict_tool(fn, annotations))
            return fn

        return register

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

    for group in (_memory_tools, _edit_tools, _conflict_tools, _file_tools):
        group(tool, client, ns, call)
    return MCPServer(name="agent-memory", version=__version__, instructions=INSTRUCTIONS, tools=tools)


def _memory_tools(tool: Any, client: AsyncClient, ns: Any, call: Any) -> None:
    @tool(_READ)
    async def whoami() -> dict[str, Any]:
        """What this server's API key may do: its namespace patterns (`*` = any; `/projects/*` = every
        namespace below /projects) and scopes (read, write, admin)."""
        answer = await call(client.whoami())
        return {key: answer.get(key) for key in ("namespaces", "scopes") if key in answer}

    @tool(_WRITE)
    async def remember(
        content: Annotated[Content, Field(description="One durable fact in plain language (1-4,000 chars)")],
        namespace: OptionalNamespace = None,
        type: TypeArg = None,
        tier: TierArg = None,
        context: Context = None,
        verbose: Verbose = False,
    ) -> dict[str, Any]:
        """Remember one durable fact (a preference, a decision, project state). The service decides and says
        why: added, merged (same fact already known), superseded (replaces an older value), pending (contradicts
        a memory: see conflicts_list), or rejected; content holding a secret or an injection is refused."""
        answer = await call(
            client.remember(
                content, await ns(namespace), type=type, tier=tier, context=context, source_kind="tool"
            )
        )
        return answer if verbose else shape.remembered(answer)

    @tool(_READ)
    async def recall(
        query: Query,
        namespaces: Namespaces = None,
        k: K = 8,
        types: Types = None,
        rerank: Rerank = None,
        verbose: Verbose = False,
    ) -> dict[str, Any]:
        """Find the memories most relevant to `query` (hybrid vector + keyword search), best first. Each hit
        is {id, content, score 0-1, time: when the fact became true, UTC}, at most 300 bytes: longer content is cut with '…' (verbose=true
        gives whole records)."""
        chosen = namespaces or [await ns(None)]
        answer = await call(client.recall(query, chosen, k=k, types=types, rerank=rerank))
        return answer if verbose else shape.recall(answer, with_namespace=len(chosen) > 1)

    @tool(_READ)
    async def memories_list(
        namespace: OptionalNamespace = None,
        include_children: IncludeChildren = True,
        status: StatusArg = None,
        limit: PageLimit = 20,
        cursor: Cursor = None,
        verbose: Verbose = False,
    ) -> dict[str, Any]:
        """List the memories of a namespace and of the namespaces below it (by namespace, then oldest
        first; include_children=false: that namespace alone), a page at a time (pass back `next_cursor` to
        read on). Use recall to find memories by meaning; use this to review everything kept. An empty
        listing answers a `note` saying why."""
        chosen = await ns(namespace)
        answer = await call(
            client.list_memories(
                chosen, status=status, limit=limit, cursor=cursor, include_children=include_children
            )
        )
        return answer if verbose else shape.page(answer, with_namespace=include_children)


def _edit_tools(tool: Any, client: AsyncClient, ns: Any, call: Any) -> None:
    @tool(_WRITE)
    async def correct(
        memory_id: MemoryId,
        content: Annotated[Content, Field(description="The corrected fact, in full (1-4,000 chars)")],
        reason: Reason = "",
        verbose: Verbose = False,
    ) -> dict[str, Any]:
        """Correct a memory that is wrong: the new content supersedes it (both stay in its history)."""
        answer = await call(client.correct(memory_id, content, reason=reason or None))
        if verbose:
            return answer
        return {"previous": shape.memory(answer["previous"]), "memory": shape.memory(answer["memory"])}

    @tool(_DESTRUCTIVE)
    async def archive(memory_id: MemoryId, reason: Reason = "", verbose: Verbose = False) -> dict[str, Any]:
        """Archive a memory that no longer holds: it stops being recalled (never deleted; restorable)."""
        answer = await call(client.archive(memory_id, reason=reason or None))
        return answer if verbose else shape.memory(answer)

    @tool(_READ)
    async def history(memory_id: MemoryId, verbose: Verbose = False) -> dict[str, Any]:
        """A memory's lineage (the versions it corrected, merged or superseded) and its change log."""
        answer = await call(client.history(memory_id))
        return answer if verbose else shape.history(answer)


def _conflict_tools(tool: Any, client: AsyncClient, ns: Any, call: Any) -> None:
    @tool(_READ)
    async def conflicts_list(namespace: OptionalNamespace = None, verbose: Verbose = False) -> dict[str, Any]:
        """Open conflicts: groups of memories that contradict each other, each held `pending` until
        conflict_resolve keeps the true one(s). Check it when a remember answered `pending`."""
        answer = await call(client.list_conflicts(await ns(namespace)))
        return answer if verbose else shape.conflicts(answer)

    @tool(_WRITE)
    async def conflict_resolve(
        group: Group, keep: Keep, reason: Reason = "", verbose: Verbose = False
    ) -> dict[str, Any]:
        """Settle a conflict: the memories in `keep` become active, the group's others are superseded by them
        (kept in history). Ask the user when it is not clear which is true."""
        answer = await call(client.resolve_conflict(group, keep, reason=reason or None))
        return answer if verbose else {"memories": [shape.memory(m) for m in answer.get("memories", [])]}

    @tool(_WRITE)
    async def skill_report_outcome(
        name: SkillName, outcome: Outcome, note: Note = "", namespace: OptionalNamespace = None
    ) -> dict[str, Any]:
        """Report how using a skill (skills/<name>/SKILL.md) went, so skills that help are kept and those
        that fail or mislead are reviewed."""
        answer = await call(
            client.report_skill_outcome(name, await ns(namespace), outcome, note=note or None)
        )
        return {key: answer.get(key) for key in ("uses", "outcomes", "last_used_at") if key in answer}


def _file_tools(tool: Any, client: AsyncClient, ns: Any, call: Any) -> None:
    @tool(_READ)
    async def memory_file_read(kind: Kind = "memory", namespace: OptionalNamespace = None) -> dict[str, Any]:
        """Read MEMORY.md or USER.md: its entries and its usage (`used` of `limit` characters)."""
        return shape.memory_file(await call(client.read_file(kind, await ns(namespace))))

    @tool(_WRITE)
    async def memory_file_add(
        content: Annotated[Content, Field(description="The new entry: one short line or paragraph")],
        kind: Kind = "memory",
        namespace: OptionalNamespace = None,
    ) -> dict[str, Any]:
        """Add an entry to MEMORY.md or USER.md. Refused when the file would pass its character cap (the
        error gives used/limit: replace or remove an entry first) or when the same entry is already there."""
        return shape.memory_file(await call(client.add_file_entry(kind, content, await ns(namespace))))

    @tool(_WRITE)
    async def memory_file_replace(
        match: EntryMatch,
        content: Annotated[Content, Field(description="The entry's new text, in full")],
        kind: Kind = "memory",
        namespace: OptionalNamespace = None,
    ) -> dict[str, Any]:
        """Replace the one entry of MEMORY.md / USER.md that contains `match` with `content`."""
        return shape.memory_file(
            await call(client.replace_file_entry(kind, match, content, await ns(namespace)))
        )

    @tool(_DESTRUCTIVE)
    async def memory_file_remove(
        match: EntryMatch, kind: Kind = "memory", namespace: OptionalNamespace = None
    ) -> dict[str, Any]:
        """Remove the one entry of MEMORY.md / USER.md that contains `match`."""
        return shape.memory_file(await call(client.remove_file_entry(kind, match, await ns(namespace))))

    @tool(_WRITE)
    async def daily_log_append(text: LogLine, namespace: OptionalNamespace = None) -> dict[str, Any]:
        """Append a line to today's daily log (memory/YYYY-MM-DD.md, UTC): what happened, for later review."""
        return await call(client.append_daily_log(text, await ns(namespace)))

    @tool(_READ)
    async def daily_log_read(date: Date, namespace: OptionalNamespace = None) -> dict[str, Any]:
        """Read one day's log (memory/YYYY-MM-DD.md): the lines appended that day, oldest first."""
        return await call(client.read_daily_log(await ns(namespace), date))


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
