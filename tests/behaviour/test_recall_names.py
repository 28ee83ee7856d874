"""The vector half of a recall embeds the question without the names it mentions (issue 34, sixth round:
`focus.without_names`), through the public API of both runtimes (local server and Lambda on moto, both with
the hashing embedder). The hit's reported `similarity` is the cosine the ranking used, so it tells which text
was embedded: the memory shares the name with the question, so the two texts' cosines differ."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from agent_memory.adapters.local.embedders import HashingEmbedder
from tests.behaviour.conftest import Api

CONTENT = "Melanie: I painted a sunset at the pottery class."
QUESTION = "What did Melanie paint at the class?"
WITHOUT_NAMES = "What did paint at the class?"


def cosine(text: str) -> float:
    embedder = HashingEmbedder()
    return float(np.dot(embedder.embed_query(text), embedder.embed_documents([CONTENT])[0]))


def test_the_recall_similarity_is_the_question_without_its_names(api: Api):
    assert abs(cosine(WITHOUT_NAMES) - cosine(QUESTION)) > 0.05
    client = api.client("alpha")
    namespace = f"/projects/names-{uuid.uuid4().hex[:8]}"
    response = client.post("/v1/memories", json={"content": CONTENT, "namespace": namespace})
    assert response.status_code in (200, 201), response.text
    response = client.post("/v1/recall", json={"query": QUESTION, "namespaces": [namespace], "k": 1})
    assert response.status_code == 200, response.text
    (hit,) = response.json()["results"]
    assert hit["memory"]["content"] == CONTENT
    assert hit["similarity"] == pytest.approx(cosine(WITHOUT_NAMES), abs=1e-3)
