"""Regular expressions compiled on first use.

The write-path scanners (safety, classifier, contradiction) hold about 180 patterns. Compiled at import, they
cost roughly 50 ms of every Lambda cold start (bench/cold_start.py), although reads never run them. The
standard library has no deferred compile, hence this small wrapper."""

from __future__ import annotations

import re
from typing import Any


class LazyPattern:
    """Behaves as `re.compile(pattern, flags)`; the compile happens on the first attribute access (two threads
    racing there compile the same pattern twice, which is harmless)."""

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._source = pattern
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return self._compiled

    def __getattr__(self, name: str) -> Any:
        return getattr(self.compiled, name)

    def __repr__(self) -> str:
        return f"LazyPattern({self._source!r}, {self._flags})"


def lazy(pattern: str, flags: int = 0) -> LazyPattern:
    return LazyPattern(pattern, flags)
