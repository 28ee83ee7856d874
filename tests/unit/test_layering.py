"""The package's dependency direction, read from the code's own imports (docs/architecture.md, "Layers").

- `domain/` imports no other part of the package (adapters, api, handlers, cli, settings, wiring, local_server:
  read from the tree, `OUTSIDE_DOMAIN`), no infra module and no boto3.
- Shared `domain/` modules (credentials, errors, identity, model, patterns, ports, records, safety, text) import
  no wing.
- A wing imports shared modules and only the wings it is allowed to depend on (`WING_DEPENDENCIES`), and never
  a private (leading underscore) module or name of another wing.
- No import cycle between wings (read from the imports).
- No file of the domain, the API layer, the CLI or the wiring over 600 lines, no function over 60 (a short
  allow-list with reasons).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[2] / "functions" / "agent_memory"
DOMAIN = PACKAGE_ROOT / "domain"

WINGS = (
    "memory",
    "files",
    "sessions",
    "dreaming",
    "skills",
    "migration",
    "interop",
    "erasure",
    "versioning",
    "jobs",
)
SHARED = (
    "credentials",
    "errors",
    "identity",
    "memo",
    "model",
    "patterns",
    "ports",
    "records",
    "retry",
    "safety",
    "text",
)
WING_DEPENDENCIES: dict[str, set[str]] = {
    "memory": set(),
    "files": {"memory"},
    "sessions": {"memory", "files", "skills"},
    "dreaming": {"memory", "files"},
    "skills": {"files"},
    "migration": set(),
    "interop": {"memory", "files", "skills"},
    "erasure": {"files", "interop", "skills"},
    "versioning": {"memory", "files", "interop"},
    "jobs": set(),
}
"""What each wing may import besides the shared modules (docs/architecture.md shows the same graph)."""


def _outer_modules() -> frozenset[str]:
    """The package's top-level modules and packages other than `domain`, read from the tree (so a new outer
    layer is covered the day it appears, and a moved one is not listed after it left)."""
    found = {p.stem for p in PACKAGE_ROOT.glob("*.py") if p.stem != "__init__"}
    found |= {p.name for p in PACKAGE_ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    return frozenset(found - {"domain"})


OUTSIDE_DOMAIN = _outer_modules()
"""What the domain may not import: every other part of the package (the layers around it)."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> Iterator[tuple[str, str | None, int]]:
    """(absolute module, imported name or None, line) for every import in the file, relative ones resolved."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            for alias in node.names:
                yield module, alias.name, node.lineno


def _targets(module: str, name: str | None) -> list[str]:
    """The modules an import reaches: `from pkg import mod` reaches pkg.mod when mod is a module."""
    found = [module]
    if name is not None:
        candidate = PACKAGE_ROOT.parent.joinpath(*module.split("."), name)
        if candidate.with_suffix(".py").exists() or (candidate / "__init__.py").exists():
            found.append(f"{module}.{name}")
    return found


def _domain_files() -> list[Path]:
    return sorted(p for p in DOMAIN.rglob("*.py") if "__pycache__" not in p.parts)


def _wing_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] == ["agent_memory", "domain"] and len(parts) >= 3 and parts[2] in WINGS:
        return parts[2]
    return None


def test_the_layout_is_what_the_rules_below_describe() -> None:
    packages = {p.name for p in DOMAIN.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    # a shared module may be a package (safety/: the scan split by responsibility); it is still no wing
    wings = packages - set(SHARED)
    shared = {p.stem for p in DOMAIN.glob("*.py") if p.stem != "__init__"} | (packages & set(SHARED))
    assert wings == set(WINGS), "a new wing needs its line in WING_DEPENDENCIES and docs/architecture.md"
    assert shared == set(SHARED), "a new shared domain module must be added here and to docs/architecture.md"


def _import_problems(own: str, imports: Iterable[tuple[str, str | None, int]]) -> list[str]:
    """What is wrong with the imports of domain module `own` (an empty list when they keep its place)."""
    own_wing = _wing_of(own)
    problems = []
    for module, name, line in imports:
        root = module.split(".")[0]
        if root in {"boto3", "botocore", "infra", "aws_cdk"}:
            problems.append(f"line {line}: imports {module} (no AWS SDK or infra in the domain)")
            continue
        for target in _targets(module, name):
            parts = target.split(".")
            if parts[0] != "agent_memory":
                continue
            if len(parts) > 1 and parts[1] in OUTSIDE_DOMAIN:
                problems.append(f"line {line}: imports {target} (the domain imports no outer layer)")
                continue
            wing = _wing_of(target)
            if wing is None or wing == own_wing:
                continue
            if own_wing is None:
                problems.append(f"line {line}: shared module imports the {wing} wing ({target})")
            elif wing not in WING_DEPENDENCIES[own_wing]:
                problems.append(f"line {line}: the {own_wing} wing may not import the {wing} wing ({target})")
            private_module = any(part.startswith("_") and part != "__init__" for part in parts[3:])
            private_name = name is not None and name.startswith("_") and target == module
            if private_module or private_name:
                problems.append(f"line {line}: imports a private name of the {wing} wing ({target}.{name})")
    return problems


@pytest.mark.parametrize("path", _domain_files(), ids=lambda p: str(p.relative_to(DOMAIN)))
def test_domain_imports_only_what_its_place_allows(path: Path) -> None:
    own = _module_name(path)
    problems = _import_problems(own, _imports(path))
    assert not problems, f"{own}:\n" + "\n".join(problems)


def test_the_outer_layers_are_read_from_the_tree() -> None:
    # the layers docs/architecture.md names; the state machines live in infra/workflows/, outside the package
    assert {"adapters", "api", "handlers", "cli", "settings", "wiring", "local_server"} <= OUTSIDE_DOMAIN
    assert "workflows" not in OUTSIDE_DOMAIN and "domain" not in OUTSIDE_DOMAIN
    assert "console" not in OUTSIDE_DOMAIN  # static files, no Python


@pytest.mark.parametrize(
    ("own", "module", "name", "why"),
    [
        ("agent_memory.domain.memory.service", "boto3", None, "no AWS SDK"),
        ("agent_memory.domain.memory.service", "infra.workflows", None, "no AWS SDK or infra"),
        *[
            ("agent_memory.domain.memory.service", f"agent_memory.{layer}", None, "outer layer")
            for layer in sorted(OUTSIDE_DOMAIN)
        ],
        ("agent_memory.domain.memory.service", "agent_memory", "wiring", "outer layer"),
        (
            "agent_memory.domain.records",
            "agent_memory.domain.memory.service",
            "MemoryService",
            "shared module",
        ),
        (
            "agent_memory.domain.memory.service",
            "agent_memory.domain.files.paths",
            "DAILY_DIR",
            "may not import",
        ),
        ("agent_memory.domain.files.memory_files", "agent_memory.domain.memory", "_private", "private name"),
        ("agent_memory.domain.files.memory_files", "agent_memory.domain.memory._hidden", "x", "private name"),
    ],
)
def test_the_checker_refuses_a_planted_import(own: str, module: str, name: str | None, why: str) -> None:
    """Each rule above fails on an import that breaks it (fed to the checker, the tree is left alone)."""
    problems = _import_problems(own, [(module, name, 7)])
    assert problems and all(why in problem for problem in problems), problems


def test_the_checker_accepts_an_allowed_import() -> None:
    allowed = [
        ("agent_memory.domain.records", "MemoryRecord", 1),
        ("agent_memory.domain.memory.service", "MemoryService", 2),
        ("numpy", None, 3),
    ]
    assert _import_problems("agent_memory.domain.files.memory_files", allowed) == []


def _wing_graph() -> dict[str, set[str]]:
    """Which wings each wing imports, read from the domain files' own imports (not from WING_DEPENDENCIES)."""
    graph: dict[str, set[str]] = {wing: set() for wing in WINGS}
    for path in _domain_files():
        own = _wing_of(_module_name(path))
        if own is None:
            continue
        for module, name, _ in _imports(path):
            for target in _targets(module, name):
                wing = _wing_of(target)
                if wing is not None and wing != own:
                    graph[own].add(wing)
    return graph


