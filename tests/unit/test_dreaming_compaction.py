"""Near-duplicate clustering (bounded work, transitive clusters, groups) and weekly compaction of records."""

from __future__ import annotations

import pytest
from dreaming_world import NS, TENANT, World

from agent_memory.domain.dreaming.compaction import CompactionService
from agent_memory.domain.memory.near_duplicates import cluster, lexical_cosine, term_set
from agent_memory.domain.memory.service import RememberInput
from agent_memory.domain.ports import RecordQuery
from agent_memory.domain.records import MemoryType, Status


def test_given_item_chains_when_clustered_lexically_then_clusters_are_transitive_and_rooted_at_the_first():
    texts = [
        "alpha beta gamma delta epsilon zeta eta theta iota kappa",
        "unrelated words about invoices",
        "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda",
        "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu",
    ]
    roots, stats = cluster([term_set(t) for t in texts], threshold=0.9)

    # 0~2: 10/√110 = 0.953; 2~3: 11/√132 = 0.957; 0~3: 10/√120 = 0.913
    assert roots == [0, 1, 0, 0]
    assert stats.merged_pairs == 3


def test_given_groups_when_clustered_then_items_of_different_groups_never_merge():
    terms = [term_set("the invoice is due on the first")] * 2
    roots, _ = cluster(terms, threshold=0.9, groups=["project_state", "user_preference"])
    assert roots == [0, 1]


def test_given_a_verifier_when_clustered_then_only_lexically_close_pairs_are_verified_by_it():
    texts = [
        "deploy the billing service nightly",
        "deploy the billing service every night",
        "billing colour theme",
    ]
    seen: list[tuple[int, int]] = []

    def verify(pairs):
        seen.extend(pairs)
        return [0.95 for _ in pairs]

    roots, stats = cluster([term_set(t) for t in texts], threshold=0.9, verify=verify, lexical_floor=0.5)

    assert lexical_cosine(term_set(texts[0]), term_set(texts[1])) == pytest.approx(3 / (4 * 5) ** 0.5)
    assert seen == [(0, 1)] and roots == [0, 0, 2]
    assert stats.verified_pairs == 1


def test_given_thousands_of_items_sharing_a_common_word_then_comparisons_stay_linear():
    size = 3000
    terms = [frozenset({"common", f"unique{i}", f"pair{i // 2}"}) for i in range(size)]

    roots, stats = cluster(terms, threshold=0.9, rare_terms=3, max_block=64, window=16)

    assert stats.compared_pairs <= size * 3 * 16  # not size² / 2 = 4.5 million
    assert stats.compared_pairs == size // 2  # in practice: only the items sharing a pair of rare terms
    assert stats.merged_pairs == 0 and roots == list(range(size))


@pytest.fixture
def world(tmp_path, clock) -> World:
    return World.build(
        tmp_path, clock, near_duplicate_similarity=1.0
    )  # let duplicates in, as racing writers do


def remember(world: World, text: str, memory_type: MemoryType = MemoryType.DOMAIN_KNOWLEDGE, **kwargs):
    return world.memory.remember(
        TENANT, RememberInput(content=text, namespace=NS, type=memory_type, **kwargs), actor="t"
    ).record


def test_given_near_duplicate_records_when_compacted_then_one_summary_keeps_the_best_and_links_the_rest(
    world,
):
    short = remember(world, "Exports run nightly at two", score=0.4)
    full = remember(world, "Exports run nightly at two UTC into the finance bucket", score=0.6)
    fuller = remember(world, "Exports run nightly at two UTC into the finance bucket.", score=0.9)
    other_type = remember(
        world, "Exports run nightly at two UTC into the finance bucket!", MemoryType.PROJECT_STATE
    )
    service = CompactionService(world.memory, world.store, world.clock)

    preview = service.compact(TENANT, NS, similarity=0.9, dry_run=True)
    assert [r.status for r in world.store.list(TENANT, RecordQuery(namespaces=(NS,))).items] == [
        Status.ACTIVE
    ] * 4
    report = service.compact(TENANT, NS, similarity=0.9)

    (folded,) = report.clusters
    assert [c.as_dict() for c in preview.clusters] == [folded.as_dict()]
    assert {folded.summary_id, *folded.member_ids} == {full.id, fuller.id}  # "short" is not close enough
    summary = world.memory.get(TENANT, folded.summary_id)
    assert summary.status is Status.ACTIVE and summary.score == pytest.approx(0.9)
    assert summary.metadata["compacted_count"] == 1
    (archived_id,) = folded.member_ids
    archived = world.memory.get(TENANT, archived_id)
    assert archived.status is Status.ARCHIVED and archived.metadata["compacted_into"] == summary.id
    assert f"compacted into {summary.id}" in archived.status_reason
    assert world.memory.get(TENANT, other_type.id).status is Status.ACTIVE  # another type never folds in
    assert world.memory.get(TENANT, short.id).status is Status.ACTIVE
    assert service.compact(TENANT, NS, similarity=0.9).clusters == []  # idempotent
    restored = world.memory.restore(TENANT, archived_id, actor="t")  # archived, never deleted
    assert restored.status is Status.ACTIVE
