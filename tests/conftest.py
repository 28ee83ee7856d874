"""Fixtures shared by every test suite."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest


class FixedClock:
    """A clock the test moves by hand (the domain only sees the Clock port)."""

    def __init__(self, start: datetime | None = None) -> None:
        self.current = start or datetime(2026, 11, 30, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.current

    def advance(self, **delta: float) -> datetime:
        self.current += timedelta(**delta)
        return self.current


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()
