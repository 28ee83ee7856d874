"""Recall latency as the local server measured it, for `GET /v1/stats` and the review console's overview.

In AWS the same figure is the `RecallLatency` CloudWatch metric (handlers/api.py, the stack's dashboard): one
Lambda instance's window would be a fragment of it, so the AWS runtime wires no window and the stats say so.
Hand-written: a bounded window and two percentiles are a dozen lines; a metrics library would bring an
exporter and a registry this API does not serve."""

from __future__ import annotations

import math
import statistics
import threading
from collections import OrderedDict, deque


class LatencyWindow:
    """The last `size` recall durations per (tenant, namespace), for at most `keys` namespaces (the least
    recently used one is dropped), kept in this process only."""

    def __init__(self, size: int = 1000, keys: int = 1000) -> None:
        self._size, self._keys = size, keys
        self._windows: OrderedDict[tuple[str, str], deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def record(self, tenant: str, namespaces: tuple[str, ...], milliseconds: float) -> None:
        with self._lock:
            for namespace in namespaces:
                key = (tenant, namespace)
                window = self._windows.pop(key, None) or deque(maxlen=self._size)
                window.append(milliseconds)
                self._windows[key] = window
                while len(self._windows) > self._keys:
                    self._windows.popitem(last=False)

    def summary(self, tenant: str, namespace: str) -> dict[str, float] | None:
        """{p50_ms, p95_ms, samples} over the window, or None before the first recall."""
        with self._lock:
            samples = sorted(self._windows.get((tenant, namespace), ()))
        if not samples:
            return None
        return {
            "p50_ms": round(statistics.median(samples), 3),
            "p95_ms": round(samples[math.ceil(0.95 * len(samples)) - 1], 3),  # nearest rank
            "samples": len(samples),
        }
