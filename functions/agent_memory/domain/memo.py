"""Request-scoped memos: what the domain derives from a text (its words, terms, dates, frames, traits) is kept
for the rest of one request or job, then dropped by `clear_all()`, so no memory's content outlives the request
in a long-lived process (a purge runs in another process, the job worker locally or the purge Lambda in AWS,
and cannot reach this one's caches).

Every memo of the domain is made here (`@memo(maxsize)`) and registered in `MEMOS`, so one call clears them
all. The entry points call `clear_all()` when a request or a job ends: the local server per request
(`local_server.ServerGuard`), every Lambda handler (`handlers.request_scoped`, in the package's
`__init__`), each CLI command, the local job worker after each job, and the purge at its end in the process
that ran it.

A memo is a plain dict from the arguments to the value, bounded by `maxsize` (the oldest entry goes first),
and the functions memoised are pure. Requests of the threaded local server share the memos and one request's
`clear_all()` can empty them while another runs: that costs the other request cache misses, never a wrong
result, since a value is only ever the function of its arguments (`tests/unit/test_memo.py`).

`tests/unit/test_memo.py` fails on a `functools.lru_cache` in `domain/` that is not in its short allow-list
(caches of the code's own constants, never of content): a new one must be a memo."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import suppress
from functools import update_wrapper
from typing import Any, ParamSpec, TypeVar, cast

P = ParamSpec("P")
R = TypeVar("R")

_MISSING = object()


class Memo:
    """One memoised function's entries (arguments → value), as registered in `MEMOS`."""

    __slots__ = ("entries", "maxsize", "name")

    def __init__(self, name: str, maxsize: int) -> None:
        if maxsize < 1:
            raise ValueError("a memo holds at least one entry")
        self.name = name
        self.maxsize = maxsize
        self.entries: dict[tuple[Any, ...], Any] = {}

    def clear(self) -> None:
        self.entries.clear()

    def __len__(self) -> int:
        return len(self.entries)

    def items(self) -> Iterator[tuple[tuple[Any, ...], Any]]:
        """A snapshot of the entries (tests inspect what a memo holds)."""
        return iter(list(self.entries.items()))


MEMOS: dict[str, Memo] = {}
"""Every memo of the process, by the qualified name of its function."""


def memo(maxsize: int) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Memoise a pure function of hashable positional arguments for the current request (see the module)."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        name = f"{function.__module__}.{function.__qualname__}"
        held = MEMOS.setdefault(name, Memo(name, maxsize))
        entries = held.entries
        get, call = entries.get, cast(Callable[..., Any], function)

        def memoised(*args: Any) -> Any:
            value = get(args, _MISSING)
            if value is _MISSING:
                value = call(*args)
                if len(entries) >= maxsize:
                    drop_oldest(entries)
                entries[args] = value
            return value

        update_wrapper(memoised, function)
        return cast(Callable[P, R], memoised)

    return decorate


def drop_oldest(entries: dict[tuple[Any, ...], Any]) -> None:
    """The oldest entry out (dicts keep insertion order). Another thread may clear or fill the dict at the same
    moment: whatever it did, this only decides which entries are kept, never what a value is."""
    with suppress(KeyError, StopIteration, RuntimeError):
        del entries[next(iter(entries))]


def clear_all() -> int:
    """Empty every memo; how many entries were dropped. Called at the end of every request and job."""
    dropped = 0
    for held in list(MEMOS.values()):
        dropped += len(held.entries)
        held.entries.clear()
    return dropped
