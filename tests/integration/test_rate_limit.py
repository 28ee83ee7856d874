"""The local server's per-API-key rate limit (issue 29): a token bucket per key; beyond it 429 `rate_limited`
with Retry-After and the JSON error body; other keys and /v1/health are not affected."""

from __future__ import annotations

import httpx

from agent_memory.domain.jobs.config import RateLimitConfig
from agent_memory.local_server import KeyRateLimit
from agent_memory.settings.service import Settings
from agent_memory.wiring.local import build_local
from tests.integration.conftest import start_server


class ManualClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_bucket_allows_a_burst_then_the_rate() -> None:
    clock = ManualClock()
    limit = KeyRateLimit(RateLimitConfig(requests_per_second=2, burst=3), clock)
    assert [limit.take(b"a") for _ in range(3)] == [None, None, None]
    wait = limit.take(b"a")
    assert wait is not None and 0.4 < wait <= 0.5  # one token refills in 0.5 s
    assert limit.take(b"b") is None  # another key has its own bucket
    clock.now += 0.5
    assert limit.take(b"a") is None
    assert limit.take(b"a") is not None
    clock.now += 60
    assert [limit.take(b"a") for _ in range(4)][:3] == [None, None, None]  # refilled up to the burst only
    assert KeyRateLimit(RateLimitConfig(requests_per_second=0), clock).take(b"a") is None  # 0: off


def test_a_key_over_its_rate_gets_429_with_retry_after_and_others_do_not(tmp_path) -> None:
    settings = Settings(
        data_dir=tmp_path, embedder="hashing", rate_limit={"requests_per_second": 0.01, "burst": 3}
    )
    runtime = build_local(settings)
    noisy = runtime.keys.create("alpha", ["*"], ["read", "write"]).key
    quiet = runtime.keys.create("beta", ["*"], ["read", "write"]).key
    server, thread, url = start_server(settings, runtime)
    try:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {noisy}"}, timeout=60) as client:
            params = {"namespace": "/projects/a"}
            assert [client.get("/v1/memories", params=params).status_code for _ in range(3)] == [200] * 3
            refused = client.get("/v1/memories", params=params)
            assert refused.status_code == 429, refused.text
            body = refused.json()
            assert set(body) == {"error", "message", "details"} and body["error"] == "rate_limited"
            assert int(refused.headers["retry-after"]) == body["details"]["retry_after_seconds"] >= 1
            assert client.get("/v1/health").status_code == 200  # never throttled
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {quiet}"}, timeout=60) as client:
            assert client.get("/v1/memories", params={"namespace": "/projects/b"}).status_code == 200
    finally:
        server.should_exit = True
        thread.join(timeout=10)
