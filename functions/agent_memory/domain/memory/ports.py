"""The memory wing's own ports: lexical knowledge for the write discipline's merge guard (issue 27), and the
optional second-stage reranker of recall (issue 34).

The wing's other ports (records, index, embedder, clock) are the shared ones in `domain/ports.py`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class Lexicon(Protocol):
    """What words mean, from a dictionary shipped as data (adapters/lexicon). Every answer is about general
    words; a word the lexicon does not know has no synonyms, which only keeps two memories apart."""

    def same_sense(self, first: str, second: str) -> bool:
        """Whether the two words (inflected forms allowed, multiword phrases with spaces) name one thing in
        their most frequent sense: true synonyms and abbreviations ("cilantro" / "coriander", "CEO" / "chief
        executive officer"), never two things of one kind ("cat" / "dog", "Monday" / "Friday")."""
        ...

    def antonyms(self, word: str) -> frozenset[str]:
        """Words of opposite meaning in some sense of the word ("like" → "dislike", "hot" → "cold")."""
        ...

    def base_forms(self, word: str) -> frozenset[str]:
        """The word's dictionary forms ("replies" → "reply"); empty when the lexicon does not know it."""
        ...

    def defines(self, first: str, second: str) -> bool:
        """Whether the first word is defined through the second, so that a statement using one says what one
        using the other does: derived from it ("flight" / "fly"), or its definition names the second word or
        the specific kind of thing the second is ("pediatric": "of or relating to the medical care of
        *children*"; "drive": "operate or control a *vehicle*", a car being a vehicle). Never two things of
        one domain defined through each other ("mother" / "child", "host" / "guest", "kitten" / "cat")."""
        ...

    def one_kind(self, first: str, second: str) -> bool:
        """Whether the two words name two different things of one close kind ("afternoon" / "evening",
        "car" / "bus", "cat" / "dog"): values of one attribute, never a paraphrase of each other."""
        ...

    def kin_through(self, relative: str, other: str) -> bool:
        """Whether `relative` names a kind of relative ("mom", "father", "parent"; not "nanny", "teacher")
        whose definition names the thing `other` names ("mother": "a woman who has given birth to a *child*";
        "kid" = "child"), so that "a mom of three" says what "three kids" does."""
        ...

    def kinds_of_name(self, name: str) -> frozenset[str]:
        """What the place or thing a proper name names is an instance and a part of, a level or two up
        ("Tampa" → "city", "Florida", "American state"): words a question may ask by ("Which US state…")
        that a statement naming the place does not say. Empty for a common noun or an unknown name."""
        ...


@dataclass(frozen=True)
class RerankedDocument:
    """One document of a reranker's answer: its position in the list it was given, and its relevance."""

    index: int
    score: float


class Reranker(Protocol):
    """A second-stage reranker (a cross-encoder behind an API): reads the question with each candidate's text
    and scores how well the text answers it. Optional and per request (`RecallInput.rerank`)."""

    name: str
    """What a recall names to use it (`"bedrock"`)."""
    model: str
    """The model it calls, reported with every reranked recall."""

    def rerank(self, query: str, documents: Sequence[str]) -> list[RerankedDocument]:
        """Every document's index and score, most relevant first. Raises `UpstreamUnavailable` (throttled,
        timed out, the service down) or `UpstreamFailed` (refused: access, model, request): recall then keeps its
        own order (domain/memory/reranking.py)."""
