"""bench/agent_recall.py (issue 34): its scoring on a tiny synthetic set, its --policy parsing, and that the
agent-style cases file is well-formed."""

from __future__ import annotations

import copy
import json
from collections import Counter

import pytest

from bench.agent_recall import (
    CASES,
    KINDS,
    MalformedCases,
    Written,
    build_policy,
    load_cases,
    moved,
    parse_policy,
    rank_of,
    scores,
    table,
    validate,
    write_report,
)

TINY = {
    "memories": [
        {"id": "a", "namespace": "/t/one", "content": "The API listens on port 8443."},
        {"id": "b", "namespace": "/t/one", "content": "Beacon listens on port 8080."},
        {"id": "c", "namespace": "/t/two", "content": "The user prefers aisle seats."},
    ],
    "queries": [
        {"id": "q1", "kind": "direct", "query": "API port?", "relevant": ["a"]},
        {"id": "q2", "kind": "multi", "query": "Ports of the API and Beacon?", "relevant": ["a", "b"]},
        {"id": "q3", "kind": "hypothetical", "query": "Window seat?", "relevant": ["c"]},
    ],
}


def _outcomes() -> list:
    _, queries = validate(TINY)
    return [
        rank_of(queries[0], [{"b"}, {"a"}, {"c"}]),  # first relevant at rank 2
        rank_of(queries[1], [{"a"}, {"c"}, {"x"}, {"b"}]),  # ranks 1 and 4
        rank_of(queries[2], [{"a"}, {"b"}]),  # not found
    ]


def test_ranks_are_the_relevant_memories_positions() -> None:
    assert [o.ranks for o in _outcomes()] == [(2,), (1, 4), ()]


def test_a_record_standing_for_two_memories_counts_for_both_once() -> None:
    _, queries = validate(TINY)
    merged = rank_of(queries[1], [{"c"}, {"a", "b"}, {"a"}])
    assert merged.ranks == (2, 2)
    assert merged.recall_at(1) == 0.0 and merged.recall_at(3) == 1.0


def test_recall_at_k_is_over_the_most_findable_and_mrr_is_the_first_hit() -> None:
    first, multi, missed = _outcomes()
    assert (first.recall_at(1), first.recall_at(3)) == (0.0, 1.0)
    assert (multi.recall_at(1), multi.recall_at(3), multi.recall_at(5)) == (1.0, 0.5, 1.0)
    assert missed.recall_at(5) == 0.0 and missed.reciprocal_rank == 0.0
    row = scores(_outcomes())
    assert row["R@1"] == pytest.approx(1 / 3)
    assert row["R@3"] == pytest.approx(1.5 / 3)
    assert row["R@5"] == pytest.approx(2 / 3)
    assert row["MRR"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)


def test_the_table_has_a_row_per_kind_present_and_a_current_row_without_superseded() -> None:
    rows = table(_outcomes(), frozenset({"c"}))
    labels = [row.split()[0] for row in rows[1:]]
    assert labels == ["direct", "hypothetical", "multi", "overall", "current"]
    assert rows[-1].split()[1] == "2"  # q3's memory was superseded: two queries left
    assert rows[-1].split()[-1] == f"{0.75:.3f}"  # MRR of q1 (0.5) and q2 (1.0)


def test_moved_lists_only_the_queries_whose_ranks_changed() -> None:
    lines = moved({"q1": [2], "q2": [1, 4], "q3": [5]}, _outcomes())
    assert len(lines) == 1 and lines[0].startswith("  q3") and "[5] -> -" in lines[0]


@pytest.mark.parametrize(
    ("change", "fault"),
    [
        (lambda d: d["memories"].append(dict(d["memories"][0])), "used twice"),
        (lambda d: d["queries"][0].update(relevant=["zz"]), "not memories of the set"),
        (lambda d: d["queries"][0].update(relevant=[]), "1-3 distinct"),
        (lambda d: d["queries"][0].update(kind="chatty"), "is not one of"),
        (lambda d: d["memories"][0].update(namespace="no-slash"), "is not a path"),
        (lambda d: d.pop("queries"), "non-empty lists"),
    ],
)
def test_malformed_cases_are_refused_with_the_fault(change, fault: str) -> None:
    doc = copy.deepcopy(TINY)
    change(doc)
    with pytest.raises(MalformedCases, match=fault):
        validate(doc)


def test_policy_overrides_parse_as_json_and_unknown_fields_are_refused() -> None:
    overrides = parse_policy(["vector_weight=0.4", "focus_unnamed_vector=false", "fusion=rrf"])
    assert overrides == {"vector_weight": 0.4, "focus_unnamed_vector": False, "fusion": "rrf"}
    assert build_policy(overrides).vector_weight == 0.4
    assert build_policy({}) is None
    with pytest.raises(MalformedCases, match="not MemoryPolicy fields"):
        build_policy({"no_such_field": 1})
    with pytest.raises(MalformedCases, match="vector_weight"):
        build_policy({"vector_weight": 3})
    with pytest.raises(MalformedCases, match="KEY=VALUE"):
        parse_policy(["vector_weight"])


def test_the_agent_recall_cases_file_is_well_formed() -> None:
    memories, queries = load_cases(CASES)
    assert 140 <= len(memories) <= 170 and 75 <= len(queries) <= 90
    assert 3 <= len({m["namespace"] for m in memories}) <= 4
    assert set(Counter(q["kind"] for q in queries)) == set(KINDS)
    assert len({q["query"] for q in queries}) == len(queries)
    assert len({m["content"] for m in memories}) == len(memories)
    used = {r for q in queries for r in q["relevant"]}
    assert 60 <= len(used) <= len(memories) - 50  # the rest are distractors
    json.loads(CASES.read_text(encoding="utf-8"))  # plain JSON, no trailing commas


def test_the_write_report_lists_each_write_not_simply_added_with_what_it_touched() -> None:
    # Given two writes: one added, one that superseded the first
    memories = [
        {"id": "a1", "namespace": "/n", "content": "Harbor's palette is teal"},
        {"id": "a2", "namespace": "/n", "content": "Harbor's lockfile moved to pnpm 9"},
    ]
    written = Written(
        {"r1": {"a1"}, "r2": {"a2"}}, {"a1"}, [], [("a2", "superseded", "a change about harbor", ["a1"])]
    )
    # When the report is printed
    lines = write_report(memories, written)
    # Then it names the write, its reason, the memory it touched, and the counts
    assert lines[0].startswith("a2 superseded: ") and "lockfile" in lines[0]
    assert lines[1] == "  reason: a change about harbor"
    assert lines[2] == '  touched a1: "Harbor\'s palette is teal"'
    assert lines[-1] == "1 of 2 writes not a plain add (superseded 1); 1 memories superseded"
