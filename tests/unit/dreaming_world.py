"""A namespace's whole memory on the real local adapters (SQLite, in-process index, files on tmp_path, the
deterministic hashing embedder) for the dreaming tests: notes, short-term records, recalls, and a
`DreamingService` with any configuration."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_memory.adapters.local.embedders import HashingEmbedder
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.adapters.posix.file_store import PosixFileStore
from agent_memory.domain import safety
from agent_memory.domain.dreaming.config import DeepGates, DreamingConfig
from agent_memory.domain.dreaming.sweep import DreamingService
from agent_memory.domain.files.memory_files import MemoryFilesService
from agent_memory.domain.memory.policy import FileCaps, MemoryPolicy
from agent_memory.domain.memory.service import MemoryService, RecallInput, RememberInput
from agent_memory.domain.records import MemoryRecord, MemoryType, Tier

TENANT = "acme"
NS = "/projects/billing"
OPEN_GATES = DeepGates(
    min_score=0.0, min_recall_count=0, min_unique_queries=0, max_age_days=30, min_salience=0.0
)
"""Gates that let every candidate through: for tests about what happens after the gates."""


@dataclass
class World:
    root: Path
    clock: Any
    store: SqliteRecordStore
    memory: MemoryService
    files: MemoryFilesService

    @classmethod
    def build(cls, root: Path, clock: Any, *, memory_md_cap: int = 2200, **policy_fields: Any) -> World:
        policy = MemoryPolicy(caps=FileCaps(memory_md=memory_md_cap), **policy_fields)
        store = SqliteRecordStore(root / "memory.db")
        memory = MemoryService(store, LocalSearchIndex(root / "index"), HashingEmbedder(), clock, policy)
        files = MemoryFilesService(PosixFileStore(root / "files"), policy.caps, safety.first_rule, clock)
        return cls(root, clock, store, memory, files)

    def dreaming(self, **config: Any) -> DreamingService:
        settings = DreamingConfig(**{"compaction_weekday": None, **config})
        return DreamingService(self.memory, self.store, self.files, self.clock, settings)

    def note(self, text: str, namespace: str = NS) -> str:
        return self.files.append_daily(TENANT, namespace, text)

    def short_term(self, text: str, namespace: str = NS, **kwargs: Any) -> MemoryRecord:
        kwargs.setdefault("type", MemoryType.DOMAIN_KNOWLEDGE)
        result = self.memory.remember(
            TENANT,
            RememberInput(content=text, namespace=namespace, tier=Tier.SHORT_TERM, **kwargs),
            actor="test",
        )
        assert result.record is not None
        return result.record

    def recall(self, query: str, namespace: str = NS) -> list[Any]:
        return self.memory.recall(TENANT, RecallInput(query=query, namespaces=(namespace,), k=3)).results

    def recall_daily(self, queries: list[str], namespace: str = NS) -> None:
        """One query per day, advancing the clock a day before each."""
        for query in queries:
            self.clock.advance(days=1)
            assert self.recall(query, namespace), f"nothing recalled for {query!r}"

    def memory_md(self, namespace: str = NS) -> list[str]:
        return self.files.read(TENANT, namespace, "memory").entries

    def dream_files(self, namespace: str = NS) -> list[str]:
        return self.files.list_files(TENANT, namespace, ".dreams/")
