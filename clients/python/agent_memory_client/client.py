"""The sync `Client` and the async `AsyncClient`: every route of the API (see `_operations.ROUTES`)."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from types import TracebackType
from typing import Any, Self

import httpx

from . import __version__
from ._http import JSON, Call, RetryPolicy, auth_headers, send_async, send_sync
from ._operations import MemoryType, Operations, Status, Tier

URL_ENV = "AGENT_MEMORY_URL"
KEY_ENV = "AGENT_MEMORY_API_KEY"
DEFAULT_URL = "http://127.0.0.1:8765"
"""`agent-memory serve`'s default address."""

USER_AGENT = f"agent-memory-client/{__version__}"


def _from_env(base_url: str | None, api_key: str | None) -> tuple[str, str | None]:
    return base_url or os.environ.get(URL_ENV) or DEFAULT_URL, api_key or os.environ.get(KEY_ENV)


class Client(Operations[JSON]):
    """Synchronous client.

    `base_url` is the local server's URL (`agent-memory serve`, default http://127.0.0.1:8765) or a deployed
    API's stage URL (e.g. https://abc123.execute-api.eu-west-1.amazonaws.com/prod); `api_key` is the bearer
    key (its tenant, namespaces and scopes decide what each call may do). Both default to
    `AGENT_MEMORY_URL` / `AGENT_MEMORY_API_KEY`. Pass `transport` (e.g. `httpx.MockTransport`) or a ready
    `http_client` to control the connection."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        http_client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        url, key = _from_env(base_url, api_key)
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(
            base_url=url, headers=auth_headers(key, USER_AGENT), timeout=timeout, transport=transport
        )

    def _send(self, call: Call) -> JSON:
        return send_sync(self._http, call, self.retry, self._sleep)

    def iter_memories(
        self,
        namespace: str,
        *,
        type: MemoryType | None = None,
        status: Status | None = None,
        tier: Tier | None = None,
        page_size: int | None = None,
        include_children: bool | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Every memory of a namespace and of those below it (`include_children=False`: it alone) matching the
        filters, page after page."""
        cursor: str | None = None
        while True:
            page = self.list_memories(
                namespace,
                type=type,
                status=status,
                tier=tier,
                limit=page_size,
                cursor=cursor,
                include_children=include_children,
            )
            yield from page.get("items", [])
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def iter_changes(self, namespace: str, *, page_size: int | None = None) -> Iterator[dict[str, Any]]:
        """The whole change log of a namespace, oldest first, page after page."""
        cursor: str | None = None
        while True:
            page = self.changes(namespace, limit=page_size, cursor=cursor)
            yield from page.get("items", [])
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncClient(Operations[Awaitable[JSON]]):
    """Asynchronous client: the same methods as `Client`, each awaited (`await client.recall(...)`)."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        http_client: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        url, key = _from_env(base_url, api_key)
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient(
            base_url=url, headers=auth_headers(key, USER_AGENT), timeout=timeout, transport=transport
        )

    def _send(self, call: Call) -> Awaitable[JSON]:
        return send_async(self._http, call, self.retry, self._sleep)

    async def iter_memories(
        self,
        namespace: str,
        *,
        type: MemoryType | None = None,
        status: Status | None = None,
        tier: Tier | None = None,
        page_size: int | None = None,
        include_children: bool | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """Every memory of a namespace and of those below it (`include_children=False`: it alone) matching the
        filters, page after page."""
        cursor: str | None = None
        while True:
            page = await self.list_memories(
                namespace,
                type=type,
                status=status,
                tier=tier,
                limit=page_size,
                cursor=cursor,
                include_children=include_children,
            )
            for item in page.get("items", []):
                yield item
            cursor = page.get("next_cursor")
            if not cursor:
                return

    async def iter_changes(
        self, namespace: str, *, page_size: int | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        """The whole change log of a namespace, oldest first, page after page."""
        cursor: str | None = None
        while True:
            page = await self.changes(namespace, limit=page_size, cursor=cursor)
            for item in page.get("items", []):
                yield item
            cursor = page.get("next_cursor")
            if not cursor:
                return

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
