"""Who does what to whom, and when (issue 27): the parts names and pronouns play in a statement (the voice, a
pronoun's case) and the tense of its auxiliaries. Two statements with the same words may still say different
things: "Maria hired Bob" / "Bob hired Maria", "I report to Ana" / "Ana reports to me", "has a cat" / "had a
cat". The merge guard (`merge_guard.same_statement`) and the paraphrase reading (`paraphrase`) ask these."""

from __future__ import annotations

from ..patterns import lazy
from .slots import SOFT, terms
from .tokens import normalize, speaker, stem, tokens

_PASSIVE_RE = lazy(
    r"\b(?:is|are|was|were|be|been|being|gets|got|get)\s+(?:\w+\s+){0,2}?(?P<verb>\w+(?:ed|en|wn|t|d))\s+by\b"
)


def same_roles(new: str, old: str, names: frozenset[str]) -> bool:
    """Whether `names` play the same parts in both statements. Without a passive on one side only, the names
    come in the same order ("Maria hired Bob" is not "Bob hired Maria"); with a passive on one side only
    ("The billing service is owned by Maria" / "Maria owns the billing service") the statements must start
    with different participants, so "Maria was hired by Bob" is not "Maria hired Bob"."""
    new_terms = [t for t in terms(new) if t.kind in ("word", "entity") and t.key not in SOFT]
    old_terms = [t for t in terms(old) if t.kind in ("word", "entity") and t.key not in SOFT]
    new_keys, old_keys = [t.key for t in new_terms], [t.key for t in old_terms]
    # A name is found by how it is written, not by its stem alone ("meeting" is no mention of "Google Meet")
    written = {t.surface for t in (*new_terms, *old_terms) if t.kind == "entity"}
    new_order = [k for k in dict.fromkeys(t.key for t in new_terms if t.surface in written) if k in names]
    old_order = [k for k in dict.fromkeys(t.key for t in old_terms if t.surface in written) if k in names]
    new_passive, old_passive = _PASSIVE_RE.search(normalize(new)), _PASSIVE_RE.search(normalize(old))
    if bool(new_passive) == bool(old_passive):  # the names both statements write, in the same order
        return [k for k in new_order if k in old_order] == [k for k in old_order if k in new_order]
    passive, active = (new_passive, old) if new_passive else (old_passive, new)
    if passive is None or stem(passive.group("verb")) not in {t.key for t in tokens(normalize(active))}:
        return True  # another verb ("works at Globex" / "is employed by Globex"): no voice to compare
    return new_keys[:1] != old_keys[:1]  # the passive puts the other participant first


_CASES = {
    "i": ("<user>", "subject"), "me": ("<user>", "object"), "we": ("<we>", "subject"), "us": ("<we>", "object"),
    "he": ("<he>", "subject"), "him": ("<he>", "object"), "she": ("<she>", "subject"),
    "they": ("<they>", "subject"), "them": ("<they>", "object"),
}  # fmt: skip
"""Pronouns whose form tells their part ("I" does, "me" is done to); "her", "my", "the user" do not tell it."""


def _cases(text: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for token in tokens(normalize(speaker(text)[1])):
        if token.surface in _CASES:
            person, case = _CASES[token.surface]
            found.setdefault(person, set()).add(case)
    return found


def same_participants(new: str, old: str) -> bool:
    """Whether no person is the subject of one statement and only the object of the other, when neither or
    both are passive: "I report to Ana" is not "Ana reports to me" (`same_roles` compares names only; pronouns
    are no terms)."""
    if bool(_PASSIVE_RE.search(normalize(new))) != bool(_PASSIVE_RE.search(normalize(old))):
        return True  # `same_roles` reads the voice
    new_cases, old_cases = _cases(new), _cases(old)
    return all(
        len(cases) > 1 or len(old_cases.get(person, cases)) > 1 or old_cases.get(person, cases) == cases
        for person, cases in new_cases.items()
    )


_TENSES = {
    "is": ("be", "present"), "are": ("be", "present"), "am": ("be", "present"), "was": ("be", "past"),
    "were": ("be", "past"), "has": ("have", "present"), "have": ("have", "present"), "had": ("have", "past"),
    "do": ("do", "present"), "does": ("do", "present"), "did": ("do", "past"),
}  # fmt: skip


def _tenses(text: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for token in tokens(normalize(speaker(text)[1])):
        if token.surface in _TENSES:
            verb, tense = _TENSES[token.surface]
            found.setdefault(verb, set()).add(tense)
    return found


def tenses(text: str) -> frozenset[str]:
    """The tenses of the statement's auxiliaries ("I'm a mom" → present, "I had kids" → past)."""
    return frozenset(tense for found in _tenses(text).values() for tense in found)


def tense_differs(new: str, old: str) -> bool:
    """Whether the same auxiliary is in another tense ("has a cat" / "had a cat", "is on Monday" / "was on
    Monday"). A verb on one side only says nothing ("Maria was hired by Bob" / "Bob hired Maria")."""
    new_tenses, old_tenses = _tenses(new), _tenses(old)
    return any(verb in old_tenses and not (tenses & old_tenses[verb]) for verb, tenses in new_tenses.items())
