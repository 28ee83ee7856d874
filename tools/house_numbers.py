"""The numbers issue 31 ("a house a newcomer can live in") tracks, read from the tree (AST, not guesses):

- per package (each entry of `functions/agent_memory/`, and `infra/`): its largest file (lines) and its largest
  function (lines from `def` to its last line, methods and nested functions counted on their own, as
  tests/unit/test_layering.py measures them);
- the assembly sites: for each Lambda function the stack deploys (its handler string in `infra/`), the
  `wiring/process.py` slot its handler modules take their graph from and the `wiring/aws.py` builder that
  slot calls;
- the touches to add a route, a service (a new wing's), an adapter (on an existing resource or a declared
  table, bucket or queue) and a workflow, as docs/architecture.md lists them;
- the stack class's line count (`infra/stacks/memory_stack.py`, budget 150).

    .venv/bin/python tools/house_numbers.py [checkout]
"""

from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
"""The checkout measured: this one, or the one given (`tools/house_numbers.py /path/to/other/checkout`)."""
PACKAGE = ROOT / "functions" / "agent_memory"
INFRA = ROOT / "infra"


def use(root: Path) -> None:
    global ROOT, PACKAGE, INFRA
    ROOT = root.resolve()
    PACKAGE, INFRA = ROOT / "functions" / "agent_memory", ROOT / "infra"


HANDLER = re.compile(r"^agent_memory\.handlers\.(\w+)\.\w+$")


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _functions(path: Path) -> Iterator[tuple[str, int]]:
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.name, (node.end_lineno or node.lineno) - node.lineno + 1


def _packages() -> dict[str, list[Path]]:
    packages: dict[str, list[Path]] = {}
    for entry in sorted(PACKAGE.iterdir()):
        if entry.is_dir() and (entry / "__init__.py").exists():
            packages[f"agent_memory/{entry.name}"] = sorted(entry.rglob("*.py"))
        elif entry.suffix == ".py" and entry.stem != "__init__":
            packages.setdefault("agent_memory (top-level modules)", []).append(entry)
    packages["infra"] = sorted(INFRA.rglob("*.py"))
    return packages


def largest() -> list[tuple[str, str, int, str, int]]:
    """(package, largest file, its lines, largest function `file:name`, its lines) per package."""
    rows = []
    for package, files in _packages().items():
        sized = [(len(f.read_text(encoding="utf-8").splitlines()), f) for f in files]
        lines, biggest = max(sized)
        functions = [(n, f"{f.relative_to(ROOT)}:{name}") for f in files for name, n in _functions(f)]
        span, where = max(functions) if functions else (0, "-")
        rows.append((package, str(biggest.relative_to(ROOT)), lines, where, span))
    return rows


def assembly_sites() -> dict[str, tuple[str, list[str]]]:
    """Lambda handler module -> (the handler strings naming it in infra/, the `build_*` its slots call)."""
    named: dict[str, set[str]] = defaultdict(set)
    for path in INFRA.rglob("*.py"):
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                match = HANDLER.match(node.value)
                if match:
                    named[match.group(1)].add(node.value)
    process = _tree(PACKAGE / "wiring" / "process.py")
    builders_of: dict[str, list[str]] = {}
    for node in process.body:
        if isinstance(node, ast.FunctionDef):
            builders_of[node.name] = [
                call.func.id
                for call in ast.walk(node)
                if isinstance(call, ast.Call)
                and isinstance(call.func, ast.Name)
                and call.func.id.startswith("build_")
            ]
    slots: dict[str, list[str]] = {}
    for node in process.body:
        if isinstance(node, ast.AnnAssign | ast.Assign) and isinstance(node.value, ast.Call):
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
            arguments = node.value.args
            if isinstance(target, ast.Name) and arguments and isinstance(arguments[0], ast.Name):
                slots[target.id] = builders_of.get(arguments[0].id, [])
    sites: dict[str, tuple[str, list[str]]] = {}
    for module, handlers in sorted(named.items()):
        used = _slots_used(PACKAGE / "handlers" / f"{module}.py", set(slots))
        builders = sorted({b for slot in used for b in slots[slot]})
        sites[module] = (", ".join(sorted(handlers)), builders)
    return sites


