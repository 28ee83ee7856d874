"""pyproject.toml's mypy scope for aws_cdk: every aws_cdk module our code imports is analysed, never skipped
(a skipped module is silently Any, so a call into it would go unchecked)."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _checked_cdk_modules() -> tuple[set[str], set[str]]:
    overrides = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]
    by_mode: dict[str, set[str]] = {"skip": set(), "normal": set()}
    for override in overrides:
        if override.get("follow_imports") in by_mode:
            by_mode[override["follow_imports"]].update(override["module"])
    return by_mode["normal"], by_mode["skip"]


def _imported_cdk_modules() -> set[str]:
    found: set[str] = set()
    for path in [*(ROOT / "infra").rglob("*.py"), *(ROOT / "functions").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.ImportFrom)
                and node.level == 0
                and (node.module or "").startswith("aws_cdk")
            ):
                module = str(node.module)
                found.add(module)
                found.update(f"{module}.{a.name}" for a in node.names if a.name.startswith("aws_"))
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("aws_cdk"))
    return found


def test_every_aws_cdk_module_our_code_imports_is_type_checked() -> None:
    normal, skipped = _checked_cdk_modules()
    assert skipped == {"aws_cdk.*"}, "only the aws_cdk services nothing of ours imports are skipped"
    imported = _imported_cdk_modules()
    assert {"aws_cdk", "aws_cdk.aws_lambda", "aws_cdk.aws_stepfunctions"} <= imported
    missing = sorted(imported - normal)
    assert not missing, f"add these to the follow_imports = 'normal' list in pyproject.toml: {missing}"
