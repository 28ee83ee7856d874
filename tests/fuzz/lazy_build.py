"""Schemathesis builds each operation's Hypothesis test when pytest collects it, and with the coverage phase
that build generates every coverage case of the operation (most of the suite's cases): with coverage measurement
on, collecting tests/fuzz took 16 s of CPU, 8 s of it this, paid by every xdist worker, because each collects
every item although only one runs it. `install()` has the test built at its first call instead, on the worker that runs
it, once: the test, its cases, their order and its failures are the same (a definition Schemathesis cannot
build fails the test when it runs rather than when it is collected)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from schemathesis.core.marks import METADATA_ATTR
from schemathesis.pytest import _test_builder

EAGER = _test_builder.build_operation_test
"""Schemathesis' own builder (what `build_lazily` calls at the test's first call)."""


def build_lazily(**arguments: Any) -> Callable[..., Any]:
    """`build_operation_test`'s stand-in: a function with the built test's signature (the test function's
    parameters without the generated `case` and any `given` ones, so pytest resolves the same fixtures) that
    builds the test at its first call, takes on the marks Schemathesis attached to it (the plugin reads them
    around the call) and runs it."""
    test_func = arguments["test_func"]
    generated = {"case", *arguments["given_kwargs"]}
    signature = inspect.signature(test_func)
    expected = signature.replace(
        parameters=[p for name, p in signature.parameters.items() if name not in generated]
    )
    built: list[Callable[..., Any]] = []

    def lazy(*args: Any, **kwargs: Any) -> Any:
        if not built:
            test = EAGER(**arguments)
            if list(inspect.signature(test).parameters) != list(expected.parameters):
                raise RuntimeError(
                    f"Schemathesis built {test_func.__name__} with the parameters {inspect.signature(test)}, not "
                    f"{expected}: tests/fuzz/lazy_build.py no longer matches this Schemathesis"
                )
            if hasattr(test, METADATA_ATTR):
                setattr(lazy, METADATA_ATTR, getattr(test, METADATA_ATTR))
            built.append(test)
        return built[0](*args, **kwargs)

    lazy.__signature__ = expected  # type: ignore[attr-defined]
    lazy.__name__ = test_func.__name__
    lazy.__qualname__ = test_func.__qualname__
    lazy.__module__ = test_func.__module__
    lazy.__doc__ = test_func.__doc__
    return lazy


def install() -> None:
    """Every `schema.parametrize()` test collected from now on is built at its first call (the plugin imports
    `build_operation_test` from its module at each collection)."""
    _test_builder.build_operation_test = build_lazily  # type: ignore[assignment]
