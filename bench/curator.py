"""Skills curator: sweep time for 1k and 10k skills, and agreement with a labelled set (rule path; LLM path
when a review model is configured).

**Sweep time.** Each size gets a fresh data directory with N skills in one namespace, written as files
(SKILL.md + signals.json, like a namespace agents have filled): 70 % agent-written, 20 % human, 10 %
imported; a mix of fresh, idle (30-200 days), stale, archived and pinned skills, some with outcomes (a third of
those dominated by failed/misled). Then, on the same data: a dry run (read every skill, judge it, build the
report: nothing written), timed; and the real run, timed (also writes every status change — a new version,
the previous one kept, a change-log entry — and `.curator/<day>/run.json` + `REPORT.md`).

**Agreement.** `tests/data/curator_labelled.json`: skills with the decision a person expects. Each case is
judged by the rule path (`curator.decide`) with the default `CuratorConfig`; agreement = matching decisions /
cases. Target: agreement ≥ 0.90 (exit status 1 below it). With AGENT_MEMORY_CURATOR_MODEL_ID set the LLM review
is not part of the decision (it only proposes merges and improvements), so its path is not scored here.

    .venv/bin/python bench/curator.py [--sizes 1000,10000] [--seed 7]
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
from typing import Any

from agent_memory.adapters.posix.file_store import PosixFileStore
from agent_memory.domain import safety
from agent_memory.domain.skills.config import CuratorConfig
from agent_memory.domain.skills.curator import CuratorService, decide
from agent_memory.domain.skills.document import Provenance, SkillMeta, SkillStatus, render
from agent_memory.domain.skills.service import Outcome, OutcomeReport, Signals, SkillsService

TENANT = "bench"
NAMESPACE = "/projects/bench"
NOW = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)
AGREEMENT_TARGET = 0.90
LABELLED = Path(__file__).resolve().parents[1] / "tests" / "data" / "curator_labelled.json"


class Clock:
    def now(self) -> datetime:
        return NOW


def case_skill(case: dict[str, Any], now: datetime = NOW) -> tuple[SkillMeta, Signals]:
    """A labelled case as the curator sees it: front matter and signals."""
    since = now - timedelta(days=case["status_since"])
    meta = SkillMeta(
        name=case["id"],
        description=case["why"],
        provenance=Provenance(case["provenance"]),
        author="bench",
        created=min(since, now - timedelta(days=case["status_since"] + 1)),
        updated=since,
        version=1,
        status=SkillStatus(case["status"]),
        status_since=since,
        pinned=bool(case.get("pinned", False)),
    )
    last = case["last_used"]
    recent = tuple(
        OutcomeReport(now - timedelta(days=days), Outcome(kind), "bench", "", 1)
        for kind, days in sorted(case["outcomes"], key=lambda o: -o[1])
    )
    signals = Signals(
        uses=len(recent),
        last_used_at=now - timedelta(days=last) if last is not None else None,
        outcomes={o.value: sum(1 for r in recent if r.outcome is o) for o in Outcome},
        recent=recent,
    )
    return meta, signals


def agreement(config: CuratorConfig | None = None) -> tuple[float, list[tuple[str, str, str]]]:
    cases = json.loads(LABELLED.read_text(encoding="utf-8"))["cases"]
    config = config or CuratorConfig()
    misses = []
    for case in cases:
        meta, signals = case_skill(case)
        action = decide(meta, signals, NOW, config).action.value
        if action != case["expected"]:
            misses.append((case["id"], case["expected"], action))
    return 1 - len(misses) / len(cases), misses


def populate(root: Path, size: int, rng: random.Random) -> None:
    """N skills written straight to the directory (what agents and people would have left there)."""
    base = root / TENANT / NAMESPACE.lstrip("/") / "skills"
    words = [f"w{n}" for n in range(3000)]
    for index in range(size):
        name = f"skill-{index:06d}"
        roll = rng.random()
        provenance = (
            Provenance.AGENT if roll < 0.7 else Provenance.HUMAN if roll < 0.9 else Provenance.IMPORTED
        )
        status = rng.choices(list(SkillStatus), weights=[0.75, 0.15, 0.10])[0]
        since = NOW - timedelta(days=rng.uniform(0, 240))
        meta = SkillMeta(
            name=name,
            description=" ".join(rng.choices(words, k=8)),
            provenance=provenance,
            author="bench",
            created=since - timedelta(days=1),
            updated=since,
            version=1,
            status=status,
            status_since=since,
            pinned=rng.random() < 0.03,
        )
        body = "## Steps\n" + "\n".join(f"{n}. " + " ".join(rng.choices(words, k=10)) for n in range(1, 9))
        directory = base / name
        directory.mkdir(parents=True)
        (directory / "SKILL.md").write_text(render(meta, body), encoding="utf-8")
        if rng.random() < 0.6:
            last = NOW - timedelta(days=rng.uniform(0, 120))
            bad_heavy = rng.random() < 0.33
            recent = tuple(
                OutcomeReport(
                    last - timedelta(days=k),
                    rng.choice(
                        [Outcome.FAILED, Outcome.MISLED, Outcome.HELPED] if bad_heavy else [Outcome.HELPED]
                    ),
                    "bench",
                    "",
                    1,
                )
                for k in range(rng.randint(0, 6))
            )
            signals = Signals(views=rng.randint(0, 50), uses=len(recent), last_used_at=last, recent=recent)
            (directory / "signals.json").write_text(json.dumps(signals.as_dict()), encoding="utf-8")


def sweep(size: int, seed: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="curator-bench-") as tmp:
        root = Path(tmp)
        populate(root, size, random.Random(seed))
        files = PosixFileStore(root)
        skills = SkillsService(files, safety.first_rule, Clock())
        curator = CuratorService(skills, files, Clock())
        started = time.perf_counter()
        dry = curator.run(TENANT, NAMESPACE, dry_run=True)
        dry_seconds = time.perf_counter() - started
        started = time.perf_counter()
        real = curator.run(TENANT, NAMESPACE)
        real_seconds = time.perf_counter() - started
        return {
            "skills": size,
            "dry_run_s": dry_seconds,
            "real_run_s": real_seconds,
            "changed": real.summary.get("applied", 0),
            "summary": dry.summary,
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    print("curator sweep (local file store, one namespace)")
    print(f"{'skills':>8} {'dry run s':>10} {'real run s':>11} {'changed':>8} {'per skill ms':>13}")
    for size in (int(s) for s in args.sizes.split(",") if s):
        row = sweep(size, args.seed)
        per = row["real_run_s"] / size * 1000
        print(
            f"{size:>8} {row['dry_run_s']:>10.2f} {row['real_run_s']:>11.2f} {row['changed']:>8} {per:>13.3f}"
        )
        actions = {
            k: v for k, v in sorted(row["summary"].items()) if k not in ("skills", "applied", "proposals")
        }
        print(f"{'':>8} decisions: {actions}")

    score, misses = agreement()
    total = len(json.loads(LABELLED.read_text(encoding="utf-8"))["cases"])
    print(
        f"\nagreement with {LABELLED.name} (rule path): {score:.3f} ({total - len(misses)}/{total}); target ≥ {AGREEMENT_TARGET}"
    )
    for case_id, expected, got in misses:
        print(f"  disagree: {case_id}: labelled {expected}, rules {got}")
    if score < AGREEMENT_TARGET:
        print("FAIL: agreement below target", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
