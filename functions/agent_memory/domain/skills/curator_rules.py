"""The curator's rule path (DESIGN §2 "Curator"): the decision for one skill from its status, its judgement
window's outcomes and its idleness, with the reason and the inputs that led to it. Pure: `curator.py` applies
the decisions, `curator_report.py` writes them down."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from .config import CuratorConfig
from .document import Provenance, SkillMeta, SkillStatus
from .signals import BAD_OUTCOMES, Outcome, Signals

_DAY_SECONDS = 86_400.0


class Action(StrEnum):
    KEEP = "keep"
    STALE = "stale"
    ARCHIVE = "archive"
    REACTIVATE = "reactivate"
    REPORT = "report_only"
    """Human, imported or pinned: the rules' verdict is reported, nothing is changed."""


TARGET: dict[Action, SkillStatus] = {
    Action.STALE: SkillStatus.STALE,
    Action.ARCHIVE: SkillStatus.ARCHIVED,
    Action.REACTIVATE: SkillStatus.ACTIVE,
}


@dataclass(frozen=True)
class Decision:
    name: str
    provenance: str
    status: str
    action: Action
    reason: str
    inputs: dict[str, Any]
    verdict: Action = Action.KEEP
    """What the rules say regardless of provenance and pinning (equal to `action` for governed skills)."""
    applied: bool = False
    error: str = ""

    @property
    def new_status(self) -> str | None:
        target = TARGET.get(self.action)
        return target.value if target else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "provenance": self.provenance,
            "status": self.status,
            "action": self.action.value,
            "verdict": self.verdict.value,
            "new_status": self.new_status,
            "reason": self.reason,
            "inputs": self.inputs,
            "applied": self.applied,
            "error": self.error,
        }


def decide(meta: SkillMeta, signals: Signals, now: datetime, config: CuratorConfig) -> Decision:
    """The rule path's decision for one skill (pure)."""
    since = meta.status_since
    window = [r for r in signals.recent if r.at >= since]
    counts = {o.value: sum(1 for r in window if r.outcome is o) for o in Outcome}
    total = len(window)
    bad = sum(1 for r in window if r.outcome in BAD_OUTCOMES)
    share = bad / total if total else 0.0
    dominated = total >= config.min_outcomes and share >= config.bad_share
    last_used = signals.last_used_at
    activity = max(since, last_used) if last_used else since
    idle_days = max(0.0, (now - activity).total_seconds() / _DAY_SECONDS)
    days_in_status = max(0.0, (now - since).total_seconds() / _DAY_SECONDS)
    used_since = last_used is not None and last_used > since
    inputs: dict[str, Any] = {
        "version": meta.version,
        "pinned": meta.pinned,
        "status_since": since.isoformat(),
        "last_used_at": last_used.isoformat() if last_used else None,
        "idle_days": round(idle_days, 2),
        "days_in_status": round(days_in_status, 2),
        "outcomes_in_window": counts,
        "bad_share": round(share, 3),
        "bad_outcomes_dominate": dominated,
    }
    verdict, reason = _rules(
        meta.status, dominated, idle_days, days_in_status, used_since, bad, total, share, config
    )
    action = verdict
    if meta.provenance is not Provenance.AGENT:
        action = Action.REPORT
        reason = f"{meta.provenance.value} skill: reported, never changed by the curator (rules: {reason})"
    elif meta.pinned:
        action = Action.REPORT
        reason = f"pinned: never changed by the curator (rules: {reason})"
    return Decision(meta.name, meta.provenance.value, meta.status.value, action, reason, inputs, verdict)


def _rules(
    status: SkillStatus,
    dominated: bool,
    idle_days: float,
    days_in_status: float,
    used_since: bool,
    bad: int,
    total: int,
    share: float,
    config: CuratorConfig,
) -> tuple[Action, str]:
    outcomes = f"{bad} of {total} outcomes failed or misled ({share:.0%} ≥ {config.bad_share:.0%})"
    if status is SkillStatus.ARCHIVED:
        return Action.KEEP, "archived: stays archived until a person restores it"
    if status is SkillStatus.ACTIVE:
        if dominated:
            return Action.STALE, f"bad outcomes dominate: {outcomes}"
        if idle_days >= config.stale_after_days:
            return (
                Action.STALE,
                f"not viewed or used for {idle_days:.0f} days (≥ {config.stale_after_days:g})",
            )
        return Action.KEEP, f"in use: last activity {idle_days:.0f} days ago, outcomes do not dominate bad"
    if used_since and not dominated:
        return Action.REACTIVATE, "used again since it went stale, and bad outcomes do not dominate"
    if days_in_status >= config.archive_after_days:
        return Action.ARCHIVE, f"stale for {days_in_status:.0f} days (≥ {config.archive_after_days:g})"
    left = config.archive_after_days - days_in_status
    return Action.KEEP, f"stale for {days_in_status:.0f} days; archived in {left:.0f} more unless used"
