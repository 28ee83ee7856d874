"""What a curator run leaves behind: the run's report (`.curator/<day>/run.json`, read back for an idempotent
second run) and its Markdown rendering (`REPORT.md`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..files.memory_files import CURATOR_DIR
from .curator_rules import Action, Decision


@dataclass
class CuratorReport:
    tenant: str
    namespace: str
    day: str
    run_id: str
    dry_run: bool
    status: str
    """completed | already_done"""
    started_at: str
    config: dict[str, Any]
    decisions: list[Decision] = field(default_factory=list)
    proposals: list[dict[str, Any]] = field(default_factory=list)
    unreadable: list[dict[str, str]] = field(default_factory=list)
    review: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def summary(self) -> dict[str, int]:
        counts: dict[str, int] = {"skills": len(self.decisions), "unreadable": len(self.unreadable)}
        for decision in self.decisions:
            counts[decision.action.value] = counts.get(decision.action.value, 0) + 1
        counts["applied"] = sum(1 for d in self.decisions if d.applied)
        counts["proposals"] = len(self.proposals)
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "namespace": self.namespace,
            "day": self.day,
            "run_id": self.run_id,
            "dry_run": self.dry_run,
            "status": self.status,
            "started_at": self.started_at,
            "seconds": round(self.seconds, 3),
            "config": self.config,
            "summary": self.summary,
            "decisions": [d.as_dict() for d in self.decisions],
            "proposals": self.proposals,
            "unreadable": self.unreadable,
            "review": self.review,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, status: str) -> CuratorReport:
        decisions = [
            Decision(
                name=str(d["name"]),
                provenance=str(d["provenance"]),
                status=str(d["status"]),
                action=Action(d["action"]),
                reason=str(d["reason"]),
                inputs=dict(d.get("inputs") or {}),
                verdict=Action(d.get("verdict", d["action"])),
                applied=bool(d.get("applied")),
                error=str(d.get("error", "")),
            )
            for d in data.get("decisions", [])
        ]
        return cls(
            tenant=str(data["tenant"]),
            namespace=str(data["namespace"]),
            day=str(data["day"]),
            run_id=str(data["run_id"]),
            dry_run=bool(data.get("dry_run")),
            status=status,
            started_at=str(data.get("started_at", "")),
            config=dict(data.get("config") or {}),
            decisions=decisions,
            proposals=list(data.get("proposals") or []),
            unreadable=list(data.get("unreadable") or []),
            review=dict(data.get("review") or {}),
            seconds=float(data.get("seconds") or 0.0),
        )


def render_report(report: CuratorReport) -> str:
    """REPORT.md: what changed and why, what was only reported, and the proposals waiting for a person."""
    mode = "dry run: nothing was changed" if report.dry_run else "changes applied"
    lines = [
        f"# Curator report {report.namespace} {report.day}",
        "",
        f"Run `{report.run_id}` ({mode}); {len(report.decisions)} skills judged in {report.seconds:.2f} s.",
        "",
        "| decision | count |",
        "| --- | --- |",
    ]
    lines += [f"| {key} | {value} |" for key, value in sorted(report.summary.items())]
    sections = (
        ("Changed", [d for d in report.decisions if d.new_status]),
        (
            "Reported only (human, imported or pinned)",
            [d for d in report.decisions if d.action is Action.REPORT],
        ),
        ("Kept", [d for d in report.decisions if d.action is Action.KEEP]),
    )
    for title, decisions in sections:
        lines += ["", f"## {title} [{len(decisions)}]"]
        for d in decisions:
            move = f"{d.status} → {d.new_status}" if d.new_status else d.status
            state = "" if not d.new_status else (" (applied)" if d.applied else " (not applied)")
            error = f" — {d.error}" if d.error else ""
            lines.append(f"- `{d.name}` [{d.provenance}] {move}{state}: {d.reason}{error}")
    lines += ["", f"## Proposals [{len(report.proposals)}]"]
    if report.review.get("note"):
        lines.append(str(report.review["note"]))
    for proposal in report.proposals:
        skills = ", ".join(f"`{s}`" for s in proposal["skills"])
        lines.append(f"- `{proposal['id']}` {proposal['kind']} {skills}: {proposal['reason']}")
    if report.proposals:
        lines += [
            "",
            "Accept one with `agent-memory skills accept <id> --day DAY` or POST /v1/admin/curator/accept.",
        ]
    if report.unreadable:
        lines += ["", f"## Unreadable [{len(report.unreadable)}]"]
        lines += [f"- `{u['name']}`: {u['error']}" for u in report.unreadable]
    return "\n".join(lines) + "\n"


def day_path(day: str, name: str) -> str:
    return f"{CURATOR_DIR}/{day}/{name}"
