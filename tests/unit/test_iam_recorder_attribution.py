"""The IAM contract's recorder names the function making an AWS call by the outermost handler module on the
stack; the handlers package's shared wrappers (`request_scoped` in `handlers/__init__.py`, `_runtime`) wrap
every entry point and so are outermost, but are no function of the stack."""

from __future__ import annotations

from typing import Any

from tests.iam import recorder

_ROOT = "/srv/functions/agent_memory"


def _called_through(*modules: str) -> dict[str, Any] | None:
    """`recorder._attribute` as seen from a call made inside `modules`, outermost first."""
    namespace: dict[str, Any] = {"attribute": lambda: recorder._attribute(None)}
    # innermost: a product adapter making the call (the recorder looks two frames up from its own caller)
    source = "def call():\n    return hop()\n\ndef hop():\n    return attribute()\n"
    exec(compile(source, f"{_ROOT}/adapters/aws/store.py", "exec"), namespace)
    inner = namespace["call"]
    for module in reversed(modules):
        wrapper: dict[str, Any] = {"inner": inner}
        exec(compile("def call():\n    return inner()\n", f"{_ROOT}/handlers/{module}.py", "exec"), wrapper)
        inner = wrapper["call"]
    return inner()


def test_the_wrapper_in_the_package_init_is_not_the_function() -> None:
    found = _called_through("__init__", "api")
    assert found is not None and found["function"] == "api"


def test_the_runtime_module_is_not_the_function_either() -> None:
    found = _called_through("_runtime", "__init__", "job_worker")
    assert found is not None and found["function"] == "job_worker"
