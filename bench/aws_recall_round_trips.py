"""Recall on the AWS runtime: how many service round trips a user waits for, through the public API.

In AWS, recall latency is network time: every DynamoDB, S3 Vectors and Bedrock call is a round trip of a few
milliseconds, so what matters is how many of them run one after the other. This bench runs `POST /v1/recall`
through the API Lambda handler on moto (the behaviour suite's AWS runtime, tests/behaviour/conftest.py), with
every AWS call and the query embedding (a Bedrock call in production) delayed by a simulated round trip, and
reports

* the calls one recall makes, per operation;
* the sequential round trips: per recall, the calls' measured (start, end) with the delay, grouped into
  waves of calls that overlap in time (overlapping calls count once); median and max over the queries. The
  wall-time view, (time with the delay − time without) / delay, is printed beside it; it also moves with
  moto's own CPU time on a busy host.

Target: at most 5 sequential round trips (the embedding beside the keyword search, the vector search, the
hydration of the candidates, and the recall bookkeeping: 4; plus the embedding-migration route, a Query the
runtime repeats at most once a second, which recalls slowed by the simulated delay pay about every other
time). Exits 1 when missed.

    .venv/bin/python bench/aws_recall_round_trips.py [--memories 200] [--recalls 30] [--rtt-ms 100]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import botocore.client

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TARGET_ROUND_TRIPS = 5
NAMESPACE = "/projects/rtt"
TOPICS = ["billing", "search", "checkout", "auth", "payments", "analytics", "mobile", "infra", "ledger"]
TOOLS = ["postgres", "dynamodb", "kafka", "redis", "terraform", "pytest", "grafana", "lambda", "s3"]


class Delay:
    """Sleeps `seconds` in every AWS API call and query embedding (a round trip); counts the calls and keeps
    each call's (start, end) while `tracing`."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls: Counter[str] = Counter()
        self.spans: list[tuple[float, float]] = []
        self.counting = False
        self.tracing = False
        self._lock = threading.Lock()

    def call(self, name: str) -> None:
        started = time.perf_counter()
        if self.counting:
            with self._lock:
                self.calls[name] += 1
        if self.seconds:
            time.sleep(self.seconds)
        if self.tracing:
            with self._lock:
                self.spans.append((started, time.perf_counter()))


def waves(spans: list[tuple[float, float]]) -> int:
    """How many round trips one after another: groups of calls that overlap in time count once."""
    count, end = 0, float("-inf")
    for start, stop in sorted(spans):
        if start >= end:
            count += 1
            end = stop
        else:
            end = max(end, stop)
    return count


@contextlib.contextmanager
def delayed(delay: Delay) -> Iterator[None]:
    from agent_memory.adapters.local.embedders import HashingEmbedder

    make_call = botocore.client.BaseClient._make_api_call
    embed_query = HashingEmbedder.embed_query

    def call(self: Any, operation: str, params: Any) -> Any:
        delay.call(f"{self.meta.service_model.service_name}:{operation}")
        return make_call(self, operation, params)

    def query(self: Any, text: str) -> Any:
        delay.call("bedrock:InvokeModel (query embedding)")
        return embed_query(self, text)

    botocore.client.BaseClient._make_api_call = call  # type: ignore[method-assign]
    HashingEmbedder.embed_query = query  # type: ignore[method-assign]
    try:
        yield
    finally:
        botocore.client.BaseClient._make_api_call = make_call  # type: ignore[method-assign]
        HashingEmbedder.embed_query = embed_query  # type: ignore[method-assign]


def post(api: Any, path: str, body: Any) -> dict[str, Any]:
    with contextlib.redirect_stdout(io.StringIO()):  # the handler's EMF metric lines
        response = api.client("alpha").post(path, json=body)
    if response.status_code >= 300:
        raise SystemExit(f"POST {path} answered {response.status_code}: {response.text}")
    return response.json()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--recalls", type=int, default=30)
    parser.add_argument("--rtt-ms", type=float, default=100.0)
    args = parser.parse_args(argv)

    from bench.hardening import runtimes

    delay = Delay()
    # Distinct queries: a repeated one is answered by the query-embedding cache, without its round trip.
    queries = [
        f"which store does {TOPICS[i % 9]} service {i} use with {TOOLS[(i * 5) % 9]}"
        for i in range(args.recalls)
    ]
    with tempfile.TemporaryDirectory(prefix="rtt-") as root, delayed(delay):
        for api in runtimes(["aws"], Path(root)):
            for i in range(args.memories):
                topic, tool = TOPICS[i % 9], TOOLS[(i // 9) % 9]
                post(
                    api,
                    "/v1/memories",
                    {"namespace": NAMESPACE, "content": f"The {topic} service {i} keeps its data in {tool}"},
                )
            post(api, "/v1/recall", {"query": queries[0], "namespaces": [NAMESPACE]})  # warm up
            # Each query is recalled without the delay (counting calls) and then with it (tracing them), so
            # drift in the machine's load affects both alike; in two wordings, so the second recall does not
            # find the first one's query embedding in the cache.
            rtt = args.rtt_ms / 1000
            plain, slowed, trips, results = [], [], [], 0
            for asked in queries:
                for seconds, samples, query in ((0.0, plain, f"{asked} now"), (rtt, slowed, asked)):
                    delay.seconds, delay.counting, delay.tracing = seconds, not seconds, bool(seconds)
                    delay.spans = []
                    started = time.perf_counter()
                    answer = post(api, "/v1/recall", {"query": query, "namespaces": [NAMESPACE], "k": 10})
                    samples.append(time.perf_counter() - started)
                    delay.counting = delay.tracing = False
                    results += len(answer["results"])
                trips.append(waves(delay.spans))
    sequential = statistics.median(trips)
    by_time = statistics.median(b - a for a, b in zip(plain, slowed, strict=True)) / rtt
    print(
        f"AWS runtime on moto, {args.memories} memories, {args.recalls} recalls of k=10 through POST /v1/recall"
    )
    print(f"mean results per recall: {results / (2 * args.recalls):.1f}")
    print("calls per recall:")
    for name, count in sorted(delay.calls.items()):
        print(f"  {name:45s} {count / args.recalls:5.1f}")
    print(f"  {'total':45s} {sum(delay.calls.values()) / args.recalls:5.1f}")
    print(
        f"recall p50 {statistics.median(plain) * 1000:.1f} ms without delay, {statistics.median(slowed) * 1000:.1f} "
        f"ms with {args.rtt_ms:.0f} ms per call"
    )
    print(
        f"sequential round trips per recall: median {sequential:g}, max {max(trips)} (target <= "
        f"{TARGET_ROUND_TRIPS}); by wall time {by_time:.1f}"
    )
    print(json.dumps({"sequential_round_trips": sequential, "max": max(trips)}))
    return 0 if sequential <= TARGET_ROUND_TRIPS else 1


if __name__ == "__main__":
    sys.exit(main())
