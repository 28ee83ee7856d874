"""Per-request context set by the authentication middleware (see app.py): the principal and the services."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..domain.errors import ValidationFailed
from ..domain.identity import Principal, Scope
from ..domain.records import is_valid_namespace

if TYPE_CHECKING:
    from ..domain.dreaming.sweep import DreamingService
    from ..domain.erasure.service import ErasureService
    from ..domain.files.memory_files import MemoryFilesService
    from ..domain.interop.service import ImportService
    from ..domain.jobs.service import JobService
    from ..domain.memory.service import MemoryService
    from ..domain.migration.service import MigrationService
    from ..domain.ports import DreamLauncher
    from ..domain.sessions.chat import ChatService
    from ..domain.sessions.sessions import SessionService
    from ..domain.skills.curator import CuratorService
    from ..domain.skills.service import SkillsService
    from ..domain.versioning.service import VersioningService
    from .latency import LatencyWindow


class Idempotency(Protocol):
    """Idempotent writes under an `Idempotency-Key` (wiring picks the store: SQLite or DynamoDB)."""

    def register_lambda_context(self, context: Any) -> None: ...

    def run(
        self,
        tenant: str,
        operation: str,
        key: str,
        request: dict[str, Any],
        compute: Callable[[], dict[str, Any]],
        *,
        caller: str,
    ) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Services:
    """What the routes and handlers call, assembled by `wiring/` (the API layer chooses no adapter)."""

    memory: MemoryService
    files: MemoryFilesService
    idempotency: Idempotency | None = None
    sessions: SessionService | None = None
    chat: ChatService | None = None
    dreaming: DreamingService | None = None
    dream_launcher: DreamLauncher | None = None
    skills: SkillsService | None = None
    curator: CuratorService | None = None
    migration: MigrationService | None = None
    """Embedding-model migration (domain/migration); None where the runtime does not wire it."""
    imports: ImportService | None = None
    """Importers from other agent tools (domain/interop): inventory, import, report, rollback."""
    versioning: VersioningService | None = None
    """Export, bundle import, snapshots, diff, restore and references (domain/versioning)."""
    erasure: ErasureService | None = None
    """Purges: plan, execute, verify (domain/erasure); admin + purge scopes."""
    jobs: JobService | None = None
    """Long work accepted with 202 (imports, large batches; routes/jobs.py). None: those routes run within the
    request (AWS, where the API function has no background worker)."""
    recall_latency: LatencyWindow | None = None
    """The local server's recall durations (api/latency.py); None in AWS, where CloudWatch has them."""
    archive_reader: Callable[[bytes, str], Any] | None = None
    """(archive bytes, name) → the importers' `SourceTree` of an uploaded zip or tar.gz (/v1/imports)."""


@dataclass(frozen=True)
class RequestContext:
    principal: Principal
    services: Services
    headers: Any = None
    """The request's headers (case-insensitive lookup, as Powertools gives them)."""

    def allow(self, scope: Scope, *namespaces: str) -> None:
        """Raise Forbidden unless the principal has the scope and every namespace; ValidationFailed (422) for a
        namespace that is not a namespace at all (a control character, `..`), before any pattern is matched."""
        self.principal.require_scope(scope)
        for namespace in namespaces:
            if not is_valid_namespace(namespace):
                raise ValidationFailed(
                    f"invalid namespace {namespace!r}: use a path like /projects/billing (segments of letters, "
                    "digits, '.', '_', '-'; no control characters)",
                    namespace=namespace,
                )
            self.principal.require_namespace(namespace)


_REQUEST: ContextVar[RequestContext | None] = ContextVar("agent_memory_request", default=None)
"""The request being served. A context variable rather than the Powertools router's context: the route
modules' routers are module-level and Powertools points them at the last app that included them, so two apps
in one process (the local server and the Lambda handler in tests, or an OpenAPI build) would otherwise read
each other's context."""


@contextmanager
def serving(context: RequestContext) -> Iterator[RequestContext]:
    """Make `context` the current request's for the duration of the route call (set by the middleware)."""
    token = _REQUEST.set(context)
    try:
        yield context
    finally:
        _REQUEST.reset(token)


def current() -> RequestContext:
    context = _REQUEST.get()
    if context is None:  # pragma: no cover - the middleware always sets it
        raise RuntimeError("request context missing: is the authentication middleware installed?")
    return context
