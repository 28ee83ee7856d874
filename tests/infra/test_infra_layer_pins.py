"""The Lambda layer's pins (layers/requirements.txt) agree with constraints.txt, the developer environment's
lock, so the code is tested against exactly what the functions ship; detect-secrets (the safety scan's
credential detection) ships with its whole dependency closure pinned."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

from infra_support import ROOT
from packaging.requirements import Requirement

LAMBDA_ENVIRONMENT = {
    "python_version": "3.14",
    "python_full_version": "3.14.0",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "aarch64",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "os_name": "posix",
    "extra": "",
}


def _name(raw: str) -> str:
    return re.sub(r"[-_.]+", "-", raw).lower()


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line and not line.startswith("-"):
            name, version = line.split("==", 1)
            pins[_name(name.split("[", 1)[0].strip())] = version.strip()
    return pins


LAYER = _pins(ROOT / "layers" / "requirements.txt")
CONSTRAINTS = _pins(ROOT / "constraints.txt")


def _closure(root: str) -> set[str]:
    """`root` and everything it needs at run time on the Lambda runtime, from the installed metadata."""
    seen: set[str] = set()
    pending = [root]
    while pending:
        name = _name(pending.pop())
        if name in seen:
            continue
        seen.add(name)
        for raw in metadata.requires(name) or []:
            requirement = Requirement(raw)
            if requirement.marker is None or requirement.marker.evaluate(LAMBDA_ENVIRONMENT):
                pending.append(requirement.name)
    return seen


def test_every_layer_pin_is_the_version_constraints_txt_locks() -> None:
    mismatched = {n: (v, CONSTRAINTS.get(n)) for n, v in LAYER.items() if CONSTRAINTS.get(n) != v}
    assert not mismatched, f"layers/requirements.txt vs constraints.txt: {mismatched}"


def test_detect_secrets_ships_with_its_exact_dependency_closure() -> None:
    closure = _closure("detect-secrets")
    assert {"detect-secrets", "pyyaml", "requests"} <= closure
    missing = sorted(closure - set(LAYER))
    assert not missing, f"pin these in layers/requirements.txt (and constraints.txt): {missing}"
    for name in closure:
        assert metadata.version(name) == LAYER[name], (
            f"{name}: installed {metadata.version(name)} != {LAYER[name]}"
        )
