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
