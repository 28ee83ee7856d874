"""Fixtures shared by every test suite."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests.iam import plugin as iam_plugin  # noqa: E402

# Property tests search the same examples on every run ("ci", the default), so a red run reproduces and a
# green one is not luck; HYPOTHESIS_PROFILE=explore searches anew each run (and a failure it finds becomes an
# @example). The fuzz suite fixes its own seed.
# Hypothesis's deadline and its "input generation is slow" health check are wall-clock limits: on a loaded
# 2-core host they fail tests whose behaviour is right, so neither applies (speed is measured in bench/).
_NO_CLOCK = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", _NO_CLOCK, derandomize=True, database=None)
settings.register_profile("explore", _NO_CLOCK, derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


class FixedClock:
    """A clock the test moves by hand (the domain only sees the Clock port)."""

    def __init__(self, start: datetime | None = None) -> None:
        self.current = start or datetime(2026, 11, 30, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.current

    def advance(self, **delta: float) -> datetime:
        self.current += timedelta(**delta)
        return self.current


class ShiftedClock:
    """The system clock plus an offset the test moves forward by hand: time passes as usual (for what runs in
    other threads or in moto) and a test can jump past a cache's lifetime instead of sleeping through it."""

    def __init__(self) -> None:
        self.offset = timedelta()

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset

    def advance(self, **delta: float) -> datetime:
        self.offset += timedelta(**delta)
        return self.now()


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture
def handler_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """`monkeypatch` for the variables the Lambda handlers read through `settings.handlers`, whose parsed
    values are cached: the cache is dropped before the test changes them and after it, so the next reader
    sees the restored environment."""
    from agent_memory.settings.handlers import get_handler_settings

    get_handler_settings.cache_clear()
    yield monkeypatch
    get_handler_settings.cache_clear()


# --------------------------------------------------------------------------- xdist: tests that share a worker

WORKER_GROUPS = {
    "tests/infra/": "cdk",  # the CDK's jsii kernel costs each process ~15 s of CPU before its first synth
    "tests/unit/test_docs_claims.py": "cdk",  # synthesizes the same templates (tests/iam/synth.py)
    "tests/browser/": "browser",  # one local server and one Chromium for the module
}
"""Node-id prefix → the group whose tests run on one xdist worker (`--dist loadgroup`)."""


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """`--dist loadgroup` with the groups above. xdist 3.8 groups by a `@group` suffix it appends to each
    node id, which pytest 9 no longer lets it set (node ids are structured), so its `xdist_group` marks are
    silently ignored; this scheduler groups by node-id prefix instead (and still honours a `@group` suffix)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class PrefixGroupScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            for prefix, group in WORKER_GROUPS.items():
                if nodeid.startswith(prefix):
                    return group
            return super()._split_scope(nodeid)

    return PrefixGroupScheduling(config, log)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the IAM contract (tests/iam)


def pytest_configure(config: pytest.Config) -> None:
    iam_plugin.configure(config)


def pytest_configure_node(node) -> None:  # xdist: the controller tells each worker where to write
    iam_plugin.configure_node(node)


def pytest_runtest_setup(item: pytest.Item) -> None:
    iam_plugin.runtest_setup(item)


def pytest_sessionfinish(session: pytest.Session) -> None:
    iam_plugin.session_finish(session)
