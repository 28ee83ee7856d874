"""No module of the memory wing imports another module's private names (issue 27: `write_judge` used to import
the service's `_add_beside` and `_change`). A private name is a module's own business; what others need is
public. (The safety package's modules still share private pattern tables among themselves.)"""

from __future__ import annotations

import ast
from pathlib import Path

DOMAIN = Path(__file__).resolve().parents[2] / "functions" / "agent_memory" / "domain"
CHECKED = ("memory", "sessions", "dreaming", "interop", "erasure", "versioning", "files", "migration")


def _private_imports(path: Path, root: Path = DOMAIN) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (
            node.level > 0 or (node.module or "").startswith("agent_memory")
        ):
            found += [
                f"{path.relative_to(root)}:{node.lineno} imports {alias.name}"
                for alias in node.names
                if alias.name.startswith("_") and not alias.name.startswith("__")
            ]
    return found


def test_no_wing_module_imports_a_private_name_of_another():
    paths = [path for wing in CHECKED for path in sorted((DOMAIN / wing).rglob("*.py"))]
    offenders = [line for path in paths for line in _private_imports(path)]
    assert offenders == []


def test_the_check_sees_a_private_import(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from .service import _add_beside, public_name\n", encoding="utf-8")
    assert [line.split(" imports ")[1] for line in _private_imports(sample, tmp_path)] == ["_add_beside"]
