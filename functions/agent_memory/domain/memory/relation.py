"""How a new statement relates to an existing one: the decision table of the write discipline (issue 27).

`relate(new, old)` answers one of:

* `same` — the same statement (merging loses nothing; the caller still checks `merge_guard.same_statement`);
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
4. one attribute named by different verbs with a change cue ("lives in Berlin" → "moved to Munich");
5. a change told as a story (`narrative`): a bare new reading of a measure ("I weigh 90 kg" → "down to 86
   kg"), the same subject changed to another target ("upgraded to an iPhone 14" → "switched to a Pixel 8").

Before all of them: a verb redone ("relicensed" after "licensed") is read as that verb with a change cue, and
a rule's rationale ("**Why:** …") is set aside: a rationale alone is compatible with any rule, two rules told
with rationales relate as the rules do.

What keeps compatible facts untouched: an additive cue ("also", "too", "another"), a statement about the past
("used to", an earlier year), statements of different speakers, a negation about something else ("never
uses Windows" / "uses macOS"), and two or more differing details ("tabs in Go" / "spaces in YAML")."""

from __future__ import annotations

import re

from ..memo import memo
from ..patterns import lazy
from . import contradiction, copula, cues, frames, holders, narrative, possession
from .assessment import Assessment
from .frames import Relation
from .slots import SOFT, meaning, negations, ordered_pairs, terms
from .tokens import normalize, single_claim, speaker, stem


def relate(new: str, old: str) -> Relation:
    """How `new`, written now, relates to `old`, an existing memory (see the module docstring). Whatever rule
    reads an update, two nested holders ("the user" / "the user's son") keep both (`possession`)."""
    return possession.one_holder(new, old, _relate(new, old))


_REDONE_RE = lazy(r"\bre-?(?P<verb>[a-z]{4,}(?:ed|en))\b")


def _redone(new: str, old: str) -> str:
    """`new` with a verb redone ("relicensed", "re-hosted", "reassigned") written as the verb the old statement
    uses and a change cue ("now licensed"), when the old statement holds that verb: one attribute, changed."""
    words = set(normalize(old).split())

    def plain(match: re.Match[str]) -> str:
        return f"now {match['verb']}" if match["verb"] in words else match[0]

    return _REDONE_RE.sub(plain, new)


_RATIONALE_RE = lazy(
    r"[*_]{2}(?:why|reason|rationale|how\s+to\s+apply)[*_]{0,2}\s*:|"
    r"(?:^|(?<=[.!?\n]))\s*(?:why|reason|rationale)\s*:",
    re.IGNORECASE,
)
"""A rationale's marker: "**Why:**", "_Reason:_", or "Why:" / "Reason:" starting a sentence (not "ask why: …")."""


def _rule(text: str) -> str:
    """The rule a statement states without its rationale ("Never deploy on Fridays. **Why:** …"); empty when
    the statement is only a rationale."""
    found = _RATIONALE_RE.search(text)
    return text if found is None else text[: found.start()].strip()


def rationale_only(new: str, old: str) -> bool:
    """Whether one of the statements is only a rationale (a "**Why:**" line): compatible with any rule."""
    return (_rule(new) != new or _rule(old) != old) and not (_rule(new) and _rule(old))


def _rationale_aside(new: str, old: str) -> Relation | None:
    """A rule and its rationale are compatible; two rules told with rationales relate as the rules do (the
    deploy window changed, its reason kept), unless the rules are the same (then the rationales differ)."""
    new_rule, old_rule = _rule(new), _rule(old)
    if new_rule == new and old_rule == old:
        return None
    if rationale_only(new, old):
        return Relation("compatible", "a rule's rationale (a '**Why:**' line)")
    rel = _relate(new_rule, old_rule)
    return None if rel.kind == "same" else Relation(rel.kind, f"the rules, rationale aside: {rel.reason}")


