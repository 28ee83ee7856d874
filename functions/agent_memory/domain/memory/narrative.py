"""Updates told as a story rather than restated (issue 27): the frames `frames.parallel` cannot align because
the new statement leaves the attribute out.

* a new reading of one measure: "I weigh 90 kg" → "down to 86 kg" → "84 kg this morning". The new statement
  says nothing but a number in the same unit, a direction ("down to", "up to") and a time ("this morning");
* a change of one subject's target told by change verbs: "Maya moved to the web team" → "Maya moved to the
  London office", "The user upgraded to an iPhone 14" → "The user switched to a Pixel 8". The same subject
  moved twice (one place at a time) is an update; other changes ("switched to Vim" / "switched to decaf" may be
  two things) only a possible one: both stay current, linked newest first.

Pure string work over bounded patterns, used by `relation.relate` after the other rules found nothing."""

from __future__ import annotations

from ..patterns import lazy
from .frames import MEASURES, Relation
from .slots import terms
from .tokens import content, normalize, quote, subject, tokens

_DIRECTION_TEXT = """
    down up to at now currently dropped fell rose gained lost went reached hit this morning evening today
    tonight yesterday week weighed weigh weighing am is are was about around roughly just
"""
_DIRECTIONS = frozenset(t.key for word in _DIRECTION_TEXT.split() for t in tokens(word))


def _reading(text: str) -> tuple[str, str] | None:
    """(unit, number) of a statement holding exactly one number with a unit of measure."""
    listed = terms(text)
    numbers = [i for i, t in enumerate(listed) if t.kind == "value" and t.key.startswith("n")]
    if len(numbers) != 1:
        return None
    at = numbers[0]
    unit = listed[at + 1].key if at + 1 < len(listed) else ""
    if unit not in MEASURES:
        return None
    return unit, listed[at].key


def measurement(new: str, old: str) -> Relation | None:
    """A bare new reading of the measure the old statement gives ("down to 86 kg" after "I weigh 90 kg")."""
    new_reading, old_reading = _reading(new), _reading(old)
    if new_reading is None or old_reading is None or new_reading[0] != old_reading[0]:
        return None
    if new_reading[1] == old_reading[1]:
        return None
    rest = {t.key for t in terms(new) if t.kind == "word" and t.key not in MEASURES}
    if rest - _DIRECTIONS:
        return None  # the new statement names something else ("the garden has 3 m of hedge")
    return Relation(
        "update", f"a new reading in {new_reading[0]}: {old_reading[1][1:]} → {new_reading[1][1:]}"
    )


_FAMILIES = {
    "moved": "move", "relocated": "move", "transferred": "move",
    "switched": "switch", "upgraded": "switch", "downgraded": "switch", "migrated": "switch",
    "changed": "switch", "converted": "switch",
}  # fmt: skip
_TARGET_RE = lazy(
    r"^(?P<subject>.{0,60}?)\s*\b(?:has\s+|have\s+|had\s+|just\s+|now\s+|since\s+)*(?P<verb>"
    + "|".join(_FAMILIES)
    + r")\s+(?:\w+\s+){0,2}?(?:back\s+)?(?:over\s+)?(?:to|into|onto)\s+(?P<target>[^,;.!?]{1,60})"
)


def _target(text: str) -> tuple[frozenset[str], str, frozenset[str]] | None:
    match = _TARGET_RE.match(normalize(text))
    if match is None:
        return None
    who = frozenset(subject(tokens(match.group("subject"))))
    target = frozenset(content(tokens(match.group("target"))))
    if not who or not target:
        return None
    return who, _FAMILIES[match.group("verb")], target


def change_target(new: str, old: str) -> Relation | None:
    """The same subject changed to another target by verbs of one family (an update) or of two (possible)."""
    new_target, old_target = _target(new), _target(old)
    if new_target is None or old_target is None:
        return None
    (new_who, new_family, new_what), (old_who, old_family, old_what) = new_target, old_target
    if new_who != old_who or new_what == old_what or new_what <= old_what or old_what <= new_what:
        return None
    what = f"'{quote(' '.join(sorted(old_what)), 30)}' → '{quote(' '.join(sorted(new_what)), 30)}'"
    if new_family == old_family == "move":
        return Relation("update", f"the same subject moved to another place: {what}")
    return Relation("possible_update", f"the same subject changed again, to another target: {what}")


_GROWN_RE = lazy(
    r"^(?P<subject>.{1,60}?)\s+(?:has\s+|have\s+|had\s+|just\s+|now\s+)*(?:grown|grew|grows|shrunk|shrank|"
    r"shrinks|risen|rose|rises|fallen|fell|falls|dropped|increased|decreased|went\s+up|went\s+down|gone\s+up|"
    r"gone\s+down|(?:is|are)\s+(?:now\s+)?(?:up|down))\s+(?:from\s+\S+\s+)?to\s+(?P<count>[\w.,]+)"
    r"(?:\s+(?P<noun>[a-z][\w-]*))?"
)
_HAS_RE = lazy(
    r"^(?P<subject>.{1,60}?)\s+(?:has|have|had|counts|numbers|is\s+made\s+up\s+of|consists\s+of)\s+"
    r"(?:about\s+|around\s+|roughly\s+)?(?P<count>[\w.,]+)\s+(?P<noun>[a-z][\w-]*)"
)


def _count(text: str) -> str | None:
    found = [t.key for t in terms(text) if t.kind == "value" and t.key.startswith("n")]
    return found[0] if len(found) == 1 else None


def _content(text: str) -> frozenset[str]:
    return frozenset(t.key for t in tokens(text) if t.key and t.key[0].isalnum())


def count_change(new: str, old: str) -> Relation | None:
    """A count told as a change ("the team grew to 8 engineers", "the list has shrunk to 40") after the same
    subject's count of the same thing ("the team has 6 engineers"): an update of one quantity."""
    grown, had = _GROWN_RE.match(normalize(new)), _HAS_RE.match(normalize(old))
    if grown is None or had is None:
        return None
    new_count, old_count = _count(grown["count"]), _count(had["count"])
    if new_count is None or old_count is None or new_count == old_count:
        return None
    if _content(grown["subject"]) != _content(had["subject"]):
        return None  # another subject's count ("the team has 6" / "the budget grew to 8 million")
    noun = grown["noun"]
    if noun and stem_key(noun) != stem_key(had["noun"]):
        return None  # a count of something else ("6 engineers" / "grew to 8 offices")
    return Relation("update", f"the count changed: {old_count[1:]} → {new_count[1:]} {had['noun']}")


def stem_key(word: str) -> str:
    listed = tokens(word)
    return listed[0].key if listed else word
