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
- requests: `ServerGuard` admits `max_concurrent_requests` at once, at most `max_requests_per_key` of them
  from one API key (so one tenant's batches and imports leave slots for everybody else); more wait up to
  `queue_wait_seconds` in a queue of `max_queued_requests`; beyond that the answer is the API's JSON error
  body, 503 and Retry-After;
- connections: beyond `max_connections` the idlest connection that has no request in flight is closed to make
  room (`header_timeout_protocol`), so a flood of idle sockets cannot keep a new client out; only when every
  connection is busy is the new one refused, with the JSON error body (never uvicorn's plain-text 503);
- `GET /v1/health` is answered by the server loop itself, never queued behind other requests;
- per API key, a token bucket (`Settings.rate_limit`: `requests_per_second`, `burst`) is checked before the
  body is read: beyond it the answer is 429 `rate_limited` with Retry-After (`KeyRateLimit`);
- long work leaves the request *process*: imports and large batches answer 202 and run as jobs in a separate,
  lower-priority worker process (domain/jobs, adapters/local/job_process.py, wiring/job_worker.py), so they
  hold no request slot and never take the request loop's interpreter lock while they run.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import time
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import __version__
from .api.app import NOT_UTF8_MESSAGE, create_app
from .api.auth import api_key_authenticator
from .api.powertools_compat import ThreadedResolverLocal
from .api.routes.imports import MAX_IMPORT_BODY_BYTES
from .domain import memo
from .domain.jobs.config import RateLimitConfig
from .settings.service import Settings
from .wiring.local import LocalRuntime, build_local, local_keys

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

DEV_KEY_FILE = "dev-api-key.txt"

MAX_CONCURRENT_REQUESTS = 16
THREADS_PER_REQUEST = 3
"""Worker threads reserved per admitted request. `ThreadedResolverLocal` resolves a request on one thread;
the rest is headroom for what a route itself submits (recall's keyword half, the embedder). Stock
HttpResolverLocal ran each sync middleware in its own thread, each blocked on the next (3 per request), and
with the default executor (cores + 4 threads) three concurrent requests could take every thread and wait on
each other for ever. The server therefore gets its own executor of max_concurrent_requests ×
THREADS_PER_REQUEST threads and `ServerGuard` lets at most max_concurrent_requests requests in at once."""


@dataclass(frozen=True)
class ServerLimits:
    max_concurrent_requests: int = MAX_CONCURRENT_REQUESTS
    """Requests running in the app at once (bounds the worker threads, see THREADS_PER_REQUEST)."""
    max_queued_requests: int = 256
    """Requests waiting for a slot; with the defaults, hundreds of ordinary clients are queued, not refused."""
    queue_wait_seconds: float = 10.0
    """How long a queued request waits for a slot before it gets 503 overloaded."""
    retry_after_seconds: int = 1
    max_requests_per_key: int = MAX_CONCURRENT_REQUESTS // 4
    """Requests of one API key (bearer token) running at once: what one tenant's work may hold."""
    max_connections: int = 4096
    """Open connections before the idlest is closed to make room (see the module docstring)."""
    header_timeout_seconds: float = 5.0
    """From connection open (or the first byte of a keep-alive request) to the complete request head."""
    body_timeout_seconds: float = 10.0
    """From the request head to the complete body."""
    keep_alive_seconds: int = 5
    """Idle time between requests on a keep-alive connection (uvicorn `timeout_keep_alive`)."""


DEFAULT_LIMITS = ServerLimits()


_FULL = json.dumps(
    {
        "error": "overloaded",
        "message": "the server has no free connection (every one is serving a request); retry after 1 s",
        "details": {},
    }
).encode()
_FULL_RESPONSE = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n"
    b"connection: close\r\ncontent-length: " + str(len(_FULL)).encode() + b"\r\n\r\n" + _FULL
)


def header_timeout_protocol(seconds: float, max_connections: int = 4096) -> type[asyncio.Protocol]:
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
        _last_active = 0.0

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._last_active = self.loop.time()
            self._arm_head_deadline()
            if self._open_connections() > max_connections and not self._make_room():
                transport.write(_FULL_RESPONSE)
                transport.close()

        def _open_connections(self) -> int:
            """Connections not already closing (a closed one leaves the set only when its loss is handled)."""
            return sum(
                1 for c in self.connections if c.transport is not None and not c.transport.is_closing()
            )

        def _idle(self) -> bool:
            """No request in flight: nothing sent yet, or kept alive after a complete response."""
            cycle = getattr(self, "cycle", None)
            return self.conn.their_state is h11.IDLE and (cycle is None or cycle.response_complete)

        def _make_room(self) -> bool:
            """Close the connection idle the longest (not this one); False when every other one is busy."""
            idle = [
                c
                for c in self.connections
                if c is not self
                and isinstance(c, HeaderTimeoutH11Protocol)
                and not c.transport.is_closing()
                and c._idle()
            ]
            if not idle:
                return False
            victim = min(idle, key=lambda c: c._last_active)
            victim._cancel_head_deadline()
            victim.transport.close()
            return True

        def data_received(self, data: bytes) -> None:
            self._last_active = self.loop.time()
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
        "http": header_timeout_protocol(limits.header_timeout_seconds, limits.max_connections),
        # uvicorn's own limit answers plain-text 503 and counts idle sockets: the protocol above bounds
        # connections instead, and ServerGuard bounds requests
        "limit_concurrency": None,
        "timeout_keep_alive": limits.keep_alive_seconds,
    }