def _cycle(graph: dict[str, set[str]]) -> tuple[str, ...] | None:
    """One cycle of the graph (its wings in order, the first repeated at the end), or None."""
    done: set[str] = set()

    def visit(node: str, path: tuple[str, ...]) -> tuple[str, ...] | None:
        if node in path:
            return (*path[path.index(node) :], node)
        if node in done:
            return None
        for dependency in sorted(graph.get(node, ())):
            if found := visit(dependency, (*path, node)):
                return found
        done.add(node)
        return None

    for node in sorted(graph):
        if found := visit(node, ()):
            return found
    return None


def test_the_wings_import_each_other_without_a_cycle() -> None:
    graph = _wing_graph()
    cycle = _cycle(graph)
    assert cycle is None, f"wing import cycle: {' -> '.join(cycle)}"
    assert graph["dreaming"] >= {"memory"}, "the import reader found no cross-wing import: it is broken"


def test_the_cycle_finder_sees_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ("a", "b", "c", "a")
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
    assert _cycle(WING_DEPENDENCIES) is None  # the documented graph is acyclic too


MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 60
SIZED_PACKAGES = ("domain", "api", "cli", "wiring")
"""The packages held to the size limits: the domain, and the layers a newcomer reads around it."""
SIZE_ALLOWED: dict[str, tuple[int, str]] = {
    # path under agent_memory/ (a file, or file::function) → (the size it may keep until split, why)
}
"""The exceptions to the size limits, each with the most it may grow to and the reason (none today: a table
that cannot be split goes here with its reason)."""


