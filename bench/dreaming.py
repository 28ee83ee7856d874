"""Dreaming sweep time and peak memory for 1k, 10k and 100k candidates on the local runtime.

Each size gets a fresh data directory: N short-term records bulk-loaded through the store port (10 % of them
near-duplicates of another), N/2 recall-log entries over the last 30 days (Zipf-distributed results, so a
minority is recalled often enough to pass the gates), and 7 daily logs of 100 lines. Vocabulary is a
Zipf-distributed set of 20,000 pseudo-words, so texts overlap like real notes do rather than like templates.
Then, on the same data:

- a dry run, timed (Light → REM → Deep → forgetting; nothing written);
- the same dry run under `tracemalloc`, for the peak Python heap (tracemalloc slows Python down, so its time
  is not the figure);
- the real run, timed: also materialises up to 200 daily-log candidates, promotes, writes run.json (every
  candidate), REPORT.md and the state files.

The hashing embedder verifies near-duplicate pairs (the candidates it embeds are reported). Target: 100k
candidates in under 30 s, and time growing linearly (ratio ≈ 10 per ×10).

    .venv/bin/python bench/dreaming.py [--sizes 1000,10000,100000] [--seed 7]

Exit status 1 when a run of 100k or more misses the 30 s target; without such a size the target is not
checked (and the exit status is 0).
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agent_memory.adapters.local.embedders import HashingEmbedder
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.adapters.posix.file_store import PosixFileStore
from agent_memory.domain import safety
from agent_memory.domain.dreaming.config import DreamingConfig
from agent_memory.domain.dreaming.sweep import DreamingService
from agent_memory.domain.files.memory_files import MemoryFilesService
from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.domain.memory.service import MemoryService
from agent_memory.domain.ports import RecordWrite
from agent_memory.domain.records import MemoryRecord, MemoryType, RecallLogEntry, Tier, content_hash
from agent_memory.domain.text import query_terms

TENANT = "bench"
NAMESPACE = "/projects/bench"
NOW = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)
TARGET_SIZE = 100_000
TARGET_SECONDS = 30.0
"""The target: a real sweep of 100k candidates in under 30 s."""
CUES = ["We decided to", "The user prefers", "The team agreed to", "Remember that", "Note:"]


class Clock:
    def now(self) -> datetime:
        return NOW


def vocabulary(rng: random.Random, size: int = 20_000) -> list[str]:
    syllables = [
        "ka",
        "lo",
        "mi",
        "ten",
        "ra",
        "vo",
        "su",
        "del",
        "qui",
        "pa",
        "nor",
        "est",
        "ul",
        "zen",
        "ba",
    ]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def sentence(rng: random.Random, words: list[str], weights: list[float]) -> str:
    chosen = rng.choices(words, weights=weights, k=rng.randint(8, 14))
    return " ".join(chosen).capitalize() + "."


def load(store: SqliteRecordStore, files: MemoryFilesService, size: int, seed: int) -> None:
    rng = random.Random(seed)
    words = vocabulary(rng)
    weights = [1.0 / (rank + 1) ** 1.05 for rank in range(len(words))]
    texts: list[str] = []
    for index in range(size):
        if index and rng.random() < 0.1:  # a near-duplicate of an earlier record: one word added
            texts.append(texts[rng.randrange(len(texts))][:-1] + " " + rng.choice(words) + ".")
        else:
            texts.append(sentence(rng, words, weights))
    ids: list[str] = []
    batch: list[RecordWrite] = []
    for text in texts:
        created = NOW - timedelta(hours=rng.uniform(1, 24 * 20))
        record = MemoryRecord(
            tenant=TENANT,
            namespace=NAMESPACE,
            type=MemoryType.DOMAIN_KNOWLEDGE,
            content=text,
            created_at=created,
            updated_at=created,
            last_access_at=created,
            tier=Tier.SHORT_TERM,
            valid_from=created,
            recorded_at=created,
            content_hash=content_hash(text),
            embedding_model="hashing-v1:384:norm",
        )
        ids.append(record.id)
        batch.append(RecordWrite(record, None))
        if len(batch) == 500:
            store.commit(batch, [])
            batch = []
    if batch:
        store.commit(batch, [])
    popularity = [1.0 / (rank + 1) ** 0.9 for rank in range(size)]
    query_pool = [f"{rng.getrandbits(128):032x}" for _ in range(max(10, size // 4))]
    for _ in range(size // 2):
        results = rng.choices(range(size), weights=popularity, k=rng.randint(1, 3))
        store.log_recall(
            RecallLogEntry(
                tenant=TENANT,
                namespace=NAMESPACE,
                query_hash=rng.choice(query_pool),
                query_terms=query_terms(" ".join(texts[results[0]].split()[:3])),
                result_ids=[ids[i] for i in results],
                scores=[round(rng.uniform(0.4, 0.95), 4) for _ in results],
                at=NOW - timedelta(hours=rng.uniform(0, 24 * 30)),
            )
        )
    for day_offset in range(7):
        start = NOW - timedelta(days=day_offset, hours=1)
        for line in range(100):
            text = f"{rng.choice(CUES)} {sentence(rng, words, weights)}"
            files.append_daily(TENANT, NAMESPACE, text, at=start - timedelta(minutes=line))


def build(root: Path) -> tuple[SqliteRecordStore, MemoryService, MemoryFilesService]:
    store = SqliteRecordStore(root / "memory.db")
    policy = MemoryPolicy()
    memory = MemoryService(store, LocalSearchIndex(root / "index"), HashingEmbedder(), Clock(), policy)
    files = MemoryFilesService(PosixFileStore(root / "files"), policy.caps, safety.first_rule, Clock())
    return store, memory, files


def measure(size: int, seed: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="dream-bench-") as directory:
        root = Path(directory)
        store, memory, files = build(root)
        started = time.perf_counter()
        load(store, files, size, seed)
        load_seconds = time.perf_counter() - started
        config = DreamingConfig(compaction_weekday=None, max_candidates=1_000_000)
        service = DreamingService(memory, store, files, Clock(), config)

        started = time.perf_counter()
        dry = service.run(TENANT, NAMESPACE, dry_run=True)
        dry_seconds = time.perf_counter() - started

        tracemalloc.start()
        service.run(TENANT, NAMESPACE, dry_run=True)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()

        started = time.perf_counter()
        real = service.run(TENANT, NAMESPACE)
        real_seconds = time.perf_counter() - started
        run_json = (
            (root / "files" / TENANT / NAMESPACE.lstrip("/") / ".dreams" / real.day / "run.json")
            .stat()
            .st_size
        )
        store.close()
        return {
            "size": size,
            "candidates": len(dry.outcomes),
            "load_s": load_seconds,
            "dry_s": dry_seconds,
            "real_s": real_seconds,
            "peak_mib": peak / 2**20,
            "light_s": dry.timings["light"],
            "rem_s": dry.timings["rem"],
            "deep_s": dry.timings["deep"],
            "embedded_pairs": dry.inputs["dedup"]["verified_pairs"],
            "merged": dry.inputs["dedup"]["merged_pairs"] + dry.inputs["dedup"]["exact_duplicates"],
            "promoted": len(real.promoted),
            "passing": sum(1 for o in dry.outcomes if o.gates_passed),
            "run_json_mib": run_json / 2**20,
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    rows = []
    header = (
        f"{'records':>8} {'cands':>7} {'dry s':>7} {'real s':>7} {'light':>6} {'rem':>5} {'deep':>5} "
        f"{'peak MiB':>8} {'embedded':>8} {'merged':>6} {'pass':>5} {'promo':>5} {'run.json MiB':>12}"
    )
    print(header)
    for size in sizes:
        row = measure(size, args.seed)
        rows.append(row)
        print(
            f"{row['size']:>8} {row['candidates']:>7} {row['dry_s']:>7.2f} {row['real_s']:>7.2f} "
            f"{row['light_s']:>6.2f} {row['rem_s']:>5.2f} {row['deep_s']:>5.2f} {row['peak_mib']:>8.1f} "
            f"{row['embedded_pairs']:>8} {row['merged']:>6} {row['passing']:>5} {row['promoted']:>5} "
            f"{row['run_json_mib']:>12.1f}",
            flush=True,
        )
    for previous, current in itertools.pairwise(rows):
        growth = current["candidates"] / previous["candidates"]
        print(
            f"x{growth:.1f} candidates: dry time x{current['dry_s'] / previous['dry_s']:.2f}, real time "
            f"x{current['real_s'] / previous['real_s']:.2f}, peak memory x{current['peak_mib'] / previous['peak_mib']:.2f}"
        )
    largest = max(rows, key=lambda row: row["size"])
    if largest["size"] < TARGET_SIZE:
        print(f"100k target (< {TARGET_SECONDS:.0f} s): not checked, the largest size is {largest['size']:,}")
        return 0
    met = largest["real_s"] < TARGET_SECONDS
    print(
        f"100k target (< {TARGET_SECONDS:.0f} s): {'meets' if met else 'MISSES'} "
        f"({largest['real_s']:.1f} s real, {largest['dry_s']:.1f} s dry)"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