class _Refused(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: dict[str, Any],
        close: bool,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.details, self.close = status, code, message, details, close
        self.retry_after = retry_after


def _require_utf8(buffered: list[dict[str, Any]]) -> None:
    """400 for a body that is not UTF-8 (HttpResolverLocal decodes it before any handler could answer, so
    it would be a 500); in Lambda the API's request gate gives the same answer."""
    try:
        b"".join(message.get("body", b"") for message in buffered).decode("utf-8")
    except UnicodeDecodeError as error:
        raise _Refused(400, "malformed_json", NOT_UTF8_MESSAGE, {"byte": error.start}, close=False) from None


class KeyRateLimit:
    """A token bucket per API key (bearer token digest): `burst` requests at once, then `requests_per_second`.
    Refused requests take no token. Buckets of keys idle long enough to be full again are dropped once there
    are many, so random bearer tokens cannot grow the table for ever."""

    MAX_BUCKETS = 10_000

    def __init__(self, config: RateLimitConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self._rate = config.requests_per_second
        self._burst = float(config.burst)
        self._clock = clock
        self._buckets: dict[bytes, tuple[float, float]] = {}  # caller -> (tokens, when)

    def take(self, caller: bytes) -> float | None:
        """None when the request may go; otherwise the seconds until the caller has a token again."""
        if self._rate <= 0:
            return None
        now = self._clock()
        tokens, then = self._buckets.get(caller, (self._burst, now))
        tokens = min(self._burst, tokens + (now - then) * self._rate)
        if tokens >= 1:
            self._buckets[caller] = (tokens - 1, now)
            if len(self._buckets) > self.MAX_BUCKETS:
                self._forget_full(now)
            return None
        self._buckets[caller] = (tokens, now)
        return (1 - tokens) / self._rate

    def _forget_full(self, now: float) -> None:
        refill = self._burst / self._rate
        self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < refill}


class ServerGuard:
    """The ASGI wrapper in front of the resolver: body size limit (413), body read deadline (408) and
    request admission (503 overloaded with Retry-After), each answered with the API's JSON error body.

    Written by hand because uvicorn has no body-size option, no body timeout and only a connection-counting
    concurrency limit (see the module docstring); HttpResolverLocal reads the full body. API Gateway enforces
    its own limits in AWS. The body is read before admission, so a slow upload never holds a request slot."""

    def __init__(
        self,
        app: App,
        max_bytes: int,
        limits: ServerLimits = DEFAULT_LIMITS,
        rate_limit: RateLimitConfig | None = None,
    ) -> None:
        self._app = app
        self._rate_limit = KeyRateLimit(rate_limit or RateLimitConfig())
        self._max = max_bytes
        # Routes whose documented limit needs a larger body than the general one.
        self._larger = {("POST", "/v1/imports"): max(max_bytes, MAX_IMPORT_BODY_BYTES)}
        self._limits = limits
        self._loop: asyncio.AbstractEventLoop | None = None
        self._turn = asyncio.Condition()
        self._running: dict[bytes, int] = {}  # requests in the app, by API key (bearer token digest)
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
            self._turn = asyncio.Condition()
            self._running = {}
            self._queued = 0
            self._loop = loop

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self._ensure_loop_state()
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        if scope.get("method") == "GET" and scope.get("path") == "/v1/health":
            await self._answer(send, 200, _HEALTH, [])
            return
        caller = _caller(scope)
        try:
            self._throttle(caller)
            buffered = await self._read_body(scope, receive)
            if buffered is None:
                return  # the client went away
            _require_utf8(buffered)
            await self._admit(caller)
        except _Refused as refused:
            await self._refuse(send, refused)
            return
        try:

            async def replay() -> dict[str, Any]:
                return buffered.pop(0) if buffered else {"type": "http.disconnect"}

            await self._app(scope, replay, send)
        finally:
            await self._release(caller)
            # The request is over: what the domain memoised of its texts goes (domain/memo.py). Another
            # request still running loses its memos too, which costs it misses, never a wrong result.
            memo.clear_all()

    def _throttle(self, caller: bytes) -> None:
        """429 `rate_limited` when this API key has used up its token bucket (requests without a key are
        refused by authentication anyway, and not counted)."""
        wait = self._rate_limit.take(caller) if caller else None
        if wait is not None:
            seconds = max(1, math.ceil(wait))
            raise _Refused(
                429,
                "rate_limited",
                f"this API key sent more than its rate ({self._rate_limit_text()}); retry after {seconds} s",
                {"retry_after_seconds": seconds},
                close=False,
                retry_after=seconds,
            )

    def _rate_limit_text(self) -> str:
        limiter = self._rate_limit
        return f"{limiter._rate:g} requests per second, bursts of {limiter._burst:g}"

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

    def _may_run(self, caller: bytes) -> bool:
        limits = self._limits
        return (
            sum(self._running.values()) < limits.max_concurrent_requests
            and self._running.get(caller, 0) < limits.max_requests_per_key
        )

    async def _admit(self, caller: bytes) -> None:
        """A request slot, and one of the caller's own: one key's work cannot take every slot."""
        limits = self._limits
        async with self._turn:
            if not self._may_run(caller):
                if self._queued >= limits.max_queued_requests:
                    raise self._overloaded(f"{limits.max_queued_requests} requests are already waiting")
                self._queued += 1
                try:
                    async with asyncio.timeout(limits.queue_wait_seconds):
                        await self._turn.wait_for(lambda: self._may_run(caller))
                except TimeoutError:
                    raise self._overloaded(
                        f"no request slot freed within {limits.queue_wait_seconds:g} seconds"
                    ) from None
                finally:
                    self._queued -= 1
            self._running[caller] = self._running.get(caller, 0) + 1

    async def _release(self, caller: bytes) -> None:
        async with self._turn:
            left = self._running.get(caller, 1) - 1
            if left > 0:
                self._running[caller] = left
            else:
                self._running.pop(caller, None)
            self._turn.notify_all()

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
        headers = []
        if refused.retry_after is not None:
            headers.append((b"retry-after", str(refused.retry_after).encode()))
        elif refused.status == 503:
            headers.append((b"retry-after", str(self._limits.retry_after_seconds).encode()))
        if refused.close:
            headers.append((b"connection", b"close"))
        await self._answer(send, refused.status, body, headers)

    @staticmethod
    async def _answer(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            *headers,
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


_HEALTH = json.dumps({"status": "ok", "version": __version__}).encode()


def _caller(scope: Scope) -> bytes:
    """Whose request this is, for fair admission: a digest of the bearer token (the API key; validated later
    by the app), or empty for requests without one."""
    authorization = dict(scope.get("headers") or []).get(b"authorization", b"")
    return hashlib.blake2b(authorization, digest_size=16).digest() if authorization else b""


def build_asgi(
    settings: Settings, runtime: LocalRuntime | None = None, limits: ServerLimits = DEFAULT_LIMITS
) -> ServerGuard:
    runtime = runtime or build_local(settings)
    if runtime.services.jobs is not None:
        runtime.services.jobs.recover()  # jobs of a previous server process run nowhere now: failed
    keys = runtime.keys
    app = create_app(
        ThreadedResolverLocal(enable_validation=True),
        services=lambda: runtime.services,
        authenticate=api_key_authenticator(keys.lookup),
    )
    return ServerGuard(app, settings.max_body_bytes, limits, settings.rate_limit)


def ensure_dev_key(settings: Settings) -> str | None:
    """On first start (no key file yet) create a development key for tenant `local`, all namespaces, and
    keep a copy readable only by the owner so the person can find it again."""
    keys = local_keys(settings)
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


SWITCH_INTERVAL_SECONDS = 0.001
"""How often a thread holding the GIL is asked to hand it over (CPython's default: 5 ms). Routes are CPU-bound
Python (embedding, scoring); with the default, the event loop and a short request waited up to 5 ms per
busy thread for each turn, which one tenant's four batches turned into a 300 ms health p99 (bench/fairness.py)."""


def serve(settings: Settings, limits: ServerLimits = DEFAULT_LIMITS) -> None:
    import sys

    import uvicorn

    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    new_key = ensure_dev_key(settings)
    for line in startup_banner(settings, new_key):
        print(line)
    runtime = build_local(settings)
    app = build_asgi(settings, runtime, limits=limits)
    if runtime.services.jobs is not None:
        runtime.services.jobs.start_workers()  # after `recover` (build_asgi): the worker loads its embedder now
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level="info",
        **uvicorn_options(limits),
    )
