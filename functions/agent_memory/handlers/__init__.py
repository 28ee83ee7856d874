"""The Lambda entry points. Each handler module imports the service's own modules inside `initialization()`."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def initialization() -> Iterator[None]:
    """The cyclic garbage collector paused while a handler imports the service's modules, and what they
    created frozen afterwards.

    An import creates thousands of long-lived objects (classes, functions, pydantic fields) and almost no
    garbage, yet their count triggers a full collection that walks all of them: 30-40 ms of every cold start
    (bench/cold_start.py, -X importtime). `gc.freeze()` then moves them to the permanent generation, so that
    full pass does not simply happen on the first request instead. Only the outermost use acts."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
