"""The per-process cache of the Lambda functions' graphs: each is built by the first invocation that needs it
and kept for the warm ones, never at import (a cold start pays only for imports).

One slot per function graph, shared by every module of that function: the dreaming function's three task
modules (`handlers/dreaming.py`, `curator.py`, `purge.py`) all read `WORKER`, so a warm container builds the
graph once. Settings are read from the environment once per build (`RuntimeSettings.from_environment`) and
handed to the builder; `Lazy.set` replaces a slot (tests: services on moto or Stubber clients), `set(None)`
makes the next use build it again."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from ..adapters.posix.file_server import FileServer
    from ..api.context import Services
    from ..domain.migration.service import MigrationService
    from .aws import ApiKeyLookup, Jobs, Worker
    from .config import RuntimeSettings

T = TypeVar("T")


class Lazy(Generic[T]):
    """A value built on first use and kept: per execution environment, the first invocation builds it and the
    warm ones reuse it. `set` replaces it; `set(None)` makes the next use build it again."""

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._value: T | None = None
        self._hooks: list[Callable[[T], T]] = []

    def __call__(self) -> T:
        if self._value is None:
            value = self._build()
            for hook in self._hooks:
                value = hook(value)
            self._value = value
        return self._value

    def then(self, hook: Callable[[T], T]) -> None:
        """Apply `hook` to every value this slot builds (the chat function's metric observers), not to a value
        given with `set`."""
        self._hooks.append(hook)

    def set(self, value: T | None) -> None:
        self._value = value

    @property
    def built(self) -> bool:
        return self._value is not None


def _settings() -> RuntimeSettings:
    from .config import RuntimeSettings

    return RuntimeSettings.from_environment()


def _api() -> Services:
    from .aws import build_api

    return build_api(_settings())


def _chat() -> Services:
    from .aws import build_chat

    return build_chat(_settings())


def _jobs() -> Jobs:
    from .aws import build_jobs

    return build_jobs(_settings())


def _worker() -> Worker:
    from .aws import build_worker

    return build_worker(_settings())


def _job_worker() -> Services:
    """The job function's own name is the one its job service would hand a job to (it never does: it only
    runs them); Lambda sets AWS_LAMBDA_FUNCTION_NAME, and a function cannot name itself in its environment."""
    import os
    from dataclasses import replace

    from .aws import build_job_worker

    settings = _settings()
    if not settings.service.job_function:
        own = {"job_function": os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")}
        settings = replace(settings, service=settings.service.model_copy(update=own))
    return build_job_worker(settings)


def _backfill() -> MigrationService:
    from .aws import build_backfill

    return build_backfill(_settings())


def _authorizer() -> ApiKeyLookup:
    from ..settings.handlers import get_handler_settings
    from .aws import build_authorizer

    return build_authorizer(get_handler_settings())


def _file_server() -> FileServer:
    from ..settings.handlers import get_handler_settings
    from .aws import build_file_server

    return build_file_server(get_handler_settings())


API: Lazy[Services] = Lazy(_api)
CHAT: Lazy[Services] = Lazy(_chat)
JOBS: Lazy[Jobs] = Lazy(_jobs)
WORKER: Lazy[Worker] = Lazy(_worker)
JOB_WORKER: Lazy[Services] = Lazy(_job_worker)
BACKFILL: Lazy[MigrationService] = Lazy(_backfill)
AUTHORIZER: Lazy[ApiKeyLookup] = Lazy(_authorizer)
FILE_SERVER: Lazy[FileServer] = Lazy(_file_server)