@memo(maxsize=16384)
def _relate(new: str, old: str) -> Relation:
    new = _redone(new, old)
    aside = _rationale_aside(new, old)
    if aside is not None:
        return aside
    new_speaker, new_body = speaker(new)
    old_speaker, old_body = speaker(old)
    if new_speaker and old_speaker and new_speaker != old_speaker:
        return Relation("compatible", f"said by different speakers ('{new_speaker}', '{old_speaker}')")
    if normalize(new_body) == normalize(old_body):
        return Relation("same", "the same statement")
    if _asks(new_body):
        return Relation("compatible", "the new statement asks a question: it states no value")
    guard = _keeps_both(normalize(new_body), normalize(old_body))
    if guard is not None:
        return guard
    assessment = contradiction.assess(new, old)  # once: the rules below read it twice
    opposed = _opposition(new, old, assessment)
    if opposed is not None:
        return opposed
    swapped = _swapped_order(new, old)
    if swapped is not None:
        return swapped
    if not (_one_claim(new_body) and _one_claim(old_body)):
        # Passages (a chat turn of several sentences): they share frames and cues by chance, so only the
        # opposition rules above count (LoCoMo turns: weaker rules superseded 28 of 788 turns).
        return Relation("compatible", "passages: only an explicit replacement or negation counts")
    for rule in (_role_and_place, _role_copula, frames.roles, frames.key_value, frames.named_versions):
        found = rule(new_body, old_body)
        if found is not None:
            return found
    if assessment.basis in ("replacement_known", "switch_known"):
        return Relation("compatible", assessment.reason)  # the old statement already names the new value
    parallel = frames.parallel(new_body, old_body)
    if parallel is not None:
        return parallel
    attribute = frames.same_attribute(normalize(new_body), normalize(old_body))
    if attribute is not None:
        return attribute
    for told in (
        frames.changed_topic,
        narrative.measurement,
        narrative.count_change,
        narrative.change_target,
    ):
        found = told(new_body, old_body)
        if found is not None:
            return found
    return Relation("compatible", "no shared attribute with a changed value")


_PLACE_RE = lazy(
    r"\b(?:moved|moving|relocated|relocating|lives|lived|living|(?:is|are|was)\s+based|settled)\s+"
    r"(?:back\s+)?(?:to|in|at|from|near)\b"
)
"""Where someone is or goes: a move or a home ("moved to Berlin", "lives in Lisbon", "is based in Oslo")."""
_CLAUSES_RE = lazy(r"[,;]|\s(?:and|but|while|whereas)\s", re.IGNORECASE)


def _role_and_place(new: str, old: str) -> Relation | None:
    """One statement names a role its holder holds ("Maya is the team lead", "Elif is Ravi's mentor":
    `copula.read`), the other where that holder lives or moves ("Maya moved to Berlin"): two attributes of
    one holder, both hold. A move of a role's value ("the default region moved to …") is not this: there the
    role is the holder, not the one moving."""
    for role_text, other in ((old, new), (new, old)):
        reading = copula.read(role_text)
        if reading is None or _PLACE_RE.search(normalize(other)) is None or _CLAUSES_RE.search(other):
            continue  # a second clause may say who holds the role now ("…, Lena is the PM now")
        mover = holders.holder_words(other)
        if mover and {stem(word) for word in mover} == set(reading.value):
            return Relation(
                "compatible", f"a role ('{reading.said}') and a place of '{reading.shown}': two attributes"
            )
    return None


def _role_copula(new: str, old: str) -> Relation | None:
    """Two copulas that name roles (`copula.read`: "X is Y's R", "Y's R is X", "the R of Y"): another role or
    another possessor is another attribute (both hold: "X is Y's mentor" / "X is Y's manager", "Ravi's mentor"
    / "Ana's mentor"); the same attribute with another value and a change cue in the new statement is an
    update, whichever side each writes it on. None when either is not such a copula, the values are the same,
    or no change is named: the other rules decide."""
    new_reading, old_reading = copula.read(new), copula.read(old)
    if new_reading is None or old_reading is None:
        return None
    if new_reading.attribute != old_reading.attribute:
        return Relation("compatible", f"another attribute: '{new_reading.said}' / '{old_reading.said}'")
    changed = new_reading.taken or cues.CHANGE_CUE_RE.search(normalize(new)) is not None
    if new_reading.value == old_reading.value or not changed:
        return None
    reason = f"the same attribute told either way round: '{new_reading.said}' is now '{new_reading.shown}'"
    return Relation("update", reason)


_ABBREVIATION_RE = lazy(r"\b(dr|mr|mrs|ms|st|prof|jr|sr|vs|etc|e\.g|i\.e|no)\.", re.IGNORECASE)


def _one_claim(text: str) -> bool:
    """One sentence of a few content words ("Dr. Chen is my dentist" included), not a passage."""
    return single_claim(normalize(_ABBREVIATION_RE.sub(r"\1", text)))


def _asks(text: str) -> bool:
    """One sentence ending in a question mark ("Is eu-central-1 now the default region?"): it asserts nothing, so
    it changes no value (a passage that ends with a question still states what comes before it)."""
    return text.rstrip().endswith("?") and _one_claim(text.rstrip().rstrip("?"))


def _keeps_both(new: str, old: str) -> Relation | None:
    if cues.PAST_RE.search(old) and not cues.PAST_RE.search(new):
        return Relation("compatible", "the older statement is about the past")
    if cues.PAST_RE.search(new) and not cues.PAST_RE.search(old) and not cues.NOW_RE.search(new):
        return Relation("compatible", "the new statement is about the past")
    new_years = [int(y) for y in cues.YEAR_RE.findall(new)]
    old_years = [int(y) for y in cues.YEAR_RE.findall(old)]
    if new_years and old_years and max(new_years) < min(old_years):
        return Relation("compatible", "the new statement is about an earlier year")
    if cues.ADDITIVE_CUE_RE.search(new) and not contradiction.negation_cue(new):
        return Relation("compatible", "the new statement adds to the old one")
    if _trip_and_return(new, old):
        return Relation("compatible", "a journey and the one back (to / from the same place)")
    return None


