"""Turn context in the vector half (issue 34, domain/memory/context.turn_vectors): a conversation turn is
indexed with its content's vector plus a share of its neighbouring turns' of the same session; other batch
items keep their own vector."""

from __future__ import annotations

import math

from agent_memory.domain.memory.context import turn_vectors
from agent_memory.domain.memory.inputs import RememberInput
from agent_memory.domain.ports import Embedding
from agent_memory.domain.records import EmbedderIdentity

MODEL = EmbedderIdentity(name="test", version="1", dimensions=3)


def item(content: str, session: str | None) -> tuple[int, RememberInput, None]:
    metadata = {"session_date": session} if session is not None else {}
    return 0, RememberInput(content=content, namespace="/chat", metadata=metadata), None


def vec(*values: float) -> Embedding:
    return Embedding(list(values), MODEL)


def test_a_turn_vector_takes_a_share_of_its_neighbours_in_the_same_session():
    batch = [item("a", "8 May 2023"), item("b", "8 May 2023"), item("c", "9 May 2023")]
    out = turn_vectors(batch, [vec(1, 0, 0), vec(0, 1, 0), vec(0, 0, 1)], 0.5)
    # "a" and "b" see each other; "c" is another session's turn and keeps its own vector
    assert out[0] == vec(1 / math.sqrt(1.25), 0.5 / math.sqrt(1.25), 0)
    assert out[1] == vec(0.5 / math.sqrt(1.25), 1 / math.sqrt(1.25), 0)
    assert out[2] == vec(0, 0, 1)
    assert all(vector.identity == MODEL for vector in out)


def test_items_outside_a_conversation_and_a_zero_weight_keep_their_own_vectors():
    batch = [item("a", None), item("b", None)]
    vectors = [vec(1, 0, 0), vec(0, 1, 0)]
    assert turn_vectors(batch, vectors, 0.5) == vectors
    dated = [item("a", "8 May 2023"), item("b", "8 May 2023")]
    assert turn_vectors(dated, vectors, 0.0) == vectors
