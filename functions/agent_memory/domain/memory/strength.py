"""Strength and forgetting: predictable decay (DESIGN §2 "Strength")."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from ..records import MemoryRecord, Status


def hours_between(earlier: datetime, later: datetime) -> float:
    return max(0.0, (later - earlier).total_seconds() / 3600.0)


def decay(hours: float, half_life_hours: float) -> float:
    """0.5 ^ (hours / half_life): 1.0 now, 0.5 after one half-life."""
    return math.pow(0.5, hours / half_life_hours)


def strength(record: MemoryRecord, now: datetime) -> float:
    """score × 0.5 ^ (hours since last access / half_life_hours)."""
    return record.score * decay(hours_between(record.last_access_at, now), record.half_life_hours)


def is_decayed(record: MemoryRecord, now: datetime, *, below: float, unused_days: float) -> bool:
    """An active record is archived by the forgetting job when it is both weak and unused for long enough.
    Requiring both keeps a rarely-read but important record (high score, long half-life) alive."""
    if record.status is not Status.ACTIVE:
        return False
    unused_for = now - record.last_access_at
    return unused_for >= timedelta(days=unused_days) and strength(record, now) < below
