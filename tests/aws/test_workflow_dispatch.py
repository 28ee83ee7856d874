"""The dreaming function's task table is derived from the workflow declarations (agent_memory.settings.workflows):
it dispatches the tasks of every workflow it hosts (the unit suite has no sockets for the X-Ray emitter the
handler module builds)."""

from __future__ import annotations

from agent_memory.settings.workflows import hosted_by


def test_the_dreaming_function_dispatches_the_tasks_of_every_workflow_it_hosts() -> None:
    from importlib import import_module

    from agent_memory.handlers import dreaming

    assert {w.name for w in hosted_by("dreaming")} == {"curator", "purge"}
    for workflow in hosted_by("dreaming"):
        tasks = import_module(f"agent_memory.handlers.{workflow.tasks}").TASKS
        assert tasks and all(dreaming.TASKS[name] is task for name, task in tasks.items())
