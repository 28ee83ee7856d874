"""Import throughput through the public service path (issue 14): `ImportService.run` over a directory source,
on a real local data directory (SQLite records, local index, memory files, the SQLite import store) with the
offline hashing embedder.

Two sources are generated (seeded, so the figures are reproducible):
- a JSONL chat log of `--turns` turns (10k) in 400 sessions: user and assistant turns; ~15 % small talk,
  ~10 % temporary notes, the rest preferences, project state and facts about many distinct subjects;
- an OpenClaw workspace of `--entries` entries (1k): 20 % in MEMORY.md, 10 % in USER.md, the rest daily-log
  lines over 60 days.

Figures: items found, items per second of the import (wall clock), and each decision's count. Then the same
source is imported again: every item must be skipped as already imported (idempotency).

    .venv/bin/python bench/import.py [--turns 10000] [--entries 1000] [--seed 14]

Exit status 1 when an import fails, when the decisions do not add up to the items found, or when the re-run
imports anything again.

First, per-source fidelity on the realistic workspaces of tests/data/interop (see bench/import_fidelity.py:
items kept with their meaning / items a person would keep, target >= 98 %; dropped items stored; items not
written and not listed). Exit status 1 when a source misses the target.

    .venv/bin/python bench/import.py --fidelity-only
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from import_fidelity import failures as fidelity_failures  # bench/ is on the path of a script run from it
from import_fidelity import fidelity_table

from agent_memory.adapters.posix.source_tree import PosixSourceTree
from agent_memory.domain.interop.model import ImportReport, ImportState
from agent_memory.settings.service import Settings
from agent_memory.wiring.local import build_local

TENANT = "bench"
NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)

SUBJECTS = [
    f"{a}-{b}"
    for a in (
        "billing",
        "search",
        "auth",
        "ledger",
        "media",
        "orders",
        "catalog",
        "mailer",
        "gateway",
        "reports",
        "fraud",
        "pricing",
    )
    for b in ("api", "worker", "db", "ui", "cron", "queue", "cache", "etl")
]
TOOLS = ["PostgreSQL", "Redis", "DynamoDB", "Kafka", "S3", "OpenSearch", "SQS", "Lambda", "ECS", "EKS"]
LANGS = ["Go", "Rust", "TypeScript", "Python", "Kotlin", "Java", "Elixir", "Ruby"]
SMALL_TALK = ["ok thanks", "hi!", "great, thx", "sounds good", "cool", "hello again"]


class Clock:
    def now(self) -> datetime:
        return NOW


def _sentence(rng: random.Random, n: int) -> str:
    subject, tool, lang = rng.choice(SUBJECTS), rng.choice(TOOLS), rng.choice(LANGS)
    kind = rng.random()
    if kind < 0.15:
        return rng.choice(SMALL_TALK)
    if kind < 0.25:
        return f"Right now I'm waiting for the {subject} deploy number {n} to finish."
    if kind < 0.45:
        return f"I prefer {lang} for the {subject} service and {tool} for its storage (note {n})."
    if kind < 0.65:
        return f"We decided to move {subject} onto {tool} in sprint {n % 97}, owner team {n % 13}."
    return f"The {subject} component talks to {tool} through adapter v{n % 50}.{n % 7} written in {lang}."


def write_chat_log(root: Path, turns: int, rng: random.Random) -> None:
    start = NOW - timedelta(days=20)
    with (root / "chat.jsonl").open("w", encoding="utf-8") as out:
        for n in range(turns):
            row = {
                "id": f"msg-{n:06d}",
                "session_id": f"s{n // 25:04d}",
                "role": "user" if n % 2 == 0 else "assistant",
                "content": _sentence(rng, n),
                "timestamp": (start + timedelta(seconds=150 * n)).isoformat(),
            }
            out.write(json.dumps(row) + "\n")


def write_workspace(root: Path, entries: int, rng: random.Random) -> None:
    memory, user = entries // 5, entries // 10
    (root / "MEMORY.md").write_text(
        "# Memory\n\n" + "".join(f"- {_fact(rng, n)}\n" for n in range(memory)), encoding="utf-8"
    )
    (root / "USER.md").write_text(
        "".join(f"- Prefers {rng.choice(LANGS)} examples for topic {n} in docs.\n" for n in range(user)),
        encoding="utf-8",
    )
    (root / "memory").mkdir()
    daily = entries - memory - user
    per_day = -(-daily // 60)
    written = 0
    for day in range(60):
        lines = [_sentence(rng, 10_000 + written + i) for i in range(min(per_day, daily - written))]
        written += len(lines)
        stamp = (NOW - timedelta(days=day + 1)).date().isoformat()
        (root / "memory" / f"{stamp}.md").write_text(
            "".join(f"- {line}\n" for line in lines), encoding="utf-8"
        )


def _fact(rng: random.Random, n: int) -> str:
    return f"The {rng.choice(SUBJECTS)} service {n} stores {rng.choice(TOOLS)} snapshots under prefix p{n}/."


def run(label: str, source: Path, fmt: str, data_dir: Path) -> tuple[ImportReport, float, bool]:
    runtime = build_local(Settings(data_dir=data_dir, embedder="hashing"), Clock())
    service = runtime.services.imports
    assert service is not None
    tree = PosixSourceTree(source)
    started = time.perf_counter()
    report = service.run(TENANT, tree, f"/bench/{label}", fmt=fmt, actor="bench")
    elapsed = time.perf_counter() - started
    rerun = service.run(TENANT, tree, f"/bench/{label}", fmt=fmt, actor="bench")
    idempotent = (
        rerun.decisions.skipped_seen == rerun.inventory.items
        and rerun.decisions.total() == rerun.inventory.items
    )
    return report, elapsed, idempotent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--entries", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--fidelity-only", action="store_true", help="only the per-source fidelity table")
    args = parser.parse_args(argv)
    table, results = fidelity_table()
    print("\n".join(table))
    failures: list[str] = fidelity_failures(results)
    if args.fidelity_only:
        for failure in failures:
            print("FAIL", failure, file=sys.stderr)
        return 1 if failures else 0
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        rng = random.Random(args.seed)
        (base / "chat").mkdir()
        write_chat_log(base / "chat", args.turns, rng)
        (base / "workspace").mkdir()
        write_workspace(base / "workspace", args.entries, rng)
        for label, folder, fmt in (("chat", "chat", "jsonl"), ("workspace", "workspace", "openclaw")):
            report, elapsed, idempotent = run(label, base / folder, fmt, base / f"data-{label}")
            items = report.inventory.items
            rate = items / elapsed if elapsed > 0 else float("inf")
            decisions = {k: v for k, v in report.decisions.model_dump().items() if v}
            print(f"{label:10s} {fmt:9s} items {items:6d}  {elapsed:7.2f} s  {rate:8.1f} items/s")
            print(f"{'':10s} decisions {decisions}")
            print(
                f"{'':10s} files {report.files.model_dump()}  preference recall {report.preference_recall.hits}/"
                f"{report.preference_recall.sampled}  re-run idempotent: {idempotent}"
            )
            if report.state is not ImportState.COMPLETED:
                failures.append(f"{label}: import ended {report.state.value}: {report.error}")
            wanted = args.turns if label == "chat" else args.entries
            if items != wanted:
                failures.append(f"{label}: the inventory found {items} items, the source holds {wanted}")
            if report.decisions.total() != items:
                failures.append(
                    f"{label}: decisions add up to {report.decisions.total()}, items found {items}"
                )
            if not idempotent:
                failures.append(f"{label}: the re-run imported something again")
    for failure in failures:
        print("FAIL", failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
