"""The real clock (the domain only sees the Clock port, so tests can pin time)."""

from __future__ import annotations

from datetime import UTC, datetime


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)
