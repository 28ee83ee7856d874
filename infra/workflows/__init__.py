"""Infrastructure-independent workflow definitions (Amazon States Language as data) for the CDK to deploy, and
each one's deployment (`WORKFLOW` in `<name>_asl.py`), gathered for every workflow `agent_memory.settings.workflows`
declares."""

from __future__ import annotations

from importlib import import_module

from agent_memory.settings.workflows import WORKFLOWS as DECLARED

from .spec import WorkflowSpec


def workflow_specs() -> tuple[WorkflowSpec, ...]:
    """The deployment of each declared workflow, in declaration order (`infra.workflows.<name>_asl.WORKFLOW`)."""
    specs = []
    for declared in DECLARED:
        spec = import_module(f"{__name__}.{declared.name}_asl").WORKFLOW
        if not isinstance(spec, WorkflowSpec) or spec.runtime != declared:
            raise TypeError(
                f"infra/workflows/{declared.name}_asl.py must declare WORKFLOW for {declared.name}"
            )
        specs.append(spec)
    return tuple(specs)
