"""The local server's transport limits (issue 16, defect 10): idle and slow clients cannot lock others out,
ordinary concurrency is served, and every refusal is the API's JSON error body.

Timeouts here are generous safety nets (a hung server fails the test instead of hanging it), not speed
assertions."""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager
from urllib.parse import urlsplit

import httpx

from agent_memory.local_server import ServerLimits
from agent_memory.settings.service import Settings

from .conftest import start_server

SAFETY_NET = 30.0  # seconds; far above the short limits the servers below are configured with


def _address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname and parts.port
    return parts.hostname, parts.port


@contextmanager
def _server(tmp_path, limits: ServerLimits) -> Iterator[str]:
    settings = Settings(data_dir=tmp_path / "data", embedder="hashing", max_body_bytes=64 * 1024)
    server, thread, url = start_server(settings, limits=limits)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _closed_by_server(sock: socket.socket, trickle: bytes = b"") -> bytes:
    """Read until the server closes the connection (sending `trickle` every 0.2 s meanwhile); returns what
    the server sent. Fails if the connection is still open after SAFETY_NET seconds."""
    sock.settimeout(0.2)
    received = b""
    deadline = time.monotonic() + SAFETY_NET
    while time.monotonic() < deadline:
        try:
            if trickle:
                sock.sendall(trickle)
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return received
        if not chunk:
            return received
        received += chunk
    raise AssertionError(f"the server kept the connection open for {SAFETY_NET:g}s; received {received!r}")


def test_idle_connections_do_not_lock_out_ordinary_requests(live_server):
    # uvicorn's limit_concurrency counts connections: 15 sockets that never send a byte used to leave one
    # "slot", and ordinary requests got 503 until the sockets went away.
    host, port = _address(live_server.url)
    idle = [socket.create_connection((host, port), timeout=SAFETY_NET) for _ in range(40)]
    try:
        client = live_server.client()
        ns = f"/projects/idle-{uuid.uuid4().hex[:8]}"
        statuses = [
            client.post("/v1/memories", json={"content": f"Idle-proof fact {i}", "namespace": ns}).status_code
            for i in range(5)
        ]
        statuses += [client.get("/v1/memories", params={"namespace": ns}).status_code for _ in range(5)]
        with ThreadPoolExecutor(max_workers=8) as pool:
            statuses += list(
                pool.map(lambda _: httpx.get(f"{live_server.url}/v1/health").status_code, range(16))
            )
        assert set(statuses) <= {200, 201}, statuses
    finally:
        for sock in idle:
            sock.close()


def test_more_idle_sockets_than_connections_allowed_do_not_lock_out_ordinary_requests(tmp_path):
    """Issue 29: with ~515 idle sockets re-opened every 5 s, 6 of 7 requests got uvicorn's plain-text 503.
    Here the server allows 24 connections and 60 idle sockets are held open: every ordinary request is served
    (the idlest connections are closed to make room), and a refused connection would get the JSON body."""
    limits = ServerLimits(max_connections=24, header_timeout_seconds=SAFETY_NET)
    with _server(tmp_path, limits) as url:
        host, port = _address(url)
        idle = [socket.create_connection((host, port), timeout=SAFETY_NET) for _ in range(60)]
        try:
            statuses = []
            for _ in range(10):
                answer = httpx.get(f"{url}/v1/health", timeout=SAFETY_NET)
                statuses.append(answer.status_code)
                assert answer.headers["content-type"] == "application/json", answer.text
            assert statuses == [200] * 10
            # the evicted idle sockets were closed by the server (they read end-of-file)
            closed = 0
            for sock in idle:
                sock.settimeout(0.05)
                try:
                    closed += sock.recv(1) == b""
                except (TimeoutError, ConnectionResetError):
                    closed += 0
            assert closed >= 60 - 24
        finally:
            for sock in idle:
                sock.close()


