"""The Lambda entry points. Each handler module imports the service's own modules inside `initialization()`,
and wraps each entry point in `request_scoped` (outermost)."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from aws_lambda_powertools.middleware_factory import lambda_handler_decorator

from ..domain import memo


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


@lambda_handler_decorator
def request_scoped(handler: Callable[..., Any], event: Any, context: Any) -> Any:
    """A Powertools middleware on every Lambda entry point: the invocation, then the domain's request-scoped
    memos (`domain/memo.py`) emptied, also when it raised, so no memory's text outlives the invocation in a
    warm container (`tests/unit/test_memo_entry_points.py` calls each deployed handler)."""
    try:
        return handler(event, context)
    finally:
        memo.clear_all()