_JOURNEY_RE = lazy(r"\b(?:flights?|flying|fly|flies|train|trip|drive|driving|ride|bus|ferry|travel\w*)\b")
_DIRECTION_RE = lazy(r"\b(?P<way>to|from)\s+(?P<place>[\w-]+)")


def _trip_and_return(new: str, old: str) -> bool:
    """Two journeys between the same places in opposite directions ("Flight to Lisbon on May 2" / "Flight
    back from Lisbon on May 9"): two events, not a new value. Each names one direction only, so a move
    from one thing to another ("migrated from X to Y") is never read as a journey."""
    if not (_JOURNEY_RE.search(new) and _JOURNEY_RE.search(old)):
        return False
    new_ways = {(m["way"], m["place"]) for m in _DIRECTION_RE.finditer(new)}
    old_ways = {(m["way"], m["place"]) for m in _DIRECTION_RE.finditer(old)}
    if len({way for way, _ in new_ways}) != 1 or len({way for way, _ in old_ways}) != 1:
        return False
    flipped = {("from" if way == "to" else "to", place) for way, place in old_ways}
    return bool(new_ways & flipped)


_OPPOSITION = {
    "replacement": "update",
    "negation": "update",
    "switch": "update",
    "partial_negation": "possible_update",
}


def _opposition(new: str, old: str, assessment: Assessment) -> Relation | None:
    if assessment.kind == "supersedes" and assessment.basis == "value":
        return None  # a value frame: the parallel rules below weigh the predicate
    if assessment.basis == "replacement_unmentioned":
        return Relation("compatible", assessment.reason)  # it replaces something the old one never said
    if assessment.basis == "switch":
        other = holders.other_attribute(new, old)
        if other is not None:
            return Relation("compatible", f"a switch of {other}")
    mapped = _OPPOSITION.get(assessment.basis)
    if mapped == "update" and assessment.kind == "supersedes":
        return Relation("update", assessment.reason)
    if mapped == "possible_update":
        return Relation("possible_update", assessment.reason)
    if assessment.basis in ("polarity_other_topic", "polarity_other_subject", "implicit_negative"):
        return _polarity_change(new, old) or Relation("compatible", assessment.reason)
    if assessment.basis in ("speakers_differ", "weak_passage"):
        return Relation("compatible", assessment.reason)
    return None


_GENERIC = frozenset(
    stem(word)
    for word in [
        "use",
        "using",
        "like",
        "want",
        "wants",
        "have",
        "has",
        "do",
        "does",
        "be",
        "go",
        "get",
        "make",
        "prefer",
        "need",
        "run",
        "can",
    ]
)


def _polarity_change(new: str, old: str) -> Relation | None:
    """A flip of polarity that names a change ("no longer", "stopped", "not … anymore", "allowed now") about
    something the old statement says: "I'm learning Spanish" → "I stopped learning Spanish"."""
    if negations(new) % 2 == negations(old) % 2 or not frames.new_cue(new, old):
        return None
    if not _names_change(new, old):
        return None  # "time out after 3 seconds" names no change: only a flip of polarity by chance
    shared = _topic(new) & _topic(old)
    if not shared:
        return None
    return Relation("update", f"a change of polarity about {', '.join(sorted(shared)[:3])}")


def _names_change(new: str, old: str) -> bool:
    """The new statement carries a change cue that names a change by itself ("no longer", "stopped", "now"),
    one the old statement does not have ("after", "before", "back" only date or place a statement)."""
    old_text = normalize(old)
    return any(m.group() not in old_text for m in cues.STRONG_CHANGE_RE.finditer(normalize(new)))


def _topic(text: str) -> set[str]:
    return {
        t.key for t in terms(text) if t.kind != "negation" and t.key not in SOFT and t.key not in _GENERIC
    }


def _scope(text: str) -> set[str]:
    """What a comparison is about, without its change cues ("… after all", "… again")."""
    return {
        t.key for t in terms(text) if t.key in meaning(text) and not cues.CHANGE_CUE_RE.fullmatch(t.surface)
    }


def _swapped_order(new: str, old: str) -> Relation | None:
    new_pairs, old_pairs = ordered_pairs(new), ordered_pairs(old)
    for pair in new_pairs:
        if any(pair[0] & y and pair[1] & x and pair != (x, y) for x, y in old_pairs):
            if _scope(new) != _scope(old):
                return Relation("compatible", "the same comparison for another scope")
            return Relation(
                "update",
                f"the order of compared items changed: now '{' '.join(sorted(pair[0]))}' over "
                f"'{' '.join(sorted(pair[1]))}'",
            )
    return None
