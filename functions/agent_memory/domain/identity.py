"""Who is calling: a principal known only from authentication (an API key or the AWS authorizer context),
never from the request body. Namespace patterns: `*` (any), `/projects/*` (every namespace below /projects, at
any depth, but not /projects itself: the glob meaning, so a key for the sub-projects cannot read or write what
is kept for all of them in the parent), or an exact path (`/projects`, to grant the parent as well)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from .errors import Forbidden
from .records import is_valid_namespace, is_valid_tenant


class Scope(StrEnum):
    READ = "read"
    WRITE = "write"
    ADMIN = "admin"
    PURGE = "purge"
    """Erasure (domain/erasure): never implied by `admin`; the purge routes need both (docs/security.md)."""


def namespace_matches(pattern: str, namespace: str) -> bool:
    if pattern == "*":
        return True
    if pattern.endswith("/*"):
        return namespace.startswith(pattern[:-1])  # "/projects/": strictly below, never the parent itself
    return namespace == pattern


def is_valid_pattern(pattern: str) -> bool:
    if pattern == "*":
        return True
    base = pattern[:-2] if pattern.endswith("/*") else pattern
    return is_valid_namespace(base)


@dataclass(frozen=True)
class Principal:
    tenant: str
    namespaces: tuple[str, ...]
    scopes: frozenset[Scope]
    key_id: str

    def __post_init__(self) -> None:
        if not is_valid_tenant(self.tenant):
            raise ValueError(f"invalid tenant id {self.tenant!r}")
        bad = [p for p in self.namespaces if not is_valid_pattern(p)]
        if bad:
            raise ValueError(f"invalid namespace patterns {bad}")

    @property
    def actor(self) -> str:
        return f"key:{self.key_id}"

    @property
    def allows_all(self) -> bool:
        return "*" in self.namespaces

    def allows(self, namespace: str) -> bool:
        return any(namespace_matches(pattern, namespace) for pattern in self.namespaces)

    def require_scope(self, scope: Scope) -> None:
        implied = Scope.ADMIN in self.scopes and scope is not Scope.PURGE  # admin implies all but purge
        if scope not in self.scopes and not implied:
            raise Forbidden(
                f"this API key lacks the '{scope.value}' scope", required=scope.value, key_id=self.key_id
            )

    def require_namespace(self, namespace: str) -> None:
        if not self.allows(namespace):
            raise Forbidden(
                f"this API key may not use namespace {namespace!r}; allowed: {', '.join(self.namespaces)}",
                namespace=namespace,
            )
