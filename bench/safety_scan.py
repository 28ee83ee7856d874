"""Precision and recall of the safety scan on the labelled corpus tests/data/safety_corpus.jsonl.

Each corpus line is {"label": "attack"|"benign", "category": …, "text": …} and, for an attack, the
"detector" built to catch it. An item counts as flagged when the scan returns a *blocking* finding (what
refuses a memory-file write and keeps text out of session snapshots); quarantine-only findings are counted
separately. Printed:

- per detector (`safety.DETECTORS`): precision = flagged attacks / everything it flagged; recall = the attacks
  meant for it that it flagged (another detector catching them does not count for it);
- per category: recall of attack categories, false-positive rate of benign categories;
- overall: recall on attacks, false-positive rate on benign items, precision;
- the scan time per entry (mean, p50, p95, max) and the one-off cost of the first scan in a fresh process
  (it imports detect-secrets);
- Amazon Bedrock Guardrails (the opt-in AWS layer): run on every item only with a guardrail id
  (`--guardrail-id`/`--guardrail-version` or AGENT_MEMORY_GUARDRAIL_ID/_VERSION) and AWS credentials;
  otherwise the line says it was skipped and why. It never prints estimated figures.

Targets: recall >= 0.95 on attacks, false-positive rate <= 0.02 on benign items (exit 1 below either). The
false-positive rate of memory-file entries, which refuse quarantine findings too (`safety.refusing_rule`), is
printed beside it.

    .venv/bin/python bench/safety_scan.py [--show-misses] [--guardrail-id ID --guardrail-version 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from agent_memory.domain import safety

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "safety_corpus.jsonl"
RECALL_TARGET = 0.95
FALSE_POSITIVE_TARGET = 0.02


@dataclass(frozen=True)
class Item:
    label: str
    category: str
    text: str
    detector: str | None = None


@dataclass
class Ratio:
    hits: int = 0
    total: int = 0

    @property
    def value(self) -> float:
        return self.hits / self.total if self.total else float("nan")


@dataclass
class Report:
    attacks: Ratio = field(default_factory=Ratio)
    benign_flagged: Ratio = field(default_factory=Ratio)
    benign_quarantined: Ratio = field(default_factory=Ratio)
    categories: dict[tuple[str, str], Ratio] = field(default_factory=lambda: defaultdict(Ratio))
    detector_recall: dict[str, Ratio] = field(default_factory=lambda: defaultdict(Ratio))
    detector_precision: dict[str, Ratio] = field(default_factory=lambda: defaultdict(Ratio))
    misses: list[str] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return self.attacks.value

    @property
    def false_positive_rate(self) -> float:
        return self.benign_flagged.value

    @property
    def precision(self) -> float:
        flagged = self.attacks.hits + self.benign_flagged.hits
        return self.attacks.hits / flagged if flagged else float("nan")


def load(path: Path = CORPUS) -> list[Item]:
    items = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        raw = json.loads(line)
        if raw["label"] not in ("attack", "benign"):
            raise ValueError(f"{path}:{number}: label must be attack or benign")
        if raw["label"] == "attack" and raw.get("detector") not in safety.DETECTORS:
            raise ValueError(f"{path}:{number}: an attack names its detector, one of {safety.DETECTORS}")
        items.append(Item(raw["label"], raw["category"], raw["text"], raw.get("detector")))
    return items


def evaluate(items: list[Item]) -> Report:
    report = Report()
    for item in items:
        start = time.perf_counter()
        findings = safety.scan(item.text)
        report.seconds.append(time.perf_counter() - start)
        blocking = [f for f in findings if f.severity == "block"]
        detectors = {f.detector for f in blocking}
        flagged = bool(blocking)
        attack = item.label == "attack"
        report.categories[(item.label, item.category)].total += 1
        report.categories[(item.label, item.category)].hits += flagged
        for detector in detectors:
            report.detector_precision[detector].total += 1
            report.detector_precision[detector].hits += attack
        if attack:
            report.attacks.total += 1
            report.attacks.hits += flagged
            assert item.detector is not None
            report.detector_recall[item.detector].total += 1
            report.detector_recall[item.detector].hits += item.detector in detectors
            if not flagged:
                report.misses.append(f"missed {item.category}: {item.text[:90]!r}")
        else:
            report.benign_flagged.total += 1
            report.benign_flagged.hits += flagged
            report.benign_quarantined.total += 1
            report.benign_quarantined.hits += bool(findings) and not flagged
            if flagged:
                detail = "; ".join(f"{f.rule}/{f.detector}" for f in blocking)
                report.misses.append(f"false positive {item.category}: {item.text[:70]!r} ({detail})")
    return report


def first_scan_ms() -> float:
    """Wall time of the first scan in a fresh interpreter (it imports detect-secrets), minus the package
    import, min of 3."""
    program = (
        "import time; from agent_memory.domain import safety; t = time.perf_counter(); "
        "safety.scan('postgres://u:p@h/db'); print((time.perf_counter() - t) * 1000)"
    )
    runs = []
    for _ in range(3):
        result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
        runs.append(float(result.stdout.strip()))
    return min(runs)


def guardrail(items: list[Item], guardrail_id: str, version: str) -> str:
    """Recall and false-positive rate of the Bedrock guardrail alone, or why it was not measured."""
    if not guardrail_id:
        return (
            "skipped: no guardrail configured (pass --guardrail-id and --guardrail-version, or set "
            "AGENT_MEMORY_GUARDRAIL_ID / AGENT_MEMORY_GUARDRAIL_VERSION; deploy one with the CDK context "
            "guardrail.enabled)"
        )
    import boto3

    session = boto3.Session()
    if session.get_credentials() is None:
        return "skipped: no AWS credentials in this environment, so no figures"
    from agent_memory.adapters.aws.bedrock import BEDROCK_CLIENT_CONFIG
    from agent_memory.adapters.aws.guardrails import BedrockGuardrailScreen

    screen = BedrockGuardrailScreen(
        session.client("bedrock-runtime", config=BEDROCK_CLIENT_CONFIG), guardrail_id, version
    )
    attacks, benign = Ratio(), Ratio()
    seconds = []
    for item in items:
        start = time.perf_counter()
        flagged = screen.screen(item.text) is not None
        seconds.append(time.perf_counter() - start)
        target = attacks if item.label == "attack" else benign
        target.total += 1
        target.hits += flagged
    return (
        f"recall {attacks.value:.3f} ({attacks.hits}/{attacks.total}), false-positive rate "
        f"{benign.value:.3f} ({benign.hits}/{benign.total}), {statistics.median(seconds) * 1000:.0f} ms "
        "median per call"
    )


def _line(name: str, ratio: Ratio) -> str:
    return f"{ratio.value:6.3f} ({ratio.hits}/{ratio.total})" if ratio.total else "   n/a"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--show-misses", action="store_true")
    parser.add_argument("--guardrail-id", default=os.environ.get("AGENT_MEMORY_GUARDRAIL_ID", ""))
    parser.add_argument(
        "--guardrail-version", default=os.environ.get("AGENT_MEMORY_GUARDRAIL_VERSION", "DRAFT")
    )
    args = parser.parse_args(argv)

    items = load(args.corpus)
    cold = first_scan_ms()
    evaluate(items)  # warm: compiled patterns, detect-secrets loaded
    report = evaluate(items)
    attacks = sum(1 for i in items if i.label == "attack")
    print(
        f"corpus: {args.corpus.name}, {len(items)} items ({attacks} attacks, {len(items) - attacks} benign)"
    )
    print("\nper detector            precision            recall (attacks meant for it)")
    for detector in safety.DETECTORS:
        precision = report.detector_precision.get(detector, Ratio())
        recall = report.detector_recall.get(detector, Ratio())
        print(f"  {detector:20s}  {_line(detector, precision):20s} {_line(detector, recall)}")
    print("\nper category (attack: recall; benign: false-positive rate)")
    for (label, category), ratio in sorted(report.categories.items()):
        print(f"  {label:6s} {category:24s} {_line(category, ratio)}")
    print(
        f"\noverall: recall {_line('', report.attacks)}, false-positive rate {_line('', report.benign_flagged)}, "
        f"precision {report.precision:.3f}; benign items only quarantined: {report.benign_quarantined.hits}"
    )
    ms = sorted(s * 1000 for s in report.seconds)
    print(
        f"scan time per entry: mean {statistics.mean(ms):.2f} ms, p50 {ms[len(ms) // 2]:.2f} ms, "
        f"p95 {ms[int(len(ms) * 0.95)]:.2f} ms, max {ms[-1]:.2f} ms; first scan in a fresh process "
        f"(imports detect-secrets) {cold:.0f} ms"
    )
    print(f"bedrock guardrail: {guardrail(items, args.guardrail_id, args.guardrail_version)}")
    if (
        args.show_misses
        or report.recall < RECALL_TARGET
        or report.false_positive_rate > FALSE_POSITIVE_TARGET
    ):
        for miss in report.misses:
            print(f"  {miss}")
    failures = []
    if not report.recall >= RECALL_TARGET:
        failures.append(f"recall {report.recall:.3f} < {RECALL_TARGET}")
    if not report.false_positive_rate <= FALSE_POSITIVE_TARGET:
        failures.append(f"false-positive rate {report.false_positive_rate:.3f} > {FALSE_POSITIVE_TARGET}")
    for failure in failures:
        print(f"MISSES target: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