def _slots_used(path: Path, slots: set[str], seen: set[Path] | None = None) -> set[str]:
    """`process.<SLOT>` names a handler module reads, with those of the handler modules it imports (a task
    table of another module runs in the same function)."""
    seen = seen if seen is not None else set()
    if path in seen or not path.exists():
        return set()
    seen.add(path)
    used = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr in slots:
            used |= {node.attr} if node.value.id == "process" else set()
        if isinstance(node, ast.ImportFrom) and node.module == "wiring.process":
            used |= {alias.name for alias in node.names if alias.name in slots}
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            used |= _slots_used(path.parent / f"{node.module}.py", slots, seen)
    if path.stem == "dreaming":  # the task tables it gathers from agent_memory.settings.workflows
        for hosted in _hosted_task_modules():
            used |= _slots_used(path.parent / f"{hosted}.py", slots, seen)
    return used


def _hosted_task_modules() -> list[str]:
    """The `tasks=` modules of the workflow declarations (none in a checkout without them)."""
    path = PACKAGE / "settings" / "workflows.py"
    if not path.exists():
        return []
    return [
        keyword.value.value
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.Call)
        for keyword in node.keywords
        if keyword.arg == "tasks"
        and isinstance(keyword.value, ast.Constant)
        and isinstance(keyword.value.value, str)
    ]


ENTRIES = (
    "A route",
    "A service",
    "An adapter",
    "An adapter on another kind of new resource",
    "A workflow",
)
"""The 'Where to add things' entries counted (an entry that extends another continues its numbering); an
entry the page no longer has is not printed (an older checkout's page has no service entry, a newer one no
adapter on another kind of resource: buckets and queues are declared)."""


def touches() -> dict[str, int]:
    """The numbered places each 'Where to add things' entry of docs/architecture.md lists: its last item's
    number (an entry that builds on another, the adapter on another kind of resource, numbers on from it)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Where to add things", 1)[1].split("\n## ", 1)[0]
    counts: dict[str, int] = {}
    for name in ENTRIES:
        if f"**{name}**" not in section:  # an older checkout's page
            continue
        block = section.split(f"**{name}**", 1)[1].split("\n\n**", 1)[0]
        counts[name] = max((int(n) for n in re.findall(r"^(\d+)\. ", block, flags=re.MULTILINE)), default=0)
    return counts


def stack_lines() -> tuple[int, int]:
    """(lines of the MemoryStack class, lines of its file)."""
    path = INFRA / "stacks" / "memory_stack.py"
    (cls,) = [n for n in _tree(path).body if isinstance(n, ast.ClassDef) and n.name == "MemoryStack"]
    return (cls.end_lineno or cls.lineno) - cls.lineno + 1, len(path.read_text().splitlines())


def main() -> None:
    if len(sys.argv) > 1:
        use(Path(sys.argv[1]))
    print("Largest file and function per package (lines)")
    for package, file, lines, function, span in largest():
        print(f"  {package:34} {file} ({lines})  |  {function} ({span})")
    print(
        "\nAssembly sites (handler module: its Lambda handler strings -> the wiring/aws.py builders it uses)"
    )
    for module, (handlers, builders) in assembly_sites().items():
        print(f"  {module:10} {handlers} -> {', '.join(builders) or 'none (builds nothing)'}")
    print("\nTouches to add (docs/architecture.md, Where to add things)")
    for name, count in touches().items():
        print(f"  {name}: {count}")
    cls, file = stack_lines()
    print(f"\nMemoryStack: {cls} lines of class, {file} lines of file (budget 150)")


if __name__ == "__main__":
    main()
