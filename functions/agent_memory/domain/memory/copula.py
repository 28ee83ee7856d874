"""A copula that names a role, read whichever way round it is written (issue 27): in "X is Y's R", "X is the R
of Y", "Y's R is X", "The R of Y is X" and "X serves / works / acts as Y's R" the attribute is "Y's R" and X is
its value. The holder of such a statement (`holders.holder`, the noun phrase before its first verb) is X on one
side and "Y's R" on the other, so an update told the other way round ("Elif Yılmaz is Ravi Menon's mentor" →
"Ravi Menon's mentor is now Jonas Weber") was kept beside the old value.

Which side is the attribute: the one marked as a role — a possessive ("Y's R", "my R"), "the R of Y", or
else a definite "the R" facing a bare noun phrase. The other side is the value; a value after the copula must
look like one (a name, an identifier, a number, a definite or possessive noun phrase), so "Ravi's mentor is
very patient" names no value. Nothing is read from a question, a negation, a plural or indefinite role
("one of Y's mentors", "a mentor of Y"), an additive ("also") or a clause of more than one sentence: those
keep the other rules. Pure string work."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from ..memo import memo
from ..patterns import lazy
from .tokens import stem

_COPULA_RE = lazy(
    r"^(?P<left>.+?)\s+(?:now\s+|currently\s+|still\s+)?"
    r"(?P<cop>(?:was|has\s+been|got|is)\s+appointed(?:\s+as)?|(?:is\s+)?(?:serv|work|act)(?:es|s|ing)\s+as|"
    r"took\s+over\s+as|stepped\s+in\s+as|has\s+become|is|was|remains|becomes|became)"
    r"\s+(?P<right>.+)$",
    re.IGNORECASE,
)
_TAKEN_RE = lazy(r"bec[oa]mes?|has\s+become|took\s+over\s+as|stepped\s+in\s+as|.*appointed.*", re.IGNORECASE)
_LEADING_RE = lazy(
    r"^(?:(?:now|currently|still|again|officially|finally|already|once\s+more|back\s+to|back)\s+)+",
    re.IGNORECASE,
)
_TRAILING_RE = lazy(
    r"(?:\s+(?:now|again|currently|these\s+days|from\s+now\s+on|going\s+forward|once\s+more|as\s+well))+$",
    re.IGNORECASE,
)
_PREFIX_RE = lazy(r"^\s*(?:[-*•]\s*)?(?:\d{4}-\d\d-\d\d\s*(?::|-|—|–)?\s*)?")
_REFUSED_RE = lazy(
    r"\b(?:not|no|never|also|too|one\s+of|some\s+of|among|another|other|if|would|could|might|may|should|"
    r"maybe|perhaps|whether|and|or|but|because|when|while|who|which|that)\b|[,;:?()\[\]]",
    re.IGNORECASE,
)
"""Words and marks that make a statement more than one role's single value: a negation, an addition, a plural
or indefinite role, a hypothetical, a second clause, a question."""
_DETERMINER = r"(?:the|our|my|their|his|her|its|your|this|that)"
_POSSESSIVE_RE = lazy(rf"^(?:{_DETERMINER}\s+)?(?P<y>[^']+?)'s\s+(?P<r>[^']+)$", re.IGNORECASE)
_PRONOUN_RE = lazy(r"^(?P<y>my|our|their|his|her|its|your)\s+(?P<r>.+)$", re.IGNORECASE)
_OF_RE = lazy(rf"^{_DETERMINER}\s+(?P<r>.+?)\s+of\s+(?:{_DETERMINER}\s+)?(?P<y>.+)$", re.IGNORECASE)
_DEFINITE_RE = lazy(r"^the\s+(?P<r>.+)$", re.IGNORECASE)
_NOT_A_VALUE_RE = lazy(
    r"^(?:a|an|one|some|any|each|every|all|very|so|quite|really|rather|pretty|too|more|less|most|least|"
    r"in|on|at|to|for|from|with|by|about|under|over|after|before|since|until|into|via|like|i|we|you|he|she|"
    r"it|they|this|that|these|those|there|here|what|who)\b",
    re.IGNORECASE,
)
_ENTITY_RE = lazy(rf"[A-Z]|[\d#@/._-]|^{_DETERMINER}\s|'s\b")
"""A value after the copula: a name (a capital), an identifier or number, a definite or possessive phrase."""
_MAX_ROLE_WORDS = 4
_MAX_VALUE_WORDS = 5


@dataclass(frozen=True)
class Reading:
    role: tuple[str, ...]
    possessor: tuple[str, ...]
    value: tuple[str, ...]
    """Stemmed, case folded words without determiners: what two readings compare."""
    shown: str = ""
    """The value as written."""
    said: str = ""
    """The attribute as written ("the default region", "Ravi Menon's mentor")."""
    taken: bool = False
    """The copula names the change itself: "became", "took over as", "stepped in as", "was appointed"."""

    @property
    def attribute(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return self.role, self.possessor


@dataclass(frozen=True)
class _Phrase:
    text: str
    role: tuple[str, ...] | None
    possessor: tuple[str, ...]
    words: tuple[str, ...]
    marked: bool
    """A possessive or an of-phrase: a role whichever side it is on."""


def read(text: str, *, loose: bool = False) -> Reading | None:
    """The role a one-sentence copula states and its value, or None when the statement is not one. `loose`:
    after a possessive or an of-phrase, any short noun phrase is its value ("… default branch is now trunk"),
    for the merge guard only (refusing a merge keeps both)."""
    return _read(text, loose)


@memo(16384)
def _read(text: str, loose: bool) -> Reading | None:
    body = unicodedata.normalize("NFKC", text).replace("\u2019", "'").replace("\u2018", "'")
    body = _PREFIX_RE.sub("", " ".join(body.split())).rstrip(" .!")
    if not body or _REFUSED_RE.search(body):
        return None
    found = _COPULA_RE.match(body)
    if found is None:
        return None
    taken = _TAKEN_RE.fullmatch(found["cop"]) is not None
    left = _phrase(found["left"])
    right_text = _TRAILING_RE.sub("", _LEADING_RE.sub("", found["right"]))
    right = None if _VERB_FORM_RE.match(right_text) else _phrase(right_text)
    if left is None or right is None:
        return None
    valued = _ENTITY_RE.search(right_text) is not None or (loose and left.marked)
    if left.role is not None and (left.marked or right.role is None) and valued:
        return Reading(left.role, left.possessor, right.words, right.text, left.text, taken)
    if right.role is not None and (right.marked or left.role is None):
        return Reading(right.role, right.possessor, left.words, left.text, right.text, taken)
    return None


_VERB_FORM_RE = lazy(r"^[a-z]+(?:ed|en|ing)\b")
"""A lower-case first word in -ed / -en / -ing: a passive or progressive ("was switched to …"), not a value."""


_FORMER_RE = lazy(r"^(?:former|previous|old|outgoing|ex-|past)\b", re.IGNORECASE)
_CURRENT = frozenset(stem(word) for word in ("new", "current", "present", "incoming"))
"""Words that date the role's value, not the role: "the new CTO of Acme" is the CTO of Acme."""


