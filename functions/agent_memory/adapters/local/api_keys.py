"""Local API keys: a JSON file in the data directory holding only SHA-256 hashes of the keys.

API keys are long random tokens (256 bits), so a fast hash is the right tool (a password KDF protects
low-entropy secrets, which these are not)."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock

from ...domain.identity import Principal, Scope, is_valid_pattern
from ...domain.records import is_valid_tenant

KEY_PREFIX = "amk_"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class CreatedKey:
    key: str
    key_id: str
    principal: Principal


class LocalApiKeys:
    def __init__(self, path: Path) -> None:
        self._path = Path(path)
        self._lock = FileLock(str(self._path) + ".lock")
        self._cache: dict[str, dict] = {}
        self._cache_stamp: tuple[int, int] | None = None

    def create(self, tenant: str, namespaces: list[str], scopes: list[str]) -> CreatedKey:
        if not is_valid_tenant(tenant):
            raise ValueError(f"invalid tenant id {tenant!r}: 3-40 of a-z, 0-9 and '-'")
        bad = [p for p in namespaces if not is_valid_pattern(p)]
        if bad or not namespaces:
            raise ValueError(f"give namespace patterns like /projects/x, /users/* or *; bad: {bad}")
        parsed_scopes = sorted({Scope(s).value for s in scopes})
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        key_id = hash_key(key)[:12]
        entry = {
            "key_id": key_id,
            "key_hash": hash_key(key),
            "tenant": tenant,
            "namespaces": list(namespaces),
            "scopes": parsed_scopes,
            "created_at": datetime.now(UTC).isoformat(),
            "disabled": False,
        }
        self._path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            data = self._read()
            data["keys"].append(entry)
            self._write(data)
        return CreatedKey(key=key, key_id=key_id, principal=self._principal(entry))

    def disable(self, key_id: str) -> bool:
        with self._lock:
            data = self._read()
            found = False
            for entry in data["keys"]:
                if entry["key_id"] == key_id:
                    entry["disabled"] = found = True
            if found:
                self._write(data)
        return found

    def list(self) -> list[dict]:
        return [{k: v for k, v in e.items() if k != "key_hash"} for e in self._read()["keys"]]

    def lookup(self, key: str) -> Principal | None:
        entry = self._entries().get(hash_key(key))
        if entry is None or entry.get("disabled"):
            return None
        return self._principal(entry)

    def _entries(self) -> dict[str, dict]:
        """Re-read the file only when it changed, so keys created by the CLI reach a running server."""
        try:
            stat = self._path.stat()
        except FileNotFoundError:
            return {}
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp != self._cache_stamp:
            self._cache = {e["key_hash"]: e for e in self._read()["keys"]}
            self._cache_stamp = stamp
        return self._cache

    @staticmethod
    def _principal(entry: dict) -> Principal:
        return Principal(
            tenant=entry["tenant"],
            namespaces=tuple(entry["namespaces"]),
            scopes=frozenset(Scope(s) for s in entry["scopes"]),
            key_id=entry["key_id"],
        )

    def _read(self) -> dict:
        try:
            return json.loads(self._path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"keys": []}

    def _write(self, data: dict) -> None:
        fd, tmp = tempfile.mkstemp(dir=self._path.parent, prefix=".keys-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=2)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self._path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
