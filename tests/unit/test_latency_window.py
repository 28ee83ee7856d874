"""The local server's recall latency window (api/latency.py), behind GET /v1/stats."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agent_memory.api.latency import LatencyWindow


def test_percentiles_are_nearest_rank_per_namespace_and_tenant() -> None:
    window = LatencyWindow()
    window.record("t", ("/a",), 10.0)
    window.record("t", ("/a", "/b"), 30.0)
    assert window.summary("t", "/a") == {"p50_ms": 20.0, "p95_ms": 30.0, "samples": 2}
    assert window.summary("t", "/b") == {"p50_ms": 30.0, "p95_ms": 30.0, "samples": 1}
    assert window.summary("other", "/a") is None and window.summary("t", "/c") is None


def test_the_window_keeps_the_last_samples_and_drops_the_least_recent_namespace() -> None:
    window = LatencyWindow(size=3, keys=2)
    for value in (100.0, 1.0, 2.0, 3.0):
        window.record("t", ("/a",), value)
    assert window.summary("t", "/a") == {"p50_ms": 2.0, "p95_ms": 3.0, "samples": 3}  # 100 fell out
    window.record("t", ("/b",), 5.0)
    window.record("t", ("/a",), 4.0)  # /a used again: /b is now the least recent
    window.record("t", ("/c",), 6.0)
    assert window.summary("t", "/b") is None and window.summary("t", "/a") is not None


@given(st.lists(st.floats(min_value=0, max_value=1e4), min_size=1, max_size=50))
def test_p50_never_exceeds_p95(samples: list[float]) -> None:
    window = LatencyWindow()
    for value in samples:
        window.record("t", ("/a",), value)
    summary = window.summary("t", "/a")
    assert summary is not None
    assert min(samples) - 1e-3 <= summary["p50_ms"] <= summary["p95_ms"] <= max(samples) + 1e-3
