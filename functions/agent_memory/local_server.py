"""The local runtime: the same routes as Lambda, served by HttpResolverLocal under uvicorn."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from aws_lambda_powertools.event_handler import HttpResolverLocal

from .adapters.local.api_keys import LocalApiKeys
from .api.app import create_app
from .api.auth import api_key_authenticator
from .settings.service import Settings
from .wiring import LocalRuntime, build_local

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

DEV_KEY_FILE = "dev-api-key.txt"

MAX_CONCURRENT_REQUESTS = 16
THREADS_PER_REQUEST = 3
"""HttpResolverLocal runs each sync middleware (authentication, request validation) and the sync route in
worker threads of the event loop's default executor, each blocked on the next: one request holds up to 3
threads at once. With the default executor (cores + 4 threads) three concurrent requests can take every
thread and wait on each other for ever. The server therefore gets its own executor of
MAX_CONCURRENT_REQUESTS × THREADS_PER_REQUEST threads and uvicorn admits at most MAX_CONCURRENT_REQUESTS
requests at once (503 beyond), so a request always finds the threads it needs."""


class BodyLimit:
    """Refuse request bodies over `max_bytes` with 413 before reading them whole.

    Written by hand because uvicorn has no body-size option and HttpResolverLocal reads the full body;
    API Gateway enforces its own limit in AWS."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], max_bytes: int) -> None:
        self._app = app
        self._max = max_bytes
        self._executor_loop: asyncio.AbstractEventLoop | None = None

    def _ensure_executor(self) -> None:
        loop = asyncio.get_running_loop()
        if self._executor_loop is not loop:
            loop.set_default_executor(
                ThreadPoolExecutor(
                    max_workers=MAX_CONCURRENT_REQUESTS * THREADS_PER_REQUEST,
                    thread_name_prefix="agent-memory",
                )
            )
            self._executor_loop = loop

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self._ensure_executor()
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self._max:
            await self._refuse(send)
            return
        received = 0
        too_large = False

        async def limited_receive() -> dict[str, Any]:
            nonlocal received, too_large
            message = await receive()
            received += len(message.get("body", b""))
            if received > self._max:
                too_large = True
                return {"type": "http.request", "body": b"", "more_body": False}
            return message

        buffered: list[dict[str, Any]] = []
        while True:
            message = await limited_receive()
            buffered.append(message)
            if too_large:
                await self._refuse(send)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> dict[str, Any]:
            return buffered.pop(0) if buffered else {"type": "http.disconnect"}

        await self._app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        body = json.dumps(
            {
                "error": "too_large",
                "message": f"request body is larger than {self._max:,} bytes",
                "details": {"limit": self._max},
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def build_asgi(settings: Settings, runtime: LocalRuntime | None = None) -> BodyLimit:
    runtime = runtime or build_local(settings)
    keys: LocalApiKeys = runtime.keys
    app = create_app(
        HttpResolverLocal(enable_validation=True),
        services=lambda: runtime.services,
        authenticate=api_key_authenticator(keys.lookup),
    )
    return BodyLimit(app, settings.max_body_bytes)


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


def serve(settings: Settings) -> None:
    import uvicorn

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    new_key = ensure_dev_key(settings)
    url = f"http://{settings.host}:{settings.port}"
    print(f"agent-memory serving {url}  (data: {Path(settings.data_dir).resolve()})")
    print(f"  API docs: {url}/swagger")
    if new_key:
        print(f"  development API key (tenant 'local', all namespaces): {new_key}")
        print(f"  saved to {settings.data_dir / DEV_KEY_FILE}; create more with `agent-memory keys create`")
    else:
        print(f"  API keys: {settings.keys_file} (development key in {settings.data_dir / DEV_KEY_FILE})")
    uvicorn.run(
        build_asgi(settings),
        host=settings.host,
        port=settings.port,
        log_level="info",
        limit_concurrency=MAX_CONCURRENT_REQUESTS,
    )
