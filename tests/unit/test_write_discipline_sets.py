"""The labelled write-discipline sets keep one shape (tests/data/README-write-discipline.md), so
bench/write_discipline.py can run any of them and report each split apart; the fresh set stays fresh (no case
of it repeats the tuned set) and the bench's table shows its split."""

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bench.write_discipline import Outcome, Tally, load_cases, table

DATA = Path(__file__).resolve().parents[2] / "tests" / "data"
STEPS = {
    "update": (2, 2),
    "sequence": (3, 5),
    "paraphrase": (2, 2),
    "compatible": (2, 3),
    "unrelated": (2, 2),
}
SHORT = {"update": "upd", "sequence": "seq", "paraphrase": "par", "compatible": "cmp", "unrelated": "unr"}
DOMAINS = {
    "personal": "pers",
    "preference": "pref",
    "config": "conf",
    "project": "proj",
    "rule": "rule",
    "schedule": "sched",
    "people": "ppl",
    "conversation": "conv",
    "imported_note": "note",
}


def _problems(case: dict[str, Any], splits: set[str], tag: str) -> list[str]:
    category, steps = case["category"], case["steps"]
    low, high = STEPS[category]
    checks = [
        (set(case) <= {"id", "category", "cue", "domain", "split", "steps", "note"}, "unknown key"),
        (low <= len(steps) <= high, f"{len(steps)} steps"),
        (all(isinstance(s, str) and s.strip() for s in steps), "an empty step"),
        (case["cue"] in (("explicit", "parallel") if category == "update" else (None,)), "cue"),
        (case["split"] in splits, "split"),
        (
            re.fullmatch(rf"{SHORT[category]}-{DOMAINS[case['domain']]}-{tag}\d{{3}}", case["id"])
            is not None,
            "id",
        ),
    ]
    return [f"{case['id']}: {why}" for ok, why in checks if not ok]


@pytest.mark.parametrize(
    ("name", "splits", "tag"),
    [
        ("write_discipline_cases.json", {"dev", "holdout"}, ""),
        ("write_discipline_fresh.json", {"fresh"}, "F-"),
        ("write_discipline_supersede_attacks.json", {"dev"}, "S-"),
    ],
)
def test_each_labelled_set_keeps_the_documented_shape(name: str, splits: set[str], tag: str) -> None:
    # Given a labelled set
    data = json.loads((DATA / name).read_text(encoding="utf-8"))
    # When every case is checked against the README's schema
    problems = [p for case in data["cases"] for p in _problems(case, splits, tag)]
    ids = [c["id"] for c in data["cases"]]
    # Then all hold, with the same categories described and unique ids
    assert set(data["categories"]) == set(STEPS) and data["description"]
    assert not problems and len(ids) == len(set(ids))


def test_the_fresh_set_repeats_no_case_of_the_tuned_set() -> None:
    # Given the tuned set and the fresh one
    def steps(name: str) -> set[tuple[str, ...]]:
        cases = json.loads((DATA / name).read_text(encoding="utf-8"))["cases"]
        return {tuple(" ".join(s.lower().split()) for s in c["steps"]) for c in cases}

    # Then no fresh case is a tuned case written again, and every fresh case has a note saying why
    assert not steps("write_discipline_fresh.json") & steps("write_discipline_cases.json")
    fresh = load_cases("fresh", DATA / "write_discipline_fresh.json")
    assert len(fresh) >= 150 and all(c.get("note") for c in fresh)


def test_the_bench_table_shows_the_splits_the_file_has() -> None:
    # Given outcomes of a fresh case and of a dev case
    fresh = Outcome({"category": "paraphrase", "split": "fresh"}, ["added", "merged"], ok=True)
    dev = Outcome({"category": "paraphrase", "split": "dev"}, ["added", "added"], ok=False)
    # When the bench tabulates them
    rows = table("local", Tally(outcomes=[fresh, dev]), 1.0)
    # Then each split present gets its column, the absent holdout none
    assert "fresh" in rows[1] and "dev" in rows[1] and "holdout" not in rows[1]
    assert rows[2].split()[-3:-1] == ["1/1", "100%"] and "0/1 0%" in rows[2]


def test_the_bench_refuses_a_write_judge_on_the_moto_runtime(capsys: pytest.CaptureFixture[str]) -> None:
    """The AWS runtime here runs on moto, which has no Bedrock: a judge figure from it would be the rules'."""
    from bench.write_discipline import main

    with pytest.raises(SystemExit) as refused:
        main(["--runtime", "aws", "--judge-model", "eu.amazon.nova-micro-v1:0"])
    assert refused.value.code == 2
    assert "--runtime local" in capsys.readouterr().err
