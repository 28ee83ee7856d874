"""Per-request context set by the authentication middleware (see app.py): the principal and the services."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..domain.identity import Principal, Scope

if TYPE_CHECKING:
    from ..adapters.idempotency import IdempotentRunner
    from ..domain.dreaming.sweep import DreamingService
    from ..domain.files.memory_files import MemoryFilesService
    from ..domain.memory.service import MemoryService
    from ..domain.ports import DreamLauncher
    from ..domain.sessions.chat import ChatService
    from ..domain.sessions.sessions import SessionService


@dataclass(frozen=True)
class Services:
    memory: MemoryService
    files: MemoryFilesService
    idempotency: IdempotentRunner | None = None
    sessions: SessionService | None = None
    chat: ChatService | None = None
    dreaming: DreamingService | None = None
    dream_launcher: DreamLauncher | None = None


@dataclass(frozen=True)
class RequestContext:
    principal: Principal
    services: Services

    def allow(self, scope: Scope, *namespaces: str) -> None:
        """Raise Forbidden unless the principal has the scope and every namespace."""
        self.principal.require_scope(scope)
        for namespace in namespaces:
            self.principal.require_namespace(namespace)


def current(router: Any) -> RequestContext:
    context = router.context.get("request")
    if not isinstance(context, RequestContext):  # pragma: no cover - the middleware always sets it
        raise RuntimeError("request context missing: is the authentication middleware installed?")
    return context
