"""Dreaming's report: the outcome of one sweep (`DreamReport`, what run.json holds) and `REPORT.md`,
its human-readable rendering."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .scoring import Outcome


@dataclass
class DreamReport:
    tenant: str
    namespace: str
    day: str
    run_id: str
    dry_run: bool
    status: str
    """completed | already_done"""
    as_of: str
    started_at: str
    finished_at: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    workload: dict[str, Any] = field(default_factory=dict)
    themes: list[dict[str, Any]] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    materialized: list[dict[str, Any]] = field(default_factory=list)
    maintenance: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds per phase (light, rem, deep, maintenance), for operations."""
    retention: dict[str, Any] = field(default_factory=dict)
    """What `.dreams/` retention did after the audit was written (days kept in full, days compacted)."""

    @property
    def promoted(self) -> list[Outcome]:
        return [outcome for outcome in self.outcomes if outcome.decision == "promoted"]

    def decisions(self) -> dict[str, tuple[str, str]]:
        """Candidate key → (decision, reason): what a dry run and a real run must agree on."""
        return {o.candidate.key: (o.decision, o.reason) for o in self.outcomes}

    def to_dict(self, *, limit: int | None = None) -> dict[str, Any]:
        outcomes = self.outcomes if limit is None else self.outcomes[:limit]
        return {
            "version": 1,
            "tenant": self.tenant,
            "namespace": self.namespace,
            "day": self.day,
            "run_id": self.run_id,
            "dry_run": self.dry_run,
            "status": self.status,
            "as_of": self.as_of,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "summary": self.summary,
            "timings": self.timings,
            "inputs": self.inputs,
            "workload": self.workload,
            "themes": self.themes,
            "candidates": [outcome.as_dict() for outcome in outcomes],
            "materialized": self.materialized,
            "maintenance": self.maintenance,
            "config": self.config,
        }


def summarize(report: DreamReport) -> dict[str, Any]:
    by_decision = Counter(outcome.decision for outcome in report.outcomes)
    return {
        "candidates": len(report.outcomes),
        "decisions": dict(sorted(by_decision.items())),
        "promoted": [
            {
                "key": o.candidate.key,
                "record_id": o.record_id,
                "memory_md": o.memory_md,
                "total": round(o.total, 4),
            }
            for o in report.promoted
        ],
        "materialized": len(report.materialized),
        "archived_by_forgetting": len(report.maintenance.get("forgetting", {}).get("archived", [])),
        "compacted_clusters": len(report.maintenance.get("compaction", {}).get("clusters", [])),
    }


# --------------------------------------------------------------------------- REPORT.md


def render_report(report: DreamReport, top: int) -> str:
    """The human-readable audit: what was read, what was promoted and why, what nearly made it."""
    lines = [
        f"# Dreaming report — {report.namespace} — {report.day}",
        "",
        f"Run `{report.run_id}`{' (dry run: nothing written)' if report.dry_run else ''}, as of {report.as_of}.",
        "",
        "## Inputs",
        "",
    ]
    inputs = report.inputs
    for log in inputs.get("daily_logs", []):
        lines.append(f"- `{log['path']}`: {log['extracted']} statements extracted, {log['skipped']} skipped")
    lines += [
        f"- short-term records: {inputs.get('short_term_records', 0)}; recalled long-term records: "
        f"{inputs.get('recalled_long_term_records', 0)}; recalls in {inputs.get('recall_window_days')} days: "
        f"{inputs.get('recalls', 0)}",
        f"- {inputs.get('raw_items', 0)} raw items → {inputs.get('candidates', 0)} candidates "
        f"({inputs.get('merged_duplicates', 0)} duplicates merged, {inputs.get('dropped_over_limit', 0)} over the limit)",
        "",
        "## Workload",
        "",
    ]
    lines += _workload_and_themes(report)
    lines += _decisions(report, top)
    maintenance = report.maintenance
    lines += ["", "## Maintenance", ""]
    if "forgetting" in maintenance:
        forgetting = maintenance["forgetting"]
        lines.append(
            f"- forgetting: {len(forgetting['archived'])} archived of {forgetting['examined']} examined"
        )
    if "compaction" in maintenance:
        compaction = maintenance["compaction"]
        lines.append(
            f"- compaction: {len(compaction['clusters'])} clusters merged of {compaction['examined']} records"
        )
    lines += [
        "",
        "Signals: frequency, relevance, diversity, recency, consolidation, conceptual (each 0–1); total adds the "
        "REM and workload bonuses. run.json holds every candidate.",
        "",
    ]
    return "\n".join(lines)


def _workload_and_themes(report: DreamReport) -> list[str]:
    lines: list[str] = []
    workload = report.workload
    if workload.get("cold_start"):
        lines.append(f"Cold start: {workload.get('recalls', 0)} recent recalls; default priorities used.")
    else:
        topics = ", ".join(f"{t['term']} ({t['share']:.0%})" for t in workload.get("top_topics", []))
        lines.append(f"{workload.get('recalls', 0)} recent recalls. Top topics: {topics or 'none'}.")
    lines += ["", "## Themes (REM)", ""]
    if report.themes:
        lines += [
            f"- {t['term']}: {t['days']} days, {t['items']} items, strength {t['strength']:.2f}"
            for t in report.themes
        ]
    else:
        lines.append("No recurring theme.")
    return lines


def _decisions(report: DreamReport, top: int) -> list[str]:
    promoted = [o for o in report.outcomes if o.decision == "promoted"]
    lines = ["", f"## Promoted ({len(promoted)})", ""]
    for outcome in promoted:
        lines.append(f"- **{_one_line(outcome.candidate.text)}** — {outcome.reason}")
        lines.append(f"  - {_signal_line(outcome)}")
        lines.append(f"  - provenance: {', '.join(outcome.candidate.refs[:5])}")
    others = [o for o in report.outcomes if o.decision != "promoted"][:top]
    lines += ["", f"## Not promoted (strongest {len(others)} of {len(report.outcomes) - len(promoted)})", ""]
    for outcome in others:
        lines.append(f"- {_one_line(outcome.candidate.text)} — **{outcome.decision}**: {outcome.reason}")
        lines.append(f"  - {_signal_line(outcome)}")
    return lines


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _signal_line(outcome: Outcome) -> str:
    values = " ".join(f"{name[:4]} {value:.2f}" for name, value in outcome.signals.as_dict().items())
    return (
        f"total {outcome.total:.3f} (base {outcome.base:.3f}, rem {outcome.reinforcement:.2f}, workload "
        f"{outcome.workload:.2f}); {values}; recalls {outcome.candidate.recall_count}, queries "
        f"{outcome.candidate.unique_queries}, age {outcome.age_days:.1f} d"
    )
