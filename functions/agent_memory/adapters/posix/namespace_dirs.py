"""Namespaces of a tenant found in the memory-file tree (`<root>/<tenant>/<namespace>/`), for the dreaming
sweep's target list. The `FileStore` port is per namespace and `ports.py` has no namespace listing, so this
adapter walks the directory (local folder or the S3 Files mount) instead.

A directory is a namespace when it holds `MEMORY.md`, `USER.md`, `memory/`, `skills/` or `.dreams/`; its own
`memory/`, `skills/` and hidden directories are not descended into. Links are never followed. Namespaces that
only have records (no file was ever written) are not found here: the dreaming service adds the namespaces of
short-term records, and configuration can name others.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...domain.files.memory_files import DAILY_DIR, DREAMS_DIR, SKILLS_DIR
from ...domain.records import is_valid_namespace, is_valid_tenant

_MARKERS = ("MEMORY.md", "USER.md", DAILY_DIR, SKILLS_DIR, DREAMS_DIR)
_MAX_DEPTH = 8


def list_namespace_dirs(root: Path, tenant: str) -> list[str]:
    if not is_valid_tenant(tenant):
        raise ValueError(f"invalid tenant id {tenant!r}")
    base = Path(root) / tenant
    if not base.is_dir() or base.is_symlink():
        return []
    found: list[str] = []
    stack: list[tuple[Path, str, int]] = [(base, "", 0)]
    while stack:
        directory, namespace, depth = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue  # removed or unreadable meanwhile
        names = {entry.name for entry in entries}
        is_namespace = bool(namespace) and any(marker in names for marker in _MARKERS)
        if is_namespace and is_valid_namespace(namespace):
            found.append(namespace)
        if depth >= _MAX_DEPTH:
            continue
        for entry in entries:
            if entry.name.startswith(".") or entry.is_symlink() or not entry.is_dir(follow_symlinks=False):
                continue
            if is_namespace and entry.name in (DAILY_DIR, SKILLS_DIR):
                continue
            child = f"{namespace}/{entry.name}"
            if is_valid_namespace(child):
                stack.append((Path(entry.path), child, depth + 1))
    return sorted(found)
