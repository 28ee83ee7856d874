"""local_server.py without a socket: ServerGuard's request admission (requests beyond the concurrency wait in
a short queue; beyond the queue, or after the queue wait, the answer is the API's JSON error body, 503 and
Retry-After) and the start-up banner (where the API key is, on every start)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agent_memory.local_server import DEV_KEY_FILE, ServerGuard, ServerLimits, ensure_dev_key, startup_banner
from agent_memory.settings.service import Settings


class BlockingApp:
    """An inner ASGI app that answers 200 once `release` is set; counts the requests it has entered."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.entered = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.entered += 1
        await self.release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})


async def _request(
    guard: ServerGuard, path: str = "/v1/stats", key: bytes = b""
) -> tuple[int, dict[bytes, bytes], bytes]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    headers = [(b"authorization", b"Bearer " + key)] if key else []
    scope = {"type": "http", "method": "GET", "path": path, "headers": headers}
    await guard(scope, receive, send)
    return sent[0]["status"], dict(sent[0]["headers"]), sent[1]["body"]


async def _until(condition: Any) -> None:
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("condition never held")


def test_requests_over_the_concurrency_are_queued_then_served():
    async def scenario() -> list[int]:
        app = BlockingApp()
        guard = ServerGuard(app, 1024, ServerLimits(max_concurrent_requests=2, max_queued_requests=4))
        requests = [asyncio.create_task(_request(guard)) for _ in range(6)]
        await _until(lambda: app.entered == 2)
        await asyncio.sleep(0.01)
        assert app.entered == 2  # the other four wait for a slot
        app.release.set()
        return [status for status, _, _ in await asyncio.gather(*requests)]

    assert asyncio.run(scenario()) == [200] * 6


def test_beyond_the_queue_the_answer_is_a_json_503_with_retry_after():
    async def scenario() -> tuple[tuple[int, dict[bytes, bytes], bytes], list[int]]:
        app = BlockingApp()
        limits = ServerLimits(max_concurrent_requests=1, max_queued_requests=1, retry_after_seconds=2)
        guard = ServerGuard(app, 1024, limits)
        running = asyncio.create_task(_request(guard))
        await _until(lambda: app.entered == 1)
        queued = asyncio.create_task(_request(guard))
        await asyncio.sleep(0.01)
        refused = await _request(guard)
        app.release.set()
        return refused, [(await running)[0], (await queued)[0]]

    (status, headers, body), served = asyncio.run(scenario())
    assert status == 503
    assert headers[b"retry-after"] == b"2"
    assert headers[b"content-type"] == b"application/json"
    error = json.loads(body)
    assert error["error"] == "overloaded" and error["details"] == {}
    assert "retry" in error["message"]
    assert served == [200, 200]


def test_a_queued_request_gives_up_after_the_queue_wait():
    async def scenario() -> tuple[int, dict[bytes, bytes], bytes]:
        app = BlockingApp()
        guard = ServerGuard(app, 1024, ServerLimits(max_concurrent_requests=1, queue_wait_seconds=0.05))
        running = asyncio.create_task(_request(guard))
        await _until(lambda: app.entered == 1)
        refused = await _request(guard)
        app.release.set()
        await running
        return refused

    status, headers, body = asyncio.run(scenario())
    assert status == 503 and b"retry-after" in headers
    assert json.loads(body)["error"] == "overloaded"


def test_one_key_cannot_take_every_slot_and_health_never_waits():
    """Key A's work fills its own share of the slots; key B is admitted at once beside it, and the liveness
    check is answered by the guard while every slot is taken."""

    async def scenario() -> tuple[int, int, int, tuple[int, bytes]]:
        app = BlockingApp()
        limits = ServerLimits(max_concurrent_requests=4, max_requests_per_key=2, queue_wait_seconds=5)
        guard = ServerGuard(app, 1024, limits)
        a = [asyncio.create_task(_request(guard, key=b"key-a")) for _ in range(6)]
        await _until(lambda: app.entered == 2)
        await asyncio.sleep(0.01)
        entered_a = app.entered  # the other four of A wait although two slots are free
        b = [asyncio.create_task(_request(guard, key=b"key-b")) for _ in range(2)]
        await _until(lambda: app.entered == 4)
        entered_both = app.entered
        status, _, body = await _request(guard, path="/v1/health")  # every slot is taken
        app.release.set()
        statuses = [result[0] for result in await asyncio.gather(*a, *b)]
        return entered_a, entered_both, statuses.count(200), (status, body)

    entered_a, entered_both, served, health = asyncio.run(scenario())
    assert entered_a == 2 and entered_both == 4
    assert served == 8
    assert health[0] == 200 and json.loads(health[1])["status"] == "ok"


def test_every_start_says_where_the_development_key_is(tmp_path):
    settings = Settings(data_dir=tmp_path, embedder="hashing")
    first_key = ensure_dev_key(settings)
    assert first_key
    first = "\n".join(startup_banner(settings, first_key))
    key_file = str((tmp_path / DEV_KEY_FILE).resolve())
    assert first_key in first and key_file in first

    assert ensure_dev_key(settings) is None  # a restart creates no new key ...
    again = "\n".join(startup_banner(settings, None))
    assert first_key not in again  # ... and does not print it again
    assert key_file in again  # but says where it is
    assert "another terminal" in again
