"""How a new statement relates to an existing one: the decision table of the write discipline (issue 27).

`relate(new, old)` answers one of:

* `same` — the same statement (merging loses nothing; the caller still checks `slots.same_statement`);
* `update` — the same subject and attribute with a new value: the new statement supersedes the old one;
* `possible_update` — weaker evidence of an update: both stay current, linked newest first;
* `compatible` — both hold (or nothing ties them together): neither is touched.

Evidence, strongest first:

1. the opposition rules of `contradiction.assess`: an explicit replacement ("switched from A to C") of
   something the old statement says, a negation of what it asserts ("no longer likes coffee"), a changed
   value in a copula frame ("the deadline is March 3" → "moved to March 10");
2. the compared items of a preference swapped ("tabs over spaces" → "spaces over tabs");
3. a parallel statement: the two align term by term (`slots.terms`) and differ in one slot. A value slot
   (number, version, date, weekday, time) is an update; a name or word slot is an update when the predicate
   holds one value at a time ("works at", "lives in", "is the team lead") or the new statement carries a
   change cue ("now", "moved to", "left"), a possible update when the predicate is unknown, and compatible
   when it holds many ("speaks", "likes", "has a dog") or the two are events ("visited Rome");
4. one attribute named by different verbs with a change cue ("lives in Berlin" → "moved to Munich").

What keeps compatible facts untouched: an additive cue ("also", "too", "another"), a statement about the past
("used to", an earlier year), statements of different speakers, a negation about something else ("never
uses Windows" / "uses macOS"), and two or more differing details ("tabs in Go" / "spaces in YAML")."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

from ..patterns import lazy
from . import contradiction
from .slots import SOFT, Term, is_date, ordered_pairs, terms
from .tokens import normalize, quote, speaker, stem

RelationKind = Literal["same", "update", "possible_update", "compatible"]


@dataclass(frozen=True)
class Relation:
    kind: RelationKind
    reason: str


_CHANGE_CUE_RE = lazy(
    r"\b(?:now|no\s+longer|any\s*more|moved|moving|relocated|switched|switching|changed|changing|upgraded|"
    r"downgraded|migrated|rewritten|re-?written|left|leaving|joined|became|become|becomes|instead|replaced|"
    r"replacing|from\s+now\s+on|as\s+of|these\s+days|nowadays|again|back\s+to|is\s+back|are\s+back|starting|"
    r"effective|new|newly|renamed|rescheduled|bumped|raised|lowered|increased|decreased|reduced|extended|"
    r"shortened|promoted|stepped\s+down|took\s+over|taken\s+over|handed\s+over|updated|turned|after\s+all|"
    r"anymore|not\s+anymore|latest|currently)\b"
    r"|现在|改|换|搬|已经|不再|jetzt|nun|maintenant|désormais|ahora|ya\s+no"
)
_ADDITIVE_CUE_RE = lazy(
    r"\b(?:also|too|as\s+well|another|additionally|in\s+addition|besides|plus|both|second|other|except|"
    r"exception|unless|only\s+for|but\s+for|when|if)\b|也|还|auch|aussi|también"
)
_PAST_RE = lazy(
    r"\b(?:used\s+to|formerly|previously|back\s+in|as\s+a\s+kid|as\s+a\s+child|growing\s+up|grew\s+up|"
    r"years\s+ago|in\s+the\s+past|once|when\s+i\s+was)\b"
)
_YEAR_RE = lazy(r"\b(19\d\d|20\d\d)\b")
_ROLE_FRAME_RE = lazy(
    r"\b(?:is|are|was|'s)\s+(?:now\s+)?(?:the|our|my|their|his|her|its)\s+(?:new\s+)?\w+"
    r"|\b(?:leads|owns|manages|runs|heads|maintains|chairs)\s+(?:the|our)\b"
)

# Predicates (as stems) holding one value at a time, and predicates holding many. A predicate in neither list
# gives a weaker answer (`possible_update`) for a changed name or word.
_SINGLE_WORDS = """
    live lives living lived reside based located home hometown work works working worked employ employed employer
    job prefer prefers preferred favorite favourite target targets run runs running deploy deploys deployed host
    hosted written write name named called call timezone email phone address age birthday married lead leads
    manager manages owner owns default version port region limit deadline due schedule scheduled rotate rotation
    budget price cost salary rent editor shell theme mode language framework database stack provider plan tier
    team manager boss partner spouse wife husband capital weight height size length count total status
"""
_MULTI_WORDS = """
    speak speaks spoke fluent like likes liked love loves loved enjoy enjoys enjoyed have has had own owns know
    knows visit visits visited play plays played collect collects read reads watch watches listen listens
    allergic allergy interest interested learn learns learning study studies support supports attend attends
    follow follows eat eats drink drinks cook cooks friend friends sibling siblings kid kids child children
    pet pets dog dogs cat cats hobby hobbies member tool tools dislike dislikes hate hates skill skills
