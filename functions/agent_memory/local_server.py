"""The local runtime: the same routes as Lambda, served by HttpResolverLocal under uvicorn.

Connections and requests are limited separately. uvicorn's `limit_concurrency` counts open *connections*
(and running request tasks) and answers plain-text 503 beyond it, so 15 idle keep-alive or never-speaking
sockets used to lock every other client out of a limit of 16. Here:

- connections: uvicorn's `limit_concurrency`, set generously (`ServerLimits.max_connections`), only a
  backstop against descriptor exhaustion;
- idle or slow request heads: dropped after `header_timeout_seconds` by `header_timeout_protocol` (uvicorn
  0.54 has no header timeout: its keep-alive timer only runs *between* requests and is cancelled by the
  first byte, so a client that never sends a byte or trickles its headers holds the connection for ever);
- slow request bodies: cut with 408 after `body_timeout_seconds` (`ServerGuard`; uvicorn has no body timeout);
- requests: `ServerGuard` admits `max_concurrent_requests` at once; more wait up to `queue_wait_seconds` in a
  queue of `max_queued_requests`; beyond that the answer is the API's JSON error body, 503 and Retry-After.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_lambda_powertools.event_handler import HttpResolverLocal

from .adapters.local.api_keys import LocalApiKeys
from .api.app import NOT_UTF8_MESSAGE, create_app
from .api.auth import api_key_authenticator
from .api.routes.imports import MAX_IMPORT_BODY_BYTES
from .settings.service import Settings
from .wiring import LocalRuntime, build_local

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

DEV_KEY_FILE = "dev-api-key.txt"

MAX_CONCURRENT_REQUESTS = 16
THREADS_PER_REQUEST = 3
"""HttpResolverLocal runs each sync middleware (authentication, request validation) and the sync route in
worker threads of the event loop's default executor, each blocked on the next: one request holds up to 3
threads at once. With the default executor (cores + 4 threads) three concurrent requests can take every
thread and wait on each other for ever. The server therefore gets its own executor of
max_concurrent_requests × THREADS_PER_REQUEST threads and `ServerGuard` lets at most max_concurrent_requests
requests into the app at once, so an admitted request always finds the threads it needs."""


@dataclass(frozen=True)
class ServerLimits:
    max_concurrent_requests: int = MAX_CONCURRENT_REQUESTS
    """Requests running in the app at once (bounds the worker threads, see THREADS_PER_REQUEST)."""
    max_queued_requests: int = 256
    """Requests waiting for a slot; with the defaults, hundreds of ordinary clients are queued, not refused."""
    queue_wait_seconds: float = 10.0
    """How long a queued request waits for a slot before it gets 503 overloaded."""
    retry_after_seconds: int = 1
    max_connections: int = 512
    """Open connections (uvicorn `limit_concurrency`): a backstop far above the request limits."""
    header_timeout_seconds: float = 5.0
    """From connection open (or the first byte of a keep-alive request) to the complete request head."""
    body_timeout_seconds: float = 10.0
    """From the request head to the complete body."""
    keep_alive_seconds: int = 5
    """Idle time between requests on a keep-alive connection (uvicorn `timeout_keep_alive`)."""


DEFAULT_LIMITS = ServerLimits()


def header_timeout_protocol(seconds: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol plus a request-head deadline: a connection that has not delivered a complete
    request head `seconds` after it opened (or after the first byte of its next request) is closed.

    Written by hand because uvicorn 0.54 has no such option (`timeout_keep_alive` only covers the idle time
    after a response and stops at the first byte; `h11_max_incomplete_event_size` bounds the head's size, not
    its duration), and the h11 protocol class is the documented extension point (`uvicorn.Config(http=...)`)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderTimeoutH11Protocol(H11Protocol):
        header_timeout = seconds
        _head_deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm_head_deadline()

        def data_received(self, data: bytes) -> None:
            if self.conn.their_state is h11.IDLE and self._head_deadline is None:
                self._arm_head_deadline()  # the first byte of a request on a kept-alive connection
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:
                self._cancel_head_deadline()  # the head is complete

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_head_deadline()
            super().connection_lost(exc)

        def _arm_head_deadline(self) -> None:
            self._cancel_head_deadline()
            self._head_deadline = self.loop.call_later(self.header_timeout, self._head_timed_out)

        def _cancel_head_deadline(self) -> None:
            if self._head_deadline is not None:
                self._head_deadline.cancel()
                self._head_deadline = None

        def _head_timed_out(self) -> None:
            self._head_deadline = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                # No request to answer yet (and a client that sent nothing may not expect a response): close.
                self.transport.close()

    return HeaderTimeoutH11Protocol


def uvicorn_options(limits: ServerLimits = DEFAULT_LIMITS) -> dict[str, Any]:
    """The uvicorn settings of the local server (also used by the tests' live server)."""
    return {
        "http": header_timeout_protocol(limits.header_timeout_seconds),
        "limit_concurrency": limits.max_connections,
        "timeout_keep_alive": limits.keep_alive_seconds,
    }


class _Refused(Exception):
    def __init__(self, status: int, code: str, message: str, details: dict[str, Any], close: bool) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.details, self.close = status, code, message, details, close


def _require_utf8(buffered: list[dict[str, Any]]) -> None:
    """400 for a body that is not UTF-8 (HttpResolverLocal decodes it before any handler could answer, so
    it would be a 500); in Lambda the API's request gate gives the same answer."""
    try:
        b"".join(message.get("body", b"") for message in buffered).decode("utf-8")
    except UnicodeDecodeError as error:
        raise _Refused(400, "malformed_json", NOT_UTF8_MESSAGE, {"byte": error.start}, close=False) from None


class ServerGuard:
    """The ASGI wrapper in front of the resolver: body size limit (413), body read deadline (408) and
    request admission (503 overloaded with Retry-After), each answered with the API's JSON error body.

    Written by hand because uvicorn has no body-size option, no body timeout and only a connection-counting
    concurrency limit (see the module docstring); HttpResolverLocal reads the full body. API Gateway enforces
    its own limits in AWS. The body is read before admission, so a slow upload never holds a request slot."""

    def __init__(self, app: App, max_bytes: int, limits: ServerLimits = DEFAULT_LIMITS) -> None:
        self._app = app
        self._max = max_bytes
        # Routes whose documented limit needs a larger body than the general one.
        self._larger = {("POST", "/v1/imports"): max(max_bytes, MAX_IMPORT_BODY_BYTES)}
        self._limits = limits
        self._loop: asyncio.AbstractEventLoop | None = None
        self._slots = asyncio.Semaphore(limits.max_concurrent_requests)
        self._queued = 0

    def _ensure_loop_state(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            loop.set_default_executor(
                ThreadPoolExecutor(
                    max_workers=self._limits.max_concurrent_requests * THREADS_PER_REQUEST,
                    thread_name_prefix="agent-memory",
                )
            )
            self._slots = asyncio.Semaphore(self._limits.max_concurrent_requests)
            self._queued = 0
            self._loop = loop

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self._ensure_loop_state()
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        try:
            buffered = await self._read_body(scope, receive)
            if buffered is None:
                return  # the client went away
            _require_utf8(buffered)
            await self._admit()
        except _Refused as refused:
            await self._refuse(send, refused)
            return
        try:

            async def replay() -> dict[str, Any]:
                return buffered.pop(0) if buffered else {"type": "http.disconnect"}

            await self._app(scope, replay, send)
        finally:
            self._slots.release()

    def body_limit(self, method: str, path: str) -> int:
        """The most body bytes a request to this route may send."""
        return self._larger.get((method, path.rstrip("/")), self._max)

    async def _read_body(self, scope: Scope, receive: Receive) -> list[dict[str, Any]] | None:
        limit = self.body_limit(str(scope.get("method", "")), str(scope.get("path", "")))
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise self._too_large(limit)
        buffered: list[dict[str, Any]] = []
        received = 0
        try:
            async with asyncio.timeout(self._limits.body_timeout_seconds):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return None
                    received += len(message.get("body", b""))
                    if received > limit:
                        raise self._too_large(limit)
                    buffered.append(message)
                    if not message.get("more_body", False):
                        return buffered
        except TimeoutError:
            seconds = self._limits.body_timeout_seconds
            raise _Refused(
                408,
                "request_timeout",
                f"the request body did not arrive within {seconds:g} seconds; send it whole and promptly",
                {"timeout_seconds": seconds, "received_bytes": received},
                close=True,  # the rest of the body may still come; the connection cannot be reused
            ) from None

    def _too_large(self, limit: int) -> _Refused:
        # The connection stays open (uvicorn discards the rest of the body): closing it while the client is
        # still sending would reset the socket before the client reads the 413.
        return _Refused(
            413,
            "too_large",
            f"request body is larger than {limit:,} bytes",
            {"limit": limit},
            close=False,
        )

    async def _admit(self) -> None:
        limits = self._limits
        if not self._slots.locked():
            await self._slots.acquire()  # a free slot: taken without yielding to another request
            return
        if self._queued >= limits.max_queued_requests:
            raise self._overloaded(f"{limits.max_queued_requests} requests are already waiting")
        self._queued += 1
        try:
            async with asyncio.timeout(limits.queue_wait_seconds):
                await self._slots.acquire()
        except TimeoutError:
            raise self._overloaded(
                f"no request slot freed within {limits.queue_wait_seconds:g} seconds"
            ) from None
        finally:
            self._queued -= 1

    def _overloaded(self, why: str) -> _Refused:
        limits = self._limits
        return _Refused(
            503,
            "overloaded",
            f"the server is busy ({limits.max_concurrent_requests} requests running, {why}); "
            f"retry after {limits.retry_after_seconds} s",
            {},
            close=False,
        )

    async def _refuse(self, send: Send, refused: _Refused) -> None:
        body = json.dumps(
            {"error": refused.code, "message": refused.message, "details": refused.details}
        ).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        if refused.status == 503:
            headers.append((b"retry-after", str(self._limits.retry_after_seconds).encode()))
        if refused.close:
            headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": refused.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def build_asgi(
    settings: Settings, runtime: LocalRuntime | None = None, limits: ServerLimits = DEFAULT_LIMITS
) -> ServerGuard:
    runtime = runtime or build_local(settings)
    keys: LocalApiKeys = runtime.keys
    app = create_app(
        HttpResolverLocal(enable_validation=True),
        services=lambda: runtime.services,
        authenticate=api_key_authenticator(keys.lookup),
    )
    return ServerGuard(app, settings.max_body_bytes, limits)


def ensure_dev_key(settings: Settings) -> str | None:
    """On first start (no key file yet) create a development key for tenant `local`, all namespaces, and
    keep a copy readable only by the owner so the person can find it again."""
    keys = LocalApiKeys(settings.keys_file)
    if settings.keys_file.exists():
        return None
    created = keys.create("local", ["*"], ["read", "write", "admin"])
    path = settings.data_dir / DEV_KEY_FILE
    path.write_text(created.key + "\n", encoding="utf-8")
    path.chmod(0o600)
    return created.key


def startup_banner(settings: Settings, new_key: str | None) -> list[str]:
    """What `serve` prints on every start: the URL, and where the API key is (the key itself only once)."""
    url = f"http://{settings.host}:{settings.port}"
    dev_key = (settings.data_dir / DEV_KEY_FILE).resolve()
    lines = [
        f"agent-memory serving {url}  (data: {Path(settings.data_dir).resolve()})",
        f"  API docs: {url}/swagger",
        f"  review console: {url}/console",
    ]
    if new_key:
        lines.append(f"  development API key (tenant 'local', all namespaces): {new_key}")
        lines.append(f"  saved to {dev_key}; create more with `agent-memory keys create`")
    elif dev_key.exists():
        lines.append(f"  development API key: in {dev_key} (KEY=$(cat {dev_key}))")
    else:
        lines.append(
            f"  no development key file; API keys are in {settings.keys_file.resolve()} "
            "(create one with `agent-memory keys create`)"
        )
    lines.append("  stays in the foreground: use another terminal for requests, Ctrl+C to stop")
    return lines


def serve(settings: Settings, limits: ServerLimits = DEFAULT_LIMITS) -> None:
    import uvicorn

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    new_key = ensure_dev_key(settings)
    for line in startup_banner(settings, new_key):
        print(line)
    uvicorn.run(
        build_asgi(settings, limits=limits),
        host=settings.host,
        port=settings.port,
        log_level="info",
        **uvicorn_options(limits),
    )
