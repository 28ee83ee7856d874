"""A skill's usage and outcome signals (`skills/<name>/signals.json`): view and use counters, the last use,
outcome counters and the last outcomes in detail. The curator judges skills by them (`curator_rules.py`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from .document import MalformedSkill


class Outcome(StrEnum):
    HELPED = "helped"
    FAILED = "failed"
    MISLED = "misled"


BAD_OUTCOMES = frozenset({Outcome.FAILED, Outcome.MISLED})


@dataclass(frozen=True)
class OutcomeReport:
    at: datetime
    outcome: Outcome
    actor: str
    note: str
    version: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "at": self.at.isoformat(),
            "outcome": self.outcome.value,
            "actor": self.actor,
            "note": self.note,
            "version": self.version,
        }


@dataclass(frozen=True)
class Signals:
    """What `signals.json` holds: counters for ever, the last outcomes in detail."""

    views: int = 0
    uses: int = 0
    last_used_at: datetime | None = None
    outcomes: dict[str, int] = field(default_factory=dict)
    recent: tuple[OutcomeReport, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "views": self.views,
            "uses": self.uses,
            "last_used_at": self.last_used_at.isoformat() if self.last_used_at else None,
            "outcomes": {o.value: self.outcomes.get(o.value, 0) for o in Outcome},
            "recent": [report.as_dict() for report in self.recent],
        }

    @classmethod
    def from_text(cls, text: str | None, path: str) -> Signals:
        if not text or not text.strip():
            return cls()
        try:
            data = json.loads(text)
            recent = tuple(
                OutcomeReport(
                    at=_aware(item["at"]),
                    outcome=Outcome(item["outcome"]),
                    actor=str(item.get("actor", "")),
                    note=str(item.get("note", "")),
                    version=int(item.get("version", 0)),
                )
                for item in data.get("recent", [])
            )
            last = data.get("last_used_at")
            return cls(
                views=int(data.get("views", 0)),
                uses=int(data.get("uses", 0)),
                last_used_at=_aware(last) if last else None,
                outcomes={str(k): int(v) for k, v in (data.get("outcomes") or {}).items()},
                recent=recent,
            )
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            raise MalformedSkill(
                f"{path} is not a valid signals file ({error}); fix or remove it", path=path
            ) from None


def _aware(value: str) -> datetime:
    moment = datetime.fromisoformat(value)
    if moment.utcoffset() is None:
        raise ValueError(f"{value!r} has no time zone")
    return moment
