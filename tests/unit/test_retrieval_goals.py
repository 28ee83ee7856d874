"""The issue-34 goal lines of bench/retrieval_quality.py: each goal is met only when the dev figure and the
non-dev figure both reach it, and the dev − non-dev gap is checked against its own bound."""

from __future__ import annotations

from bench.retrieval_quality import GOAL_GAP, GOALS_AT_10, goal_lines


def _line(lines: list[str], label: str) -> str:
    return next(line for line in lines if line.strip().startswith(label))


def test_a_goal_is_met_only_when_dev_and_non_dev_both_reach_it() -> None:
    dev = {"overall": 0.81, "multi-hop": 0.56, "open-domain": 0.40, "temporal": 0.97}
    non_dev = {"overall": 0.80, "multi-hop": 0.54, "open-domain": 0.46, "temporal": 0.82}
    lines = goal_lines(dev, non_dev)
    assert _line(lines, "overall").endswith(" met")
    assert _line(lines, "temporal").endswith(" met")
    assert _line(lines, "multi-hop").endswith("NOT MET")  # non-dev below
    assert _line(lines, "open-domain").endswith("NOT MET")  # dev below
    assert "0.560 / 0.540" in _line(lines, "multi-hop")


def test_the_gap_line_compares_dev_overall_with_non_dev_overall() -> None:
    base = dict.fromkeys(GOALS_AT_10, 0.9)
    within = goal_lines(base, {**base, "overall": 0.9 - GOAL_GAP})
    beyond = goal_lines(base, {**base, "overall": 0.9 - GOAL_GAP - 0.01})
    assert _line(within, "gap").endswith(" met")
    assert "+0.020" in _line(within, "gap")
    assert _line(beyond, "gap").endswith("NOT MET")


def test_without_non_dev_figures_only_dev_is_shown_and_no_gap_is_claimed() -> None:
    lines = goal_lines(dict.fromkeys(GOALS_AT_10, 0.95), None)
    assert len(lines) == len(GOALS_AT_10)
    assert all(line.endswith(" met") for line in lines)


def test_split_gaps_weigh_questions_and_place_the_real_split_among_all_splits() -> None:
    from bench.retrieval_quality import split_gap_lines

    # conv a: three multi-hop questions found; b, c, d: one question each, missed. Question-weighted, a split
    # with a as dev has 3 of 4 dev questions found and none of the other 2: +0.750 (the conversations' mean
    # would say +0.500); a split without a: 0 against 3 of 4, -0.750.
    per_conversation = {"a": {1: [1.0, 1.0, 1.0]}, "b": {1: [0.0]}, "c": {1: [0.0]}, "d": {1: [0.0]}}
    lines = split_gap_lines(per_conversation, ["a", "b"])
    assert "over all 6 splits" in " ".join(lines)
    assert _line(lines, "a (dev)").split()[2:6] == [
        "3",
        "1.000",
        "1.000",
        "-",
    ]  # n, overall, multi-hop, temporal
    overall = _line(lines, "overall").split()
    assert overall[1:6] == ["-0.750", "-0.750", "+0.000", "+0.750", "+0.750"]
    assert overall[6] == "0%"  # no split within the gap goal
    assert overall[7:] == ["+0.750", "3", "of", "6"]  # the real split and how many splits reach its gap
    assert _line(lines, "multi-hop").split()[1:] == overall[1:]