def test_sixteen_concurrent_clients_get_no_503(live_server):
    """16 clients on one API key, 288 requests at once: every answer is a success or, past the key's rate
    (issue 29: a token bucket per API key), a JSON 429 `rate_limited` with Retry-After; never a 5xx."""
    ns = f"/projects/busy-{uuid.uuid4().hex[:8]}"

    def seen(answer: httpx.Response) -> tuple[int, str | None]:
        if answer.status_code == 429:
            assert answer.headers.get("retry-after"), answer.headers
            return 429, answer.json()["error"]
        return answer.status_code, None

    def client_session(worker: int) -> list[tuple[int, str | None]]:
        statuses = []
        with live_server.client() as client:  # one keep-alive connection per client
            for i in range(6):
                body = {"content": f"Worker {worker} fact {i}", "namespace": ns}
                statuses.append(seen(client.post("/v1/memories", json=body)))
                statuses.append(
                    seen(client.post("/v1/recall", json={"query": f"fact {i}", "namespaces": [ns]}))
                )
                statuses.append(seen(client.get("/v1/memories", params={"namespace": ns})))
        return statuses

    with ThreadPoolExecutor(max_workers=16) as pool:
        results = [status for statuses in pool.map(client_session, range(16)) for status in statuses]
    assert len(results) == 16 * 6 * 3
    assert set(results) <= {(200, None), (201, None), (429, "rate_limited")}, sorted(set(results), key=str)
    assert (200, None) in results and (201, None) in results


def test_silent_and_slowloris_connections_are_dropped(tmp_path):
    with _server(tmp_path, ServerLimits(header_timeout_seconds=0.5)) as url:
        address = _address(url)
        with closing(socket.create_connection(address, timeout=SAFETY_NET)) as silent:
            assert _closed_by_server(silent) == b""
        with closing(socket.create_connection(address, timeout=SAFETY_NET)) as slow:
            slow.sendall(b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\n")
            assert _closed_by_server(slow, trickle=b"X-a: b\r\n") == b""
        # An ordinary request on the same server is unaffected, and a kept-alive connection still works.
        with httpx.Client(base_url=url, timeout=SAFETY_NET) as client:
            assert client.get("/v1/health").status_code == 200
            assert client.get("/v1/health").status_code == 200


def test_a_slow_body_is_cut_with_a_json_408(tmp_path):
    with _server(tmp_path, ServerLimits(body_timeout_seconds=0.5)) as url:
        with closing(socket.create_connection(_address(url), timeout=SAFETY_NET)) as sock:
            sock.sendall(
                b"POST /v1/memories HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                b"Content-Length: 200\r\n\r\n" + b'{"content": "x'
            )
            response = _closed_by_server(sock)
        head, _, body = response.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408 "), head
        assert b"application/json" in head.lower()
        error = json.loads(body)
        assert error["error"] == "request_timeout"
        assert "body" in error["message"]
        assert error["details"]["timeout_seconds"] == 0.5


def test_the_documented_upload_limit_is_the_local_servers(tmp_path) -> None:
    """README and the route promise 4 MiB archives on POST /v1/imports; the local server's general body limit
    (here 64 KiB) must not cut them short: a 3 MiB archive reaches the route (refused there as no archive,
    not 413), and only one over the documented size is 413, naming the route's limit."""
    import base64
    import re
    from pathlib import Path

    from agent_memory.api.routes.imports import MAX_ARCHIVE_BYTES

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    documented = re.search(r"POST /v1/imports` \(base64 in\s+JSON, up to (\d+) MiB\)", readme)
    assert documented, "README no longer states the upload limit of POST /v1/imports"
    assert int(documented.group(1)) * 1024 * 1024 == MAX_ARCHIVE_BYTES

    from agent_memory.wiring.local import build_local

    settings = Settings(data_dir=tmp_path / "data", embedder="hashing", max_body_bytes=64 * 1024)
    runtime = build_local(settings)
    key = runtime.keys.create("local", ["*"], ["read", "write", "admin"]).key
    server, thread, url = start_server(settings, runtime)
    try:
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=SAFETY_NET
        ) as client:
            near = base64.b64encode(b"\x00" * (3 * 1024 * 1024)).decode()
            answer = client.post("/v1/imports", json={"namespace": "/projects/up", "archive": near})
            assert answer.status_code != 413, answer.text
            assert set(answer.json()) == {
                "error",
                "message",
                "details",
            }  # not an archive: refused by the route
            over = base64.b64encode(b"\x00" * (MAX_ARCHIVE_BYTES + 10)).decode()
            answer = client.post("/v1/imports", json={"namespace": "/projects/up", "archive": over})
            assert answer.status_code == 413, answer.text
            assert answer.json()["details"]["limit"] >= MAX_ARCHIVE_BYTES
    finally:
        server.should_exit = True
        thread.join(timeout=10)
