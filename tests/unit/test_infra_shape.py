"""The CDK app's shape (issue 31): the stack reads as the architecture diagram and stays short, every construct's
constructor fits on a screen (a construct that needs more splits its parts into methods or a construct of their
own), and the state-machine definitions live with the infrastructure, outside the function bundle: no module
the Lambda functions ship imports `infra`.

Read from the source (no synth): the bundle itself is checked in tests/infra/test_infra_bundling.py."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
FUNCTIONS = ROOT / "functions"
STACK = INFRA / "stacks" / "memory_stack.py"

MAX_STACK_LINES = 150
MAX_INIT_LINES = 60
INIT_ALLOWED: dict[str, tuple[int, str]] = {
    "stacks/memory_stack.py:MemoryStack": (
        110,
        "the composition root: its whole file is held to 150 lines instead, so the diagram (storage, functions, "
        "workflows, who may do what, API, alarms) reads top to bottom in one place",
    ),
}
"""`<path under infra/>:<class>` -> (most lines allowed, why)."""

CONSTRUCT_BASES = {"Construct", "Stack"}


def _constructors(root: Path) -> dict[str, int]:
    """`<path>:<class>` -> lines of its `__init__`, for every class under `root` that derives from a CDK
    construct (directly, by name)."""
    sizes: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
            if not bases & CONSTRUCT_BASES:
                continue
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    key = f"{path.relative_to(root).as_posix()}:{node.name}"
                    sizes[key] = (item.end_lineno or item.lineno) - item.lineno + 1
    return sizes


def _infra_imports(root: Path) -> list[str]:
    """Every import of `infra` (or of the old `agent_memory.workflows`) in the modules under `root`."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            modules: list[str] = []
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            found += [
                f"{path.relative_to(root)}:{node.lineno} imports {module}"
                for module in modules
                if module.split(".")[0] == "infra" or module.startswith("agent_memory.workflows")
            ]
    return found


def test_the_stack_file_stays_a_diagram() -> None:
    lines = len(STACK.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_STACK_LINES, (
        f"{STACK.relative_to(ROOT)} has {lines} lines (at most {MAX_STACK_LINES}): move a resource and its grants "
        "into the construct that owns it (a `grant_*` method), not into the stack"
    )


def test_every_construct_constructor_fits_on_a_screen() -> None:
    sizes = _constructors(INFRA)
    assert "constructs/network.py:Network" in sizes and "stacks/memory_stack.py:MemoryStack" in sizes
    too_long = {
        key: lines for key, lines in sizes.items() if lines > INIT_ALLOWED.get(key, (MAX_INIT_LINES, ""))[0]
    }
    assert too_long == {}, (
        f"construct __init__ over {MAX_INIT_LINES} lines: {too_long}; split its parts into methods or constructs"
    )


def test_the_allow_list_names_only_constructors_that_need_it() -> None:
    sizes = _constructors(INFRA)
    stale = [key for key in INIT_ALLOWED if sizes.get(key, 0) <= MAX_INIT_LINES]
    assert stale == [], f"no longer over {MAX_INIT_LINES} lines (or gone): drop {stale} from INIT_ALLOWED"


def test_the_size_check_sees_a_long_constructor(tmp_path: Path) -> None:
    body = "\n".join(f"        self.x{i} = {i}" for i in range(MAX_INIT_LINES))
    (tmp_path / "sample.py").write_text(
        f"class Big(Construct):\n    def __init__(self) -> None:\n{body}\n", encoding="utf-8"
    )
    assert _constructors(tmp_path) == {"sample.py:Big": MAX_INIT_LINES + 1}


def test_the_workflow_definitions_live_outside_the_function_package() -> None:
    assert (INFRA / "workflows" / "dreaming_asl.py").is_file()
    shipped = sorted(p.relative_to(FUNCTIONS).as_posix() for p in FUNCTIONS.rglob("*_asl.py"))
    assert shipped == []
    assert not (FUNCTIONS / "agent_memory" / "workflows").exists()


def test_no_function_module_imports_infrastructure_code() -> None:
    assert _infra_imports(FUNCTIONS) == []


def test_the_import_check_sees_an_infra_import(tmp_path: Path) -> None:
    (tmp_path / "handler.py").write_text(
        "from infra.workflows._asl import StepLoop\nimport infra.config\nfrom .paging import PAGE_TARGETS\n",
        encoding="utf-8",
    )
    assert [line.split(" imports ")[1] for line in _infra_imports(tmp_path)] == [
        "infra.workflows._asl",
        "infra.config",
    ]
