"""Workspace archives the job tests upload (`POST /v1/imports`): one place for the three suites that run an
import as a job (behaviour, integration, AWS)."""

from __future__ import annotations

import base64
import io
import os
import tarfile


def memory_archive(entries: int, *, fact: str = "the gateway {n} routes invoices", padding: int = 0) -> str:
    """A base64 OpenClaw workspace whose MEMORY.md holds `entries` bullet facts (`fact` formatted with `n`);
    `padding` bytes of incompressible data in a file the importer does not read make the request large."""
    memory = "# Memory\n\n" + "".join(f"- Imported fact {n}: {fact.format(n=n)}\n" for n in range(entries))
    files = [("workspace/MEMORY.md", memory.encode())]
    if padding:
        files.append(("workspace/blob.bin", os.urandom(padding)))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return base64.b64encode(buffer.getvalue()).decode()
