"""Per-source import fidelity over the realistic workspaces of tests/data/interop (issue 32): each source is
imported into an empty local runtime (offline hashing embedder, fixed clock) and compared with
`tests/data/interop/expected.json`, which names per item what a person would keep and what they would drop.

- fidelity = items kept with their meaning / items a person would keep: a kept item's fragments must all be in
  one active or pending record of its namespace (a rule with its **Why:** in one memory);
- leaked = dropped items (small talk, tool output, guidance, expired) found in a record;
- every item the import did not write must be listed in the report (`skipped` + `rejected` = their counts).

Run through `bench/import.py --fidelity-only` (or as part of `bench/import.py`)."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent_memory.adapters.posix.source_tree import PosixSourceTree
from agent_memory.domain.ports import RecordQuery
from agent_memory.domain.records import Status
from agent_memory.settings.service import Settings
from agent_memory.wiring.local import build_local

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "interop"
TARGET = 0.98
NAMESPACE = "/fidelity"
_NOT_WRITTEN = (
    "rejected",
    "skipped_transient",
    "skipped_expired",
    "skipped_not_fact",
    "skipped_seen",
    "skipped_skill_file",
)


class _Clock:
    def now(self) -> datetime:
        return datetime(2026, 12, 1, 12, tzinfo=UTC)


@dataclass
class SourceFidelity:
    name: str
    kept: int = 0
    wanted: int = 0
    leaked: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    unlisted: int = 0

    @property
    def fidelity(self) -> float:
        return self.kept / self.wanted if self.wanted else 1.0


def _records(runtime: Any) -> dict[str, list[str]]:
    """Content of every active or pending record, by namespace."""
    query = RecordQuery(namespaces=(), statuses=(Status.ACTIVE, Status.PENDING), limit=1000)
    by_namespace: dict[str, list[str]] = {}
    for record in runtime.store.list("bench", query).items:
        by_namespace.setdefault(record.namespace, []).append(record.content)
    return by_namespace


def measure(source: dict[str, Any], scratch: Path) -> SourceFidelity:
    runtime = build_local(Settings(data_dir=scratch / "data", embedder="hashing"), _Clock())
    report = runtime.services.imports.run(
        "bench", PosixSourceTree(CORPUS / source["path"]), NAMESPACE, fmt=source["format"], actor="bench"
    )
    records = _records(runtime)
    result = SourceFidelity(source["name"], wanted=len(source["keep"]))
    for item in source["keep"]:
        spec = item if isinstance(item, dict) else {"all": [item]}
        contents = records.get(NAMESPACE + spec.get("ns", ""), [])
        if any(all(fragment in content for fragment in spec["all"]) for content in contents):
            result.kept += 1
        else:
            result.missed.append(spec["all"][0])
    _skill_files(runtime, source, report, result)
    everything = [content for contents in records.values() for content in contents]
    for fragment in source["drop"]:
        if any(fragment == content or (len(fragment) > 12 and fragment in content) for content in everything):
            result.leaked.append(fragment)
    counted = sum(getattr(report.decisions, name, 0) for name in _NOT_WRITTEN)
    result.unlisted = counted - len(getattr(report, "skipped", [])) - len(report.rejected)  # (older reports)
    return result


def _skill_files(runtime: Any, source: dict[str, Any], report: Any, result: SourceFidelity) -> None:
    """Each file expected beside a SKILL.md is kept whole (the same text as the source file) in its skill's
    folder; each expected skip is listed in the report with its reason."""
    skills = runtime.services.skills
    for key, fragment in source.get("skill_files", {}).items():
        name, rel = key.split("/", 1)
        result.wanted += 1
        (original,) = [
            p for p in (CORPUS / source["path"]).rglob(rel) if p.as_posix().endswith(f"/{name}/{rel}")
        ]
        files = getattr(skills, "files", None)  # (a version before skill files kept none)
        kept = files.read("bench", NAMESPACE + source.get("skill_ns", ""), name, rel) if files else None
        if kept is not None and kept == original.read_text(encoding="utf-8") and fragment in kept:
            result.kept += 1
        else:
            result.missed.append(f"skill file {key}")
    listed = {item.path for item in report.skipped if item.decision == "skipped_skill_file"}
    for key in source.get("skill_files_skipped", []):
        if not any(path.endswith(f"/{key}") for path in listed):
            result.missed.append(f"skill file {key} not listed as skipped")


def fidelity_table() -> tuple[list[str], list[SourceFidelity]]:
    spec = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))
    lines = [f"{'source':62s} {'kept':>9s} {'fidelity':>9s} {'leaked':>7s} {'unlisted':>9s}"]
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        for n, source in enumerate(spec["sources"]):
            try:
                result = measure(source, Path(scratch) / str(n))
            except Exception as error:  # a refused source keeps nothing: 0 %, and says why
                result = SourceFidelity(source["name"], wanted=len(source["keep"]))
                result.missed = [f"import refused: {type(error).__name__}: {str(error)[:160]}"]
            results.append(result)
            lines.append(
                f"{result.name:62s} {result.kept:>4d}/{result.wanted:<4d} {result.fidelity:>8.1%} "
                f"{len(result.leaked):>7d} {result.unlisted:>9d}"
            )
            lines += [f"    missed: {text}" for text in result.missed[:10]]
            if len(result.missed) > 10:
                lines.append(f"    ... {len(result.missed) - 10} more missed")
            lines += [f"    leaked: {text}" for text in result.leaked]
    return lines, results


def failures(results: list[SourceFidelity]) -> list[str]:
    found = []
    for result in results:
        if result.fidelity < TARGET:
            found.append(f"{result.name}: fidelity {result.fidelity:.1%} < {TARGET:.0%}")
        if result.leaked:
            found.append(f"{result.name}: {len(result.leaked)} dropped items stored")
        if result.unlisted:
            found.append(f"{result.name}: {result.unlisted} items not written and not listed in the report")
    return found
