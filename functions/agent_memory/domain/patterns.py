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

    # The write path calls these ~500 times per remember: direct methods instead of `__getattr__` alone, which
    # Python reaches only after a failed normal lookup (1.1M calls cost 1.7 s of a 2,000-turn import).
    def search(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> re.Match[str] | None:
        return self.compiled.search(string, pos, endpos)

    def match(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> re.Match[str] | None:
        return self.compiled.match(string, pos, endpos)

    def fullmatch(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> re.Match[str] | None:
        return self.compiled.fullmatch(string, pos, endpos)

    def sub(self, repl: Any, string: str, count: int = 0) -> str:
        return self.compiled.sub(repl, string, count)

    def finditer(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> Any:
        return self.compiled.finditer(string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> list[Any]:
        return self.compiled.findall(string, pos, endpos)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.compiled, name)

    def __repr__(self) -> str:
        return f"LazyPattern({self._source!r}, {self._flags})"


def lazy(pattern: str, flags: int = 0) -> LazyPattern:
    return LazyPattern(pattern, flags)