"""
_SINGLE = frozenset(stem(word) for word in _SINGLE_WORDS.split())
_MULTI = frozenset(stem(word) for word in _MULTI_WORDS.split())
_NOT_EVENTS = frozenset(
    stem(w)
    for w in [
        "based",
        "located",
        "named",
        "called",
        "married",
        "employed",
        "interested",
        "allergic",
        "used",
        "supposed",
        "scheduled",
    ]
)
_IRREGULAR_PAST = frozenset(
    [
        "went",
        "saw",
        "met",
        "bought",
        "ate",
        "took",
        "got",
        "ran",
        "flew",
        "won",
        "lost",
        "made",
        "gave",
        "wrote",
        "drove",
        "rode",
        "swam",
        "sang",
        "began",
    ]
)
# Attributes worded by different verbs: a change cue on one and the attribute on the other is one attribute.
_ATTRIBUTES = (
    (lazy(r"\b(?:live[sd]?|living|reside[sd]?|based|home\s+is|located)\s+(?:in|at|near|on)\b"),
     lazy(r"\b(?:moved|moving|relocated|relocating|moves)\s+(?:back\s+)?(?:to|in)\b")),
    (lazy(r"\b(?:work(?:s|ed|ing)?\s+(?:at|for)|employed\s+(?:at|by)|job\s+at|employer)\b"),
     lazy(r"\b(?:joined|joins|started\s+(?:at|working\s+(?:at|for))|switched\s+jobs?\s+to|hired\s+by|left)\b")),
)  # fmt: skip


def relate(new: str, old: str) -> Relation:
    """How `new`, written now, relates to `old`, an existing memory (see the module docstring)."""
    return _relate(new, old)


@functools.lru_cache(maxsize=16384)
def _relate(new: str, old: str) -> Relation:
    new_speaker, new_body = speaker(new)
    old_speaker, old_body = speaker(old)
    if new_speaker and old_speaker and new_speaker != old_speaker:
        return Relation("compatible", f"said by different speakers ('{new_speaker}', '{old_speaker}')")
    if normalize(new_body) == normalize(old_body):
        return Relation("same", "the same statement")
    guard = _keeps_both(normalize(new_body), normalize(old_body))
    if guard is not None:
        return guard
    opposed = _opposition(new, old)
    if opposed is not None:
        return opposed
    swapped = _swapped_order(new, old)
    if swapped is not None:
        return swapped
    parallel = _parallel(new_body, old_body)
    if parallel is not None:
        return parallel
    attribute = _same_attribute(normalize(new_body), normalize(old_body))
    if attribute is not None:
        return attribute
    return Relation("compatible", "no shared attribute with a changed value")


def _keeps_both(new: str, old: str) -> Relation | None:
    if _PAST_RE.search(old) and not _PAST_RE.search(new):
        return Relation("compatible", "the older statement is about the past")
    if _PAST_RE.search(new) and not _PAST_RE.search(old):
        return Relation("compatible", "the new statement is about the past")
    new_years = [int(y) for y in _YEAR_RE.findall(new)]
    old_years = [int(y) for y in _YEAR_RE.findall(old)]
    if new_years and old_years and max(new_years) < min(old_years):
        return Relation("compatible", "the new statement is about an earlier year")
    if _ADDITIVE_CUE_RE.search(new) and not contradiction.negation_cue(new):
        return Relation("compatible", "the new statement adds to the old one")
    return None


_OPPOSITION = {
    "replacement": "update",
    "negation": "update",
    "switch": "update",
    "partial_negation": "possible_update",
}


def _opposition(new: str, old: str) -> Relation | None:
    assessment = contradiction.assess(new, old)
    if assessment.kind == "supersedes" and assessment.basis == "value":
        return None  # a value frame: the parallel rules below weigh the predicate
    mapped = _OPPOSITION.get(assessment.basis)
    if mapped == "update" and assessment.kind == "supersedes":
        return Relation("update", assessment.reason)
    if mapped == "possible_update":
        return Relation("possible_update", assessment.reason)
    if assessment.basis in ("polarity_other_topic", "polarity_other_subject", "implicit_negative"):
        return Relation("compatible", assessment.reason)
    if assessment.basis in ("speakers_differ", "weak_passage", "replacement_known", "switch_known"):
        return Relation("compatible", assessment.reason)
    return None


def _swapped_order(new: str, old: str) -> Relation | None:
    new_pairs, old_pairs = ordered_pairs(new), ordered_pairs(old)
    for pair in new_pairs:
        if (pair[1], pair[0]) in old_pairs:
            return Relation(
                "update", f"the order of compared items changed: now '{pair[0]}' over '{pair[1]}'"
            )
    return None


def _core(text: str) -> list[Term]:
    """Terms without soft words and change cues: the frame and its values."""
    return [
        t
        for t in terms(text)
        if not (
            t.kind == "word" and (t.key in SOFT or t.surface in SOFT or _CHANGE_CUE_RE.fullmatch(t.surface))
        )
    ]


@dataclass(frozen=True)
class _Difference:
    old: tuple[Term, ...]
    new: tuple[Term, ...]

    @property
    def kind(self) -> str:
        both = (*self.old, *self.new)
        if any(t.kind == "negation" for t in both):
            return "negation"
        if any(t.kind == "value" for t in both):
            return "value"
        if any(t.kind == "entity" for t in both):
            return "entity"
        return "word"

    def describe(self) -> str:
        was = " ".join(t.surface for t in self.old) or "—"
        now = " ".join(t.surface for t in self.new) or "—"
        return f"'{quote(was, 30)}' → '{quote(now, 30)}'"


def _differences(old: list[Term], new: list[Term]) -> tuple[list[_Difference], int]:
    """The non-equal stretches of the two term sequences and the number of shared terms. An inserted stretch
    that only repeats the old value ("Bob is the lead now; Alice left") is not a difference."""
    matcher = SequenceMatcher(None, [t.key for t in old], [t.key for t in new], autojunk=False)
    shared = 0
    found: list[_Difference] = []
    old_keys = {t.key for t in old}
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            shared += i2 - i1
            continue
        found.append(_Difference(tuple(old[i1:i2]), tuple(new[j1:j2])))
    replaced = {t.key for d in found if d.old and d.new for t in d.old}
    found = [
        d
        for d in found
        if d.old or not all(t.key in replaced or t.key in old_keys for t in d.new) or not replaced
    ]
    return found, shared


def _parallel(new: str, old: str) -> Relation | None:
    new_terms, old_terms = _core(new), _core(old)
    differences, shared = _differences(old_terms, new_terms)
    if not differences or shared == 0:
        return None
    content_shared = shared - sum(1 for t in new_terms if t.kind == "value" and t in old_terms)
    if content_shared < 1:
        return None
    kinds = {d.kind for d in differences}
    if "negation" in kinds:
        return None
    cue = bool(_CHANGE_CUE_RE.search(normalize(new)))
    frame = _frame_keys(old_terms, differences)
    if len(differences) > 1:
        if kinds == {"value"} and _dated(differences) and not _events(new, old):
            changes = "; ".join(d.describe() for d in differences)
            return Relation("update", f"same statement with new values: {changes}")
        return None  # two details differ: different scopes ("tabs in Go" / "spaces in YAML")
    difference = differences[0]
    if not difference.old or not difference.new:
        return None  # one adds a detail to the other: a refinement, both hold
    if len(difference.old) > 3 or len(difference.new) > 3:
        return None
    return _one_slot(new, old, difference, frame, cue)


def _one_slot(new: str, old: str, difference: _Difference, frame: set[str], cue: bool) -> Relation:
    what = difference.describe()
    role = bool(_ROLE_FRAME_RE.search(normalize(old))) and bool(_ROLE_FRAME_RE.search(normalize(new)))
    if _events(new, old) and not cue:
        return Relation("compatible", f"two events ({what})")
    multi = bool(frame & _MULTI) and not (frame & _SINGLE) and not role
    if difference.kind == "value":
        if multi and not _quantity(difference):
            return Relation("compatible", f"a predicate that holds many values ({what})")
        return Relation("update", f"the same statement with a new value: {what}")
    if multi and not cue:
        return Relation("compatible", f"a predicate that holds many values ({what})")
    if cue or role or frame & _SINGLE:
        return Relation("update", f"the same attribute with a new value: {what}")
    if difference.kind == "entity" or len(frame) >= 2:
        return Relation("possible_update", f"the same statement with another detail: {what}")
    return Relation("compatible", f"too little in common to tell ({what})")


def _dated(differences: list[_Difference]) -> bool:
    """One of the changed values is a date or time: a dated entry of one attribute ("- 2026-03-03: weight 80 kg"),
    not two identifiers ("service 1 on port 8001")."""
    return any(is_date(t.key) for d in differences for t in (*d.old, *d.new) if t.kind == "value")


def _quantity(difference: _Difference) -> bool:
    return any(t.key.startswith("n") for t in (*difference.old, *difference.new) if t.kind == "value")


def _frame_keys(old_terms: list[Term], differences: list[_Difference]) -> set[str]:
    differing = {t.key for d in differences for t in (*d.old, *d.new)}
    return {t.key for t in old_terms if t.kind == "word" and t.key not in differing}


def _events(new: str, old: str) -> bool:
    return _is_event(normalize(new)) and _is_event(normalize(old))


def _is_event(text: str) -> bool:
    for word in text.split():
        word = word.strip(".,;:!?\"'")
        if word in _IRREGULAR_PAST:
            return True
        if (
            word.endswith("ed")
            and len(word) > 4
            and stem(word) not in _NOT_EVENTS
            and stem(word) not in _SINGLE
        ):
            return True
    return False


def _same_attribute(new: str, old: str) -> Relation | None:
    """One attribute worded by different verbs: the old statement states it, the new one changes it."""
    for states, changes in _ATTRIBUTES:
        if (states.search(old) or changes.search(old)) and changes.search(new) and not states.search(new):
            return Relation("update", f"the same attribute changed: '{quote(new, 50)}'")
        if states.search(old) and states.search(new) and _CHANGE_CUE_RE.search(new):
            return Relation("update", f"the same attribute with a change cue: '{quote(new, 50)}'")
    return None