def _sized_files() -> list[Path]:
    return sorted(
        p
        for package in SIZED_PACKAGES
        for p in (PACKAGE_ROOT / package).rglob("*.py")
        if "__pycache__" not in p.parts
    )


def _allowance(key: str, limit: int) -> int:
    for prefix, (allowed, _reason) in SIZE_ALLOWED.items():
        if key == prefix or (prefix.endswith("/") and key.startswith(prefix)):
            return allowed
    return limit


def _oversized() -> list[str]:
    found = []
    for path in _sized_files():
        key = str(path.relative_to(PACKAGE_ROOT))
        source = path.read_text()
        lines = len(source.splitlines())
        if lines > _allowance(key, MAX_FILE_LINES):
            found.append(f"{key}: {lines} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > _allowance(f"{key}::{node.name}", MAX_FUNCTION_LINES):
                    found.append(f"{key}::{node.name}: {length} lines")
    return found


def test_no_file_or_function_of_the_domain_api_cli_or_wiring_is_over_the_size_limits() -> None:
    assert {"api/app.py", "cli/main.py", "wiring/local.py"} <= {
        str(p.relative_to(PACKAGE_ROOT)) for p in _sized_files()
    }
    oversized = _oversized()
    assert not oversized, (
        f"split these (at most {MAX_FILE_LINES} lines a file, {MAX_FUNCTION_LINES} a function): {oversized}"
    )


def test_every_size_exception_is_still_needed() -> None:
    """An allow-list entry whose file or function is back under the limit is removed, so it cannot hide a
    regrowth later."""
    stale = []
    for key in SIZE_ALLOWED:
        if key.endswith("/"):
            files = [p for p in _sized_files() if str(p.relative_to(PACKAGE_ROOT)).startswith(key)]
            if not files:
                stale.append(key)
            continue
        file, _, function = key.partition("::")
        path = PACKAGE_ROOT / file
        if not path.exists():
            stale.append(key)
            continue
        source = path.read_text()
        if not function:
            size = len(source.splitlines())
        else:
            nodes = [
                n
                for n in ast.walk(ast.parse(source))
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == function
            ]
            size = max(((n.end_lineno or n.lineno) - n.lineno + 1 for n in nodes), default=0)
        if size <= (MAX_FUNCTION_LINES if function else MAX_FILE_LINES):
            stale.append(key)
    assert not stale, f"remove these size exceptions, they are within the limits now: {stale}"


def test_nothing_imports_the_handlers() -> None:
    offenders = []
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        if "handlers" in path.relative_to(PACKAGE_ROOT).parts:
            continue
        for module, name, line in _imports(path):
            if any(t.startswith("agent_memory.handlers") for t in _targets(module, name)):
                offenders.append(f"{path.relative_to(PACKAGE_ROOT)}:{line}")
    assert not offenders


def test_the_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    """The rules above are only as good as the import reader: it must resolve relative imports."""
    sample = DOMAIN / "memory" / "service.py"
    resolved = {t for module, name, _ in _imports(sample) for t in _targets(module, name)}
    assert "agent_memory.domain.records" in resolved
    assert "agent_memory.domain.memory.recaller" in resolved
    assert "agent_memory.domain.safety" in resolved  # `from .. import safety`
    assert _wing_of("agent_memory.domain.dreaming.sweep") == "dreaming"