def _phrase(text: str) -> _Phrase | None:
    text = text.strip()
    if not text or _NOT_A_VALUE_RE.match(text):
        return None
    for pattern, marked in (
        (_POSSESSIVE_RE, True),
        (_PRONOUN_RE, True),
        (_OF_RE, True),
        (_DEFINITE_RE, False),
    ):
        found = pattern.match(text)
        if found is None:
            continue
        if _FORMER_RE.match(found["r"]):
            return None  # "the former CTO": a past holder of the role, no current value
        role = tuple(word for word in _words(found["r"]) if word not in _CURRENT)
        possessor = _words(found["y"]) if "y" in found.groupdict() else ()
        if not role or len(role) > _MAX_ROLE_WORDS or len(possessor) > _MAX_ROLE_WORDS:
            return None
        return _Phrase(text, role, possessor, _words(text), marked)
    words = _words(text)
    return _Phrase(text, None, (), words, False) if 0 < len(words) <= _MAX_VALUE_WORDS else None


def _words(text: str) -> tuple[str, ...]:
    """The phrase's words, case folded and stemmed, without determiners or a possessive's "'s"."""
    plain = re.sub(r"'s\b", "", text.casefold())
    return tuple(stem(w) for w in re.findall(r"[^\W_][\w.#+/-]*", plain) if w not in _DETERMINERS)


_DETERMINER_WORDS = "the a an our my their his her its your this that"
_DETERMINERS = frozenset(_DETERMINER_WORDS.split())


def folds_a_value(new: str, old: str) -> str | None:
    """Why merging `new` into `old` would fold one value of a role into another ("main is the default branch
    of the infra repo" / "The infra repo's default branch is now trunk", words a lexicon may call one thing),
    or None. Read loosely: a refused merge keeps both statements."""
    new_reading, old_reading = read(new, loose=True), read(old, loose=True)
    if new_reading is None or old_reading is None or new_reading.attribute != old_reading.attribute:
        return None
    if new_reading.value == old_reading.value:
        return None
    return f"another value of '{new_reading.said}' ('{new_reading.shown}' / '{old_reading.shown}')"
