"""Near-duplicate clustering without comparing every pair (used by dreaming's Light phase and by compaction).

Comparing all pairs is O(n²): 100,000 candidates would be 5·10⁹ comparisons. Instead items are *blocked*:
each item takes its `rare_terms` rarest terms among those it shares with at least one other item (document
frequency ≥ 2) and is filed under every *pair* of them (3 rare terms → 3 keys); only items filed under the
same key are compared. Near-duplicates share almost all of their terms, so two of the rarest three of one
are among the rarest three of the other: for sets of about ten terms at cosine ≥ 0.9 this misses no pair,
while unrelated items rarely share a pair of rare terms, so blocks stay tiny. An item with a single shared
term is filed under that term alone. A block of more than `max_block` items (a pair of common words) compares
each item only with its `window` neighbours in (term count, index) order. The cost is therefore at most
O(n · C(rare_terms, 2) · max(max_block, window)) pair checks, linear in n, and far less in practice.

Each compared pair is scored first by the cosine of its binary term vectors, |A∩B| / √(|A|·|B|), which is
cheap. With `verify=None` that lexical cosine is the similarity. With a `verify` callback (embedding cosine
from the service's embedder), pairs whose lexical cosine reaches `lexical_floor` are verified by it, and only
those items are embedded — most items never are. Known limit: paraphrases that share few words are not
found here (the write discipline's semantic near-duplicate merge still applies when they become records).

Merged pairs are joined with union-find, so clusters are transitive. Everything is pure Python (the Lambda
layer has no numpy).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from itertools import combinations

from ..text import tokenize

PairScorer = Callable[[Sequence[tuple[int, int]]], Sequence[float]]
"""Similarity of each (i, j) pair of item indices, e.g. the cosine of their embeddings."""


@dataclass(frozen=True)
class ClusterStats:
    items: int
    blocks: int
    compared_pairs: int
    verified_pairs: int
    merged_pairs: int
    decided_lexically: int = 0
    """Pairs over the verification budget, decided by their lexical cosine."""


def term_set(text: str) -> frozenset[str]:
    return frozenset(tokenize(text))


def lexical_cosine(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / math.sqrt(len(a) * len(b))


class _UnionFind:
    def __init__(self, size: int) -> None:
        self.parent = list(range(size))

    def find(self, item: int) -> int:
        root = item
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[item] != root:  # path compression
            self.parent[item], item = root, self.parent[item]
        return root

    def union(self, a: int, b: int) -> None:
        root_a, root_b = self.find(a), self.find(b)
        if root_a != root_b:
            # The lower index stays the root, so a cluster's root is its first item (stable representatives).
            if root_a < root_b:
                self.parent[root_b] = root_a
            else:
                self.parent[root_a] = root_b


def cluster(
    terms: Sequence[frozenset[str]],
    *,
    threshold: float,
    verify: PairScorer | None = None,
    lexical_floor: float = 0.5,
    groups: Sequence[Hashable] | None = None,
    rare_terms: int = 3,
    max_block: int = 64,
    window: int = 16,
    max_verified_items: int | None = None,
) -> tuple[list[int], ClusterStats]:
    """Cluster root of every item (the smallest index of its cluster) and what the clustering cost.

    `groups`: items of different groups never merge (compaction merges only records of one type).
    `max_verified_items`: at most this many distinct items are passed to `verify` (an embedding call each
    with a remote model); the lexically closest pairs go first, the rest are decided lexically."""
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    size = len(terms)
    if groups is not None and len(groups) != size:
        raise ValueError("groups must have one entry per item")
    blocks = _blocks(terms, groups, rare_terms)
    pairs = _candidate_pairs(blocks, terms, max_block, window)
    union = _UnionFind(size)
    scored = _lexical_pairs(pairs, terms, threshold if verify is None else lexical_floor)
    merged = 0
    to_verify: list[tuple[int, int]] = []
    decided_lexically = 0
    if verify is None:  # decided lexically: every pair over the threshold merges
        for _lexical, first, second in scored:
            union.union(first, second)
            merged += 1
    else:
        to_verify, lexical_merges, decided_lexically = _within_budget(scored, threshold, max_verified_items)
        for first, second in lexical_merges:
            union.union(first, second)
            merged += 1
        merged += _merge_verified(to_verify, verify, threshold, union)
    stats = ClusterStats(
        items=size,
        blocks=sum(1 for members in blocks.values() if len(members) >= 2),
        compared_pairs=len(pairs),
        verified_pairs=len(to_verify),
        merged_pairs=merged,
        decided_lexically=decided_lexically,
    )
    return [union.find(index) for index in range(size)], stats


def _blocks(
    terms: Sequence[frozenset[str]], groups: Sequence[Hashable] | None, rare_terms: int
) -> dict[tuple[Hashable, ...], list[int]]:
    """Blocking: each item joins the blocks keyed by pairs of its `rare_terms` rarest shared terms (within its
    group), so only items that share rare terms are ever compared."""
    frequency: Counter[str] = Counter()
    for item_terms in terms:
        frequency.update(item_terms)
    blocks: dict[tuple[Hashable, ...], list[int]] = {}
    for index, item_terms in enumerate(terms):
        shared = [term for term in item_terms if frequency[term] >= 2]
        if not shared:
            continue
        shared.sort(key=lambda term: (frequency[term], term))
        rarest = shared[:rare_terms]
        group = groups[index] if groups is not None else None
        keys = (
            [(group, *pair) for pair in combinations(rarest, 2)] if len(rarest) > 1 else [(group, rarest[0])]
        )
        for key in keys:
            blocks.setdefault(key, []).append(index)
    return blocks


def _candidate_pairs(
    blocks: dict[tuple[Hashable, ...], list[int]],
    terms: Sequence[frozenset[str]],
    max_block: int,
    window: int,
) -> list[tuple[int, int]]:
    """The distinct pairs to compare, in order: all pairs of a block up to `max_block` members, and in a larger
    one each item with the `window` items next to it by length."""
    size = len(terms)
    # Members are appended in index order, so within a block `first < second` always holds for all-pairs;
    # windowed blocks are re-sorted and normalised. A pair is encoded as one int to de-duplicate cheaply.
    seen: set[int] = set()
    for members in blocks.values():
        count = len(members)
        if count < 2:
            continue
        if count <= max_block:
            for position in range(count - 1):
                base = members[position] * size
                seen.update(base + second for second in members[position + 1 :])
        else:
            ordered = sorted(members, key=lambda index: (len(terms[index]), index))
            for position, first in enumerate(ordered):
                for second in ordered[position + 1 : position + 1 + window]:
                    seen.add(first * size + second if first < second else second * size + first)
    return [divmod(code, size) for code in sorted(seen)]


def _lexical_pairs(
    pairs: list[tuple[int, int]], terms: Sequence[frozenset[str]], floor: float
) -> list[tuple[float, int, int]]:
    """(cosine of the term sets, first, second) of the pairs at or over `floor`, in pair order."""
    scored: list[tuple[float, int, int]] = []
    sqrt = math.sqrt
    for first, second in pairs:
        a, b = terms[first], terms[second]
        lexical = len(a & b) / sqrt(len(a) * len(b))  # both non-empty: they share a block key
        if lexical >= floor:
            scored.append((lexical, first, second))
    return scored


def _within_budget(
    scored: list[tuple[float, int, int]], threshold: float, max_verified_items: int | None
) -> tuple[list[tuple[int, int]], list[tuple[int, int]], int]:
    """The pairs to verify (the lexically closest first, while their items fit `max_verified_items`), the
    pairs beyond the budget that merge lexically (at or over `threshold`), and how many were decided so."""
    to_verify: list[tuple[int, int]] = []
    merges: list[tuple[int, int]] = []
    decided_lexically = 0
    budget: set[int] = set()
    for lexical, first, second in sorted(scored, key=lambda item: (-item[0], item[1], item[2])):
        if max_verified_items is None or len(budget | {first, second}) <= max_verified_items:
            budget.update((first, second))
            to_verify.append((first, second))
        else:
            decided_lexically += 1
            if lexical >= threshold:
                merges.append((first, second))
    return to_verify, merges, decided_lexically


def _merge_verified(
    to_verify: list[tuple[int, int]], verify: PairScorer, threshold: float, union: _UnionFind
) -> int:
    """Verify the pairs in one call and merge those scoring at or over `threshold`; how many merged."""
    if not to_verify:
        return 0
    scores = verify(to_verify)
    if len(scores) != len(to_verify):
        raise ValueError("verify returned a different number of scores than pairs")
    merged = 0
    for (first, second), score in zip(to_verify, scores, strict=True):
        if score >= threshold:
            union.union(first, second)
            merged += 1
    return merged


def embedding_verifier(embed: Callable[[Sequence[int]], Sequence[Sequence[float]]]) -> PairScorer:
    """A `verify` callback from a batch embedder of item indices: embeds each involved item once (one call)
    and scores each pair by cosine similarity."""

    def verify(pairs: Sequence[tuple[int, int]]) -> list[float]:
        involved = sorted({index for pair in pairs for index in pair})
        vectors = embed(involved)
        unit = {index: _normalise(vector) for index, vector in zip(involved, vectors, strict=True)}
        return [_dot(unit[first], unit[second]) for first, second in pairs]

    return verify


def _normalise(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm > 0 else [0.0 for _ in vector]


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return max(-1.0, min(1.0, sum(x * y for x, y in zip(a, b, strict=True))))
