"""tools/house_numbers.py (issue 31's numbers) reads the tree: one assembly site per Lambda function, the touches
docs/architecture.md lists, and the stack's size within its budget."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("house_numbers", ROOT / "tools" / "house_numbers.py")
assert _spec is not None and _spec.loader is not None
numbers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(numbers)


def test_each_deployed_function_takes_its_graph_from_one_builder() -> None:
    sites = numbers.assembly_sites()
    assert set(sites) >= {
        "api",
        "authorizer",
        "chat",
        "console",
        "dreaming",
        "files",
        "jobs",
        "job_worker",
        "migration",
    }
    assert sites["console"][1] == []  # the console builds nothing
    assert {module: builders for module, (_, builders) in sites.items() if module != "console"} == {
        "api": ["build_api"],
        "authorizer": ["build_authorizer"],
        "chat": ["build_chat"],
        "dreaming": ["build_worker"],  # with the curator and purge task tables it gathers
        "files": ["build_file_server"],
        "jobs": ["build_jobs"],
        "job_worker": ["build_job_worker"],
        "migration": ["build_backfill"],
    }


def test_the_touches_are_those_the_architecture_page_lists_and_each_but_a_service_takes_three() -> None:
    touches = numbers.touches()
    assert set(touches) == {"A route", "A service", "An adapter", "A workflow"}
    assert touches["A route"] <= 3  # routers discovered (api/app.route_modules), the README table a summary
    assert touches["A workflow"] <= 3
    assert (
        touches["An adapter"] <= 3
    )  # its table, bucket or queue is declared (agent_memory.settings.resources)
    assert touches["A service"] == touches["A route"] + 1  # the route's, and its wiring


def test_the_touches_are_read_from_the_numbered_items_of_each_entry(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "architecture.md").write_text(
        "## Where to add things\n\n**A route** (x):\n1. a;\n2. b\n   c;\n\n"
        "**An adapter** (y):\n1. a;\n   - not counted;\n2. b.\n\n## Next\n\n**A workflow**:\n1. x\n"
    )
    try:
        numbers.use(tmp_path)
        assert numbers.touches() == {"A route": 2, "An adapter": 2}
    finally:
        numbers.use(ROOT)


def test_sizes_are_measured_from_the_syntax_tree() -> None:
    rows = {
        package: (file, lines, function, span) for package, file, lines, function, span in numbers.largest()
    }
    assert {"agent_memory/domain", "agent_memory/wiring", "infra"} <= set(rows)
    _, _, function, span = rows["agent_memory/domain"]
    assert span <= 60, function  # the layering test's limit for the domain
    class_lines, file_lines = numbers.stack_lines()
    assert class_lines <= file_lines <= 150
