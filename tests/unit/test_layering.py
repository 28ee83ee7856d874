"""The package's dependency direction, read from the code's own imports (docs/architecture.md, "Layers").

- `domain/` imports no adapter, api, handler, cli, settings, wiring or infra module, and no boto3.
- Shared `domain/` modules (credentials, errors, identity, model, patterns, ports, records, safety, text) import
  no wing.
- A wing imports shared modules and only the wings it is allowed to depend on (`WING_DEPENDENCIES`), and never
  a private (leading underscore) module or name of another wing.
- No import cycle between wings.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[2] / "functions" / "agent_memory"
DOMAIN = PACKAGE_ROOT / "domain"

WINGS = ("memory", "files", "sessions", "dreaming", "skills", "migration", "interop", "erasure", "versioning")
SHARED = ("credentials", "errors", "identity", "model", "patterns", "ports", "records", "safety", "text")
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
}
"""What each wing may import besides the shared modules (docs/architecture.md shows the same graph)."""

OUTSIDE_DOMAIN = ("adapters", "api", "handlers", "cli", "settings", "wiring", "local_server", "workflows")


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


@pytest.mark.parametrize("path", _domain_files(), ids=lambda p: str(p.relative_to(DOMAIN)))
def test_domain_imports_only_what_its_place_allows(path: Path) -> None:
    own = _module_name(path)
    own_wing = _wing_of(own)
    problems = []
    for module, name, line in _imports(path):
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
    assert not problems, f"{own}:\n" + "\n".join(problems)


def test_the_allowed_wing_graph_has_no_cycle() -> None:
    seen: dict[str, int] = {}

    def visit(wing: str, path: tuple[str, ...]) -> None:
        assert wing not in path, f"wing cycle: {' -> '.join((*path, wing))}"
        for dependency in WING_DEPENDENCIES[wing]:
            visit(dependency, (*path, wing))
        seen[wing] = 1

    for wing in WINGS:
        visit(wing, ())
    assert set(seen) == set(WINGS)


def test_no_domain_file_is_over_a_thousand_lines() -> None:
    long = {
        str(p.relative_to(DOMAIN)): n
        for p in _domain_files()
        if (n := len(p.read_text().splitlines())) > 1000
    }
    assert not long, f"split these files: {long}"


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
