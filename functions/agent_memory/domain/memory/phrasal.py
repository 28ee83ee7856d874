"""The relation a verb and its preposition state, for the merge guard (issue 27).

The merge guard reads content words; prepositions are stop words to it, so "works *at* Acme" and "works
*with* Acme" had the same words, and "runs on Fridays" / "is hosted on Fridays" the same word family
("use run host"). A preposition right after a verb changes which relation the verb states ("works at" an
employer, "works with" a partner, "reports to" / "reports on"), and a verb of one family names another relation
once a preposition follows it ("runs on" a day or a platform, "is hosted on" a server). `relation_differs`
answers why two statements state different relations that way, or None:

* the same verb followed by another preposition before the same argument (no pair of one usage: "works at"
  / "works for" an employer, "lives in" / "lives at" a place);
* two different verbs the guard's word families would fold together ("use run host"), each followed by a
  preposition before the same argument that says when: "runs on Fridays" is a schedule, "is hosted on
  Fridays" is not (while "runs in eu-west-1" / "is hosted in eu-west-1" still merge).

Written from general English; a missing equivalence only keeps two memories apart."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from ..patterns import lazy
from .tokens import normalize, speaker, stem

_PREPOSITIONS_TEXT = """
    at with for in on to from by under through into onto over about against of off out via within
    without after before behind beside near toward towards
"""
_PREPOSITIONS = frozenset(_PREPOSITIONS_TEXT.split())
_ONE_USAGE = (
    frozenset({"at", "for"}),  # an employer, a client: "works at / for Acme"
    frozenset({"in", "at", "within", "inside"}),  # a place: "lives in / at", "is based in / at"
    frozenset({"to", "toward", "towards"}),
    frozenset({"on", "about", "over"}),  # a topic: "works on / about", "argued over / about"
    frozenset({"through", "via"}),  # a channel: "paid through / via Stripe"
    frozenset({"into", "in"}),  # "moved in / into", "logged in / into"
    frozenset({"onto", "on"}),
)
_WORD_RE = lazy(r"[\w.'’#:-]+")
_DETERMINERS_TEXT = "the a an my our his her their your its this that every each"
_DETERMINERS = frozenset(_DETERMINERS_TEXT.split())
_WHEN_RE = lazy(
    r"^(?:\d|(?:mon|tues|wednes|thurs|fri|satur|sun)days?$|weekdays?$|weekends?$|nights?$|mornings?$|evenings?$|"
    r"noon$|midnight$)"
)
"""An argument that says when ("on Fridays", "at 9", "every night"): a verb before it names a schedule."""


@dataclass(frozen=True)
class _Pair:
    verb: str
    key: str  # the verb's stem
    preposition: str
    argument: str  # the first word after the preposition and its determiner


def _pairs(text: str) -> list[_Pair]:
    """Each verb-like word directly followed by a preposition in `text`, with that preposition's argument."""
    words = _WORD_RE.findall(normalize(speaker(text)[1]))
    found: list[_Pair] = []
    for index, (before, word) in enumerate(itertools.pairwise(words)):
        if word in _PREPOSITIONS and before not in _PREPOSITIONS and before.isalpha():
            rest = [w for w in words[index + 2 :] if w not in _DETERMINERS]
            found.append(_Pair(before, stem(before), word, rest[0].strip(".,;:") if rest else ""))
    return found


def _one_usage(mine: str, theirs: str) -> bool:
    return mine == theirs or any(mine in group and theirs in group for group in _ONE_USAGE)


def relation_differs(new: str, old: str, family: Callable[[str], str | None]) -> str | None:
    """Why `new` and `old` state different relations by a verb and its preposition, or None. `family` folds
    a word to its word family (the merge guard's own folding), None outside every family."""
    for mine in _pairs(new):
        for theirs in _pairs(old):
            if mine.argument != theirs.argument or not mine.argument:
                continue
            told = (
                f"another relation: '{mine.verb} {mine.preposition}' / '{theirs.verb} {theirs.preposition}'"
            )
            if mine.key == theirs.key and not _one_usage(mine.preposition, theirs.preposition):
                return told
            folded = family(mine.verb)
            if (
                mine.key != theirs.key
                and folded is not None
                and folded == family(theirs.verb)
                and _WHEN_RE.match(mine.argument)
            ):
                return told
    return None


def verbs_swapped(new: str, old: str, new_word: str, old_word: str) -> bool:
    """Whether `new_word` and `old_word`, the one word replaced between the statements, are each a verb
    followed by a preposition ("runs on Fridays" / "is hosted on Fridays"): the relation changed, not a value."""
    return any(p.verb == new_word for p in _pairs(new)) and any(p.verb == old_word for p in _pairs(old))


def preposition_changed(new: str, old: str) -> bool:
    """Whether a verb of both statements takes another preposition in each, and none of one usage: "reports
    to Sandeep" / "reports on local elections" state two relations, whatever their arguments."""
    shared = [
        _one_usage(mine.preposition, theirs.preposition)
        for mine in _pairs(new)
        for theirs in _pairs(old)
        if mine.key == theirs.key
    ]
    return bool(shared) and not any(shared)
