"""An update told by an opposite word (issue 27): "The API is fast" → "The API is slow". The two statements
hold the same terms in the same order except one word on each side, and the lexicon names those two words
antonyms (WordNet's antonym pointers: "fast"/"slow", "happy"/"unhappy", "public"/"private"), standing after
the linking verb (said of the subject, not naming it: "the left panel" / "the right panel" are two panels).
One claim each; pure: the lexicon is a port (`ports.Lexicon`)."""

from __future__ import annotations

from ..patterns import lazy
from .frames import Relation
from .ports import Lexicon
from .slots import SOFT, Term, negations, terms
from .tokens import normalize, single_claim, speaker

_LINK_RE = lazy(
    r"\b(?:is|are|am|was|were|be|been|feels?|seems?|looks?|stays?|remains?|becomes?|became|got|gets|keeps?)\b"
)
"""A verb linking a subject to what is said of it: the opposite word must stand after it."""


def _predicate(text: str, word: str) -> bool:
    """Whether `word` stands after the statement's linking verb (what is said of the subject)."""
    normalized = normalize(speaker(text)[1])
    link = _LINK_RE.search(normalized)
    return link is not None and word in normalized[link.end() :].split()


def _core(text: str) -> list[Term]:
    return [t for t in terms(text) if not (t.kind == "word" and (t.key in SOFT or t.surface in SOFT))]


def opposite_word(new: str, old: str, lexicon: Lexicon | None) -> Relation | None:
    """An update when `new` says `old` with one word replaced by its antonym, under the same polarity and by
    the same speaker; None otherwise (also without a lexicon)."""
    if lexicon is None or speaker(new)[0] != speaker(old)[0] or negations(new) != negations(old):
        return None
    if not (single_claim(normalize(speaker(new)[1])) and single_claim(normalize(speaker(old)[1]))):
        return None  # passages share words by chance (the opposition rules alone read them)
    new_terms, old_terms = _core(new), _core(old)
    if len(new_terms) != len(old_terms) or len(new_terms) < 2:
        return None
    differing = [(n, o) for n, o in zip(new_terms, old_terms, strict=True) if n.key != o.key]
    if len(differing) != 1:
        return None
    now, before = differing[0]
    if now.kind != "word" or before.kind != "word":
        return None
    if not (_predicate(new, now.surface) and _predicate(old, before.surface)):
        return None  # "The left panel is wide" / "The right panel is wide": two subjects, not a change
    if now.surface in lexicon.antonyms(before.surface) or before.surface in lexicon.antonyms(now.surface):
        return Relation(
            "update", f"the same statement with the opposite word: '{before.surface}' → '{now.surface}'"
        )
    return None
