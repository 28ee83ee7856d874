"""The file function's side of `adapters/file_rpc.py`: one request in, one response out, over a
`PosixFileStore` on the S3 Files mount (and `list_namespace_dirs` for the dreaming sweep's target list).

Nothing from the caller is trusted: every field is type-checked here, and the tenant, namespace and path go
through the same checks as on a mount (`PosixFileStore` validates tenant and namespace ids, file paths and
prefixes, resolves links and refuses any path that leaves `<root>/<tenant>/<namespace>/`). Domain errors
become error responses; anything else (an NFS failure, a bug) propagates, so Lambda reports the invocation
as failed and logs it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ...domain.errors import ConcurrentModification, DomainError, TooLarge, ValidationFailed
from ...domain.records import is_valid_tenant
from ..file_rpc import (
    MAX_FILE_BYTES,
    MAX_PAYLOAD_BYTES,
    OPERATIONS,
    encode,
    error_response,
    ok,
    version_of,
)
from .file_store import PosixFileStore
from .namespace_dirs import list_namespace_dirs

PURGE_PLAN_RE = re.compile(r"purge_[0-9a-f]{32}")


class FileServer:
    """Serves the file-store operations of one mount root."""

    def __init__(self, root: Path, *, lock_timeout: float = 10.0) -> None:
        self._root = Path(root)
        # The lock wait stays well under the callers' own timeouts, so a busy file comes back as 409.
        self._store = PosixFileStore(self._root, lock_timeout=lock_timeout, max_bytes=MAX_FILE_BYTES)

    def handle(self, request: Any) -> dict[str, Any]:
        try:
            response = ok(self._dispatch(request))
        except DomainError as error:
            return error_response(error)
        size = len(encode(response))
        if size > MAX_PAYLOAD_BYTES:
            return error_response(
                TooLarge(
                    f"the answer ({size:,} bytes) exceeds what a Lambda invocation can return",
                    limit=MAX_PAYLOAD_BYTES,
                )
            )
        return response

    def _dispatch(self, request: Any) -> dict[str, Any]:
        if not isinstance(request, Mapping):
            raise ValidationFailed("a file request is a JSON object")
        op = request.get("op")
        if op not in OPERATIONS:
            raise ValidationFailed(f"unknown file operation {op!r}; known: {sorted(OPERATIONS)}")
        tenant = _text(request, "tenant")
        if not is_valid_tenant(tenant):
            raise ValidationFailed(f"invalid tenant id {tenant!r}")
        if op == "namespaces":
            return {"namespaces": list_namespace_dirs(self._root, tenant)}
        namespace = _text(request, "namespace")
        if op == "list":
            return {"paths": self._store.list(tenant, namespace, _text(request, "prefix", default=""))}
        path = _text(request, "path")
        if op == "read":
            text = self._store.read(tenant, namespace, path)
            return {"text": text, "version": version_of(text)}
        if op == "append":
            self._store.append(tenant, namespace, path, _text(request, "text"))
            return {}
        if op == "delete":
            # Only the dreaming sweep's housekeeping deletes (its `.dreams/` retention): memory files are never
            # deleted, whichever caller asks.
            if not path.startswith(".dreams/"):
                raise ValidationFailed(f"only files under .dreams/ can be deleted, not {path!r}")
            deleted = self._store.delete(tenant, namespace, path)
            self._store.prune_purged(tenant, namespace, path)
            return {"deleted": deleted}
        if op == "purge":
            # An erasure plan (domain/erasure) removes a file that names purged content, or every file of a
            # purged namespace or tenant. The plan id is required and logged by the handler.
            if not PURGE_PLAN_RE.fullmatch(_text(request, "plan")):
                raise ValidationFailed("purge needs `plan`: the id of the purge plan (purge_<32 hex>)")
            deleted = self._store.delete(tenant, namespace, path)
            self._store.prune_purged(tenant, namespace, path)
            return {"deleted": deleted}
        # write: compare-and-swap against the version the caller read
        text = _text(request, "text")
        if len(text.encode("utf-8")) > MAX_FILE_BYTES:
            raise TooLarge(f"{path!r} would exceed {MAX_FILE_BYTES:,} bytes", path=path, limit=MAX_FILE_BYTES)
        if "expected" not in request:
            raise ValidationFailed("write needs `expected`: the version read (null for an absent file)")
        expected = request["expected"]
        if expected is not None and not isinstance(expected, str):
            raise ValidationFailed("`expected` is a version string or null")
        written = self._store.update(tenant, namespace, path, _swap(path, expected, text))
        return {"version": version_of(written)}


def _swap(path: str, expected: str | None, text: str) -> Callable[[str | None], str]:
    def change(current: str | None) -> str:
        if version_of(current) != expected:
            raise ConcurrentModification(
                f"{path!r} changed since it was read; read it again and retry", path=path
            )
        return text

    return change


def _text(request: Mapping[str, Any], key: str, *, default: str | None = None) -> str:
    value = request.get(key, default)
    if not isinstance(value, str):
        raise ValidationFailed(f"`{key}` must be a string")
    return value
