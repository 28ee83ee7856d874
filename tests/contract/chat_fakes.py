"""Test doubles for the chat model: a scripted model behind the `ChatModel` port that records every request,
and a builder of the services of a session on real local adapters (tmp_path, hashing embedder)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_memory.adapters.local.embedders import HashingEmbedder
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.adapters.local.session_store import SqliteSessionStore
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.adapters.posix.file_store import PosixFileStore
from agent_memory.domain import safety
from agent_memory.domain.files.memory_files import MemoryFilesService
from agent_memory.domain.memory.policy import FileCaps, MemoryPolicy
from agent_memory.domain.memory.service import MemoryService
from agent_memory.domain.ports import Clock
from agent_memory.domain.sessions.chat import ChatService
from agent_memory.domain.sessions.config import ChatConfig, PromptCacheConfig, SessionConfig
from agent_memory.domain.sessions.ports import ChatModel, ModelReply, SessionStore, Usage
from agent_memory.domain.sessions.sessions import SessionService
from bench.prompt_cache_simulator import CacheBlock, PromptCacheSimulator, converse_blocks


def text_reply(text: str, usage: Usage | None = None) -> ModelReply:
    return ModelReply(content=[{"text": text}], stop_reason="end_turn", usage=usage or Usage(10, 5))


def tool_reply(
    name: str, tool_input: dict[str, Any], tool_use_id: str = "tool-1", text: str = ""
) -> ModelReply:
    content: list[dict[str, Any]] = [{"text": text}] if text else []
    content.append({"toolUse": {"toolUseId": tool_use_id, "name": name, "input": tool_input}})
    return ModelReply(content=content, stop_reason="tool_use", usage=Usage(10, 5))


@dataclass
class Call:
    system: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    tool_config: dict[str, Any] | None
    inference_config: dict[str, Any]

    def prefix_bytes(self) -> bytes:
        """The cache-relevant prefix as the service handed it over: tools, then system."""
        return json.dumps({"tools": self.tool_config, "system": self.system}, ensure_ascii=False).encode()


Script = Callable[["Call"], ModelReply] | ModelReply | Exception


@dataclass
class FakeChatModel:
    """Answers from a script, in order; each entry is a reply, an exception to raise, or a function of the
    request. `simulate_cache` adds usage computed by the prompt-cache model from the exact request bytes."""

    script: list[Script] = field(default_factory=list)
    model_id: str = "anthropic.claude-sonnet-4-5-20250929-v1:0"
    simulate_cache: PromptCacheSimulator | None = None
    clock: Clock | None = None
    calls: list[Call] = field(default_factory=list)

    def converse(
        self,
        *,
        system: Sequence[Mapping[str, Any]],
        messages: Sequence[Mapping[str, Any]],
        tool_config: Mapping[str, Any] | None,
        inference_config: Mapping[str, Any],
    ) -> ModelReply:
        call = Call(
            copy.deepcopy(list(system)),
            copy.deepcopy(list(messages)),
            copy.deepcopy(dict(tool_config)) if tool_config else None,
            dict(inference_config),
        )
        self.calls.append(call)
        if not self.script:
            raise AssertionError("the fake model was called more often than scripted")
        entry = self.script.pop(0)
        if isinstance(entry, Exception):
            raise entry
        reply = entry(call) if callable(entry) else entry
        if self.simulate_cache is not None and self.clock is not None:
            outcome = self.simulate_cache.send(request_blocks(call), self.clock.now())
            reply = ModelReply(reply.content, reply.stop_reason, outcome.usage(reply.usage.output_tokens))
        return reply


def request_blocks(call: Call) -> list[CacheBlock]:
    """A request in prefix order (tools, system blocks, messages) for the prompt-cache simulator: one block
    per tool, system block and message content block; cache points mark the block before them."""
    return converse_blocks(call.tool_config, call.system, call.messages)


@dataclass
class ChatStack:
    files: MemoryFilesService
    memory: MemoryService
    store: SessionStore
    sessions: SessionService
    chat: ChatService
    model: FakeChatModel | ChatModel | None


def build_stack(
    root: Path,
    clock: Clock,
    model: FakeChatModel | ChatModel | None,
    *,
    store: SessionStore | None = None,
    chat_config: ChatConfig | None = None,
    session_config: SessionConfig | None = None,
    caps: FileCaps | None = None,
    monitor: Any = None,
) -> ChatStack:
    policy = MemoryPolicy(caps=caps or FileCaps())
    files = MemoryFilesService(PosixFileStore(root / "files"), policy.caps, safety.first_rule, clock)
    memory = MemoryService(
        store=SqliteRecordStore(root / "memory.db"),
        index=LocalSearchIndex(root / "index"),
        embedder=HashingEmbedder(),
        clock=clock,
        policy=policy,
    )
    session_store = store or SqliteSessionStore(root / "sessions.db")
    sessions = SessionService(session_store, files, clock, session_config, monitor=monitor)
    chat = ChatService(sessions, files, memory, model, clock, chat_config, PromptCacheConfig())
    return ChatStack(files, memory, session_store, sessions, chat, model)


# --------------------------------------------------------------------------- API Gateway events


class FakeLambdaContext:
    function_name = "agent-memory-chat"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:agent-memory-chat"
    aws_request_id = "test-request"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


def api_event(
    method: str,
    path: str,
    body: Any = None,
    *,
    tenant: str | None = "acme",
    namespaces: str = "*",
    scopes: str = "read,write",
    key_id: str = "k1",
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The API Gateway REST proxy event the functions receive, with the authorizer's context (none when
    `tenant` is None) and any extra `headers` (an Authorization header, say)."""
    authorizer = (
        {
            "principalId": key_id,
            "tenant": tenant,
            "namespaces": namespaces,
            "scopes": scopes,
            "key_id": key_id,
        }
        if tenant
        else None
    )
    headers = {"Content-Type": "application/json", "Host": "api.example.com", **(headers or {})}
    return {
        "resource": "/v1/{proxy+}",
        "path": path,
        "httpMethod": method,
        "headers": headers,
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": {"proxy": path.removeprefix("/v1/")},
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/v1/{proxy+}",
            "httpMethod": method,
            "path": f"/prod{path}",
            "stage": "prod",
            "requestId": "req-1",
            "identity": {"sourceIp": "127.0.0.1"},
            "authorizer": authorizer,
        },
        "body": json.dumps(body) if body is not None else None,
        "isBase64Encoded": False,
    }
