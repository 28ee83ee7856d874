"""A merge keeps the provenance of both sides (issue 27): the existing record's metadata stays, the merged
write's differing values are listed beside it (`<key>.merged`), and the change log quotes the new wording and
metadata. Real local adapters and the hashing embedder; a paraphrase in other words merges through the API's
default path (no type given)."""

from __future__ import annotations

from agent_memory.adapters.local.embedders import HashingEmbedder
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.domain.memory.service import Decision, MemoryService, RememberInput
from agent_memory.domain.memory.write_ops import merged_metadata
from agent_memory.domain.records import ChangeOperation, MemoryType, Status

NS = "/imports/notes"
T = "acme"


def _service(tmp_path, clock) -> MemoryService:
    return MemoryService(
        store=SqliteRecordStore(tmp_path / "memory.db"),
        index=LocalSearchIndex(tmp_path / "index"),
        embedder=HashingEmbedder(),
        clock=clock,
        policy=MemoryPolicy(),
    )


def _remember(service: MemoryService, content: str, **metadata):
    item = RememberInput(content=content, namespace=NS, metadata=metadata, type=MemoryType.DOMAIN_KNOWLEDGE)
    return service.remember(T, item, actor="test")


def test_a_merge_keeps_the_import_line_of_both_sides(tmp_path, clock):
    service = _service(tmp_path, clock)
    first = _remember(service, "Maria owns the billing service", import_line=10, import_path="MEMORY.md")
    second = _remember(
        service, "The billing service is owned by Maria", import_line=42, import_path="MEMORY.md"
    )
    assert second.decision is Decision.MERGED, second.reason
    merged = service.get(T, first.record.id)
    assert merged.metadata["import_line"] == 10
    assert merged.metadata["import_line.merged"] == "42"
    assert "import_path.merged" not in merged.metadata  # the same value is not repeated
    _, changes = service.history(T, first.record.id)
    entry = next(c for c in changes if c.operation is ChangeOperation.MERGE)
    assert "The billing service is owned by Maria" in entry.reason
    assert '"import_line": 42' in entry.reason


def test_a_paraphrase_with_another_value_is_kept_beside(tmp_path, clock):
    service = _service(tmp_path, clock)
    first = _remember(service, "Maria owns the billing service")
    second = _remember(service, "The billing service is owned by Bob")
    assert second.decision is not Decision.MERGED
    assert service.get(T, first.record.id).status is Status.ACTIVE
    assert service.get(T, second.record.id).content == "The billing service is owned by Bob"


def test_merged_metadata_lists_other_values_within_the_limits():
    policy = MemoryPolicy(max_metadata_keys=3)
    kept = {"import_line": 10, "source_file": "a.md"}
    assert merged_metadata(kept, {"import_line": 42}, policy) == {
        "import_line": 10,
        "source_file": "a.md",
        "import_line.merged": "42",
    }
    twice = merged_metadata({**kept, "import_line.merged": "42"}, {"import_line": 7}, policy)
    assert twice["import_line.merged"] == "42, 7"
    full = merged_metadata({**kept, "import_line.merged": "42"}, {"tag": "x"}, policy)
    assert "tag" not in full  # a fourth key would break the limit: the change log keeps it
    assert merged_metadata(kept, {"new_key": True}, MemoryPolicy())["new_key"] is True
