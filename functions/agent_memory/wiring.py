"""Composition root: builds the services for the local or the AWS runtime from Settings.

Nothing here runs at import time; handlers and the local server call these builders lazily, once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .adapters.clock import SystemClock
from .api.context import Services
from .domain import safety
from .domain.memory_files import MemoryFilesService
from .domain.ports import Clock
from .domain.service import MemoryService
from .settings import Settings


@dataclass(frozen=True)
class LocalRuntime:
    services: Services
    keys: object  # LocalApiKeys
    data_dir: Path


def build_local(settings: Settings, clock: Clock | None = None) -> LocalRuntime:
    """SQLite records + FTS5 keywords + in-process vectors + an offline embedder + a local files directory."""
    from .adapters.local.api_keys import LocalApiKeys
    from .adapters.local.embedders import build_embedder
    from .adapters.local.file_store import LocalFileStore
    from .adapters.local.search_index import LocalSearchIndex
    from .adapters.local.sqlite_store import SqliteRecordStore

    clock = clock or SystemClock()
    data_dir = settings.data_dir.expanduser().resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    memory = MemoryService(
        store=SqliteRecordStore(data_dir / "memory.db"),
        index=LocalSearchIndex(data_dir / "index"),
        embedder=build_embedder(settings.embedder),
        clock=clock,
        policy=settings.policy,
    )
    files = MemoryFilesService(
        LocalFileStore(data_dir / "files"), settings.policy.caps, safety.first_rule, clock
    )
    return LocalRuntime(
        services=Services(memory=memory, files=files),
        keys=LocalApiKeys(settings.keys_file),
        data_dir=data_dir,
    )
