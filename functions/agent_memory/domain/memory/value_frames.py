"""Words a shared value accounts for (issue 27): the merge guard's reading of two frames around one value.

`paraphrase.same_meaning` only gets here when both statements hold the very same values, names, polarity and
compared items (`paraphrase._hard_difference`); what is left over is words. Some of those words only say what
kind of thing the shared value is, in a frame the other statement tells in other words:

* **a relative counted** — "a mom *of three*" / "I have *three kids*": a noun of a relative (`Lexicon.kin_through`:
  a kind of relative, "mother", "dad", "parent") followed by "of" and a value, against the same value followed
  by the noun the relative's definition names ("mother": "a woman who has given birth to a *child*"; "kid" =
  "child"). Both words are accounted for. Nothing else is: "nanny of three" (no relative), "mom of three" /
  "three cats" (not in the definition), "grandma of three" / "three grandkids" (a grandmother is "the mother
  of your father or mother": no grandchild named), "I'm a mom of three" / "I had three kids" (another tense)
  stay apart;
* **what a unit measures** — "the office *temperature* is 21 °C" / "likes the office at 21 °C": a noun left over
  on one side only, named by the definition of the unit of a value both statements hold (`Lexicon.defines`:
  a degree Celsius is "a degree on the centigrade scale of *temperature*"). A bare number has no unit and
  accounts for nothing.

A value accounts for words only; the values themselves were compared before and are equal."""

from __future__ import annotations

import re
from itertools import pairwise

from ..patterns import lazy
from .ports import Lexicon
from .roles import tenses
from .slots import Term, terms
from .tokens import normalize, speaker

_UNIT_RE = lazy(r"^n[\d.]+(?P<unit>%|°c|°f|kb|mb|gb|tb|ms|s|k|m)$")
_UNIT_WORDS = {
    "%": "percent",
    "°c": "degree celsius",
    "°f": "degree fahrenheit",
    "kb": "kilobyte",
    "mb": "megabyte",
    "gb": "gigabyte",
    "tb": "terabyte",
    "ms": "millisecond",
    "s": "second",
}
"""The unit of a value key (`slots._canonical_values` writes "21 degrees Celsius" as "n21°c") as the lexicon's
word for it. "k" and "m" (thousand, million, or metre) are no unit of their own."""


def accounted(
    text: str, other: str, mine: list[str], theirs: list[str], lexicon: Lexicon, keys: dict[str, list[str]]
) -> tuple[list[str], list[str]]:
    """The leftover keys of `text` (`mine`) and of `other` (`theirs`) less those a shared value accounts for.
    `keys`: each content key of both statements with the words written for it."""
    mine, theirs = _relatives(text, other, mine, theirs, lexicon, keys)
    theirs, mine = _relatives(other, text, theirs, mine, lexicon, keys)
    if not theirs:
        mine = _measured(text, mine, lexicon, keys)
    if not mine:
        theirs = _measured(other, theirs, lexicon, keys)
    return mine, theirs


def _relatives(
    text: str, other: str, mine: list[str], theirs: list[str], lexicon: Lexicon, keys: dict[str, list[str]]
) -> tuple[list[str], list[str]]:
    """`mine` and `theirs` less a relative counted in `text` ("mom of three") and the thing it counts in
    `other` ("three kids"), one pair at a time."""
    for relative, value in _counted_relatives(text):
        if not (mine_key := _key_of(relative, mine, keys)):
            continue
        counted = _counted_by(other, value)
        if counted is None or not (their_key := _key_of(counted, theirs, keys)):
            continue
        if tenses(text) == tenses(other) and lexicon.kin_through(relative, counted):
            mine = [k for k in mine if k != mine_key]
            theirs = [k for k in theirs if k != their_key]
    return mine, theirs


def _counted_relatives(text: str) -> list[tuple[str, str]]:
    """(noun, value key) of each word followed by "of" and a value in `text` ("mom of three")."""
    listed = terms(text)
    body = normalize(speaker(text)[1])
    found: list[tuple[str, str]] = []
    for first, second in pairwise(listed):
        if first.kind != "word" or second.kind != "value":
            continue
        if re.search(rf"\b{re.escape(first.surface)}\s+of\s+(?:the\s+)?\S+", body):
            found.append((first.surface, second.key))
    return found


def _counted_by(text: str, value: str) -> str | None:
    """The noun right after `value` in `text` ("three *kids*"), if a word follows it."""
    listed = terms(text)
    for first, second in pairwise(listed):
        if first.kind == "value" and first.key == value and second.kind == "word":
            return second.surface
    return None


def _key_of(surface: str, left: list[str], keys: dict[str, list[str]]) -> str | None:
    """The leftover key written as `surface`, if any."""
    return next((key for key in left if surface in keys.get(key, [key])), None)


def _measured(text: str, mine: list[str], lexicon: Lexicon, keys: dict[str, list[str]]) -> list[str]:
    """`mine` less the nouns a unit of a value of `text` measures ("temperature" beside "21 °C")."""
    units = {_UNIT_WORDS[m["unit"]] for t in terms(text) if (m := _unit(t)) and m["unit"] in _UNIT_WORDS}
    if not units:
        return mine
    return [
        key
        for key in mine
        if not any(lexicon.defines(unit, word) for unit in units for word in keys.get(key, [key]))
    ]


def _unit(term: Term) -> re.Match[str] | None:
    return _UNIT_RE.match(term.key) if term.kind == "value" else None
