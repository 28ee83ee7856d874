"""Score fusion with a flat vector half (MemoryPolicy.vector_min_span): cosines that all sit within noise of
each other are not stretched to [0, 1], so they cannot outvote a strong keyword match; a vector list with a
clear winner is scaled exactly as before."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.domain.memory.recall import score_fusion
from agent_memory.domain.ports import Hit

FLAT = [Hit("vector-only", 0.84), Hit("both", 0.82), Hit("other", 0.80)]  # a 0.04 span: noise
KEYWORD = [Hit("both", 9.0), Hit("keyword-only", 5.0)]


def order(min_span: float) -> list[str]:
    return [f.record_id for f in score_fusion(FLAT, KEYWORD, 60, 0.4, min_span)]


def test_a_flat_vector_list_no_longer_outvotes_a_strong_keyword_match():
    # stretched to [0, 1], a 0.04 lead in cosine is worth more than a keyword match of 5/9 of the best
    assert order(0.0).index("vector-only") < order(0.0).index("keyword-only")
    with_floor = order(MemoryPolicy().vector_min_span)
    assert with_floor[0] == "both"
    assert with_floor.index("keyword-only") < with_floor.index("vector-only")


def test_a_vector_list_with_a_clear_winner_is_scaled_as_before():
    spread = [Hit("a", 0.90), Hit("b", 0.70), Hit("c", 0.60)]
    plain = {f.record_id: f.relevance for f in score_fusion(spread, KEYWORD, 60, 0.4, 0.0)}
    floored = {f.record_id: f.relevance for f in score_fusion(spread, KEYWORD, 60, 0.4, 0.08)}
    assert plain == floored


@given(
    st.lists(st.floats(min_value=-1.0, max_value=1.0), min_size=1, max_size=30),
    st.lists(st.floats(min_value=0.0, max_value=50.0), max_size=30),
    st.floats(min_value=0.0, max_value=1.0),
    st.floats(min_value=0.0, max_value=1.0),
)
def test_relevance_stays_in_unit_range(cosines, bm25, weight, min_span):
    vector = [Hit(f"v{i}", c) for i, c in enumerate(cosines)]
    keyword = [Hit(f"k{i}", s) for i, s in enumerate(bm25)]
    for fused in score_fusion(vector, keyword, 60, weight, min_span):
        assert fused.relevance is not None and -1e-9 <= fused.relevance <= 1.0 + 1e-9
