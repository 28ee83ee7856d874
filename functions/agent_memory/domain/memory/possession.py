"""A holder and what it possesses, or what a head noun makes of it, are two holders (issue 27, "never destroy
what a user gave us").

"The user's son plays the trumpet" says nothing of what the user plays; "The payments team now has eight
engineers" says nothing of what Payments uses; "My mother lives in Porto" says nothing of where I live. Every
rule that reads an update (a parallel statement, a value frame, a change cue, a switch, a move, a count, a
role) answers for one holder, so an update between two statements whose holders nest (one is the other with a
possessed noun or a head noun added: "the user" / "the user's son", "Billing" / "the billing team", "I" / "my
mother") is kept as two facts. The added noun may name the attribute the other statement changes ("Atlas is
owned by Marek" / "Atlas's owner is now Priya", "I weigh 80 kg" / "my weight is now 75 kg"): then they are one
holder. Holders read by `holders.holder`; the first person ("I", "my …") is one possessor, "we" / "our …"
another. Used by `relation.relate` and `decide` on every update they find; pure string work."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..memo import memo
from ..patterns import lazy
from . import acronyms, holders
from .frames import Relation
from .slots import entities
from .tokens import normalize, speaker, stem

_PERSON_RE = lazy(
    r"^\s*(?:[-*•]\s*)?(?:\[[^\]]{1,40}\]\s*)?(?:\d{4}-\d\d-\d\d\s*(?::|-|—|–)?\s*)?"
    r"(?:(?:from\s+now\s+on|going\s+forward|now)\s*,?\s+)?"
    r"(?P<word>i|i'm|i've|i'd|i'll|ich|je|j'|yo|io|my|mein|meine|mon|ma|mes|mi|mis|we|we're|we've|our)(?=\s|$)"
)
_OWN = frozenset(["my", "mein", "meine", "mon", "ma", "mes", "mi", "mis", "our"])
_PLURAL = frozenset(["we", "we're", "we've", "our"])
_WORD_RE = lazy(r"[^\W\d_][\w'-]*")
_STEM = 4
"""Letters two words share to be read as one word family ("owner" / "owned", "weight" / "weigh")."""


_PREPOSITIONS = frozenset(
    [
        "to",
        "in",
        "on",
        "at",
        "for",
        "from",
        "with",
        "by",
        "of",
        "about",
        "over",
        "after",
        "before",
        "since",
        "until",
        "via",
        "into",
    ]
)


def _verb_taken(body: str, last: str) -> bool:
    """The holder ends before a preposition: its last word is most likely the verb the holder reading did
    not know ("The team grew to 8 engineers"), so the holder is not known."""
    after = re.search(rf"\b{re.escape(last)}\s+(\S+)", body)
    return after is not None and after[1] in _PREPOSITIONS


@dataclass(frozen=True)
class Holder:
    person: str
    """"i" or "we" for a statement told in the first person ("I …", "my …"), "" otherwise."""
    keys: frozenset[str]
    """The stems of the holder's words (`holders.holder_words`), empty for the speaker themself ("I …")."""
    text: str
    """The statement, normalized."""
    said: str
    """The statement as written (its names keep their capitals)."""
    last: str = ""
    """The holder's last word as written ("son" of "The user's son"), empty for the speaker themself."""


@memo(maxsize=8192)
def reading(text: str) -> Holder | None:
    """The statement's holder, or None when it is not known (a pronoun but "I" / "we", an imperative, a
    holder holding a number: "Sprint length 2 weeks")."""
    body = normalize(text)
    found = _PERSON_RE.match(body)
    person = "" if found is None else ("we" if found["word"] in _PLURAL else "i")
    if found is not None and found["word"] not in _OWN:
        return Holder(person, frozenset(), body, text)
    rest = body if found is None else body[: found.start("word")] + body[found.end("word") :]
    words = _possessed(text, rest, holders.holder_words(rest) or [], own=found is not None)
    if not words or any(ch.isdigit() for word in words for ch in word) or _verb_taken(rest, words[-1]):
        return None
    return Holder(person, frozenset(stem(word) for word in words), body, text, words[-1])


_NOT_NOUN_WORDS = "now just still also not never no always a an the been got gone getting"
_NOT_NOUNS = frozenset(_NOT_NOUN_WORDS.split())
"""Words after "'s" that make it "is" ("the user's now driving …"), not a possessive."""


def _possessed(text: str, rest: str, words: list[str], *, own: bool) -> list[str]:
    """The holder's words with the noun a possessive names ("The user's son plays …", "my son now …"): the
    word after a possessive is the thing possessed, never the verb, whatever it looks like (a plural, a
    word of another language)."""
    if own and not words:
        first = _WORD_RE.search(rest)
        return [] if first is None or first[0] in _NOT_NOUNS else [first[0]]
    if not words:
        return words
    after = re.search(rf"\b{re.escape(words[-1])}['’]s\s+([^\W\d_][\w-]*)", text, re.IGNORECASE)
    if after is None or after[1].casefold() in _NOT_NOUNS or after[1].casefold().endswith("ing"):
        return words
    return [*words, after[1].casefold()]


def nested(new: str, old: str, wordings: tuple[str, str] | None = None) -> str | None:
    """Why the two statements have two holders, one of them the other with a noun added, or None: both
    holders known, told in the same person, one's keys a strict part of the other's, the added nouns not
    named by the statement of the shorter holder (where they name its attribute), not only "user" (a note
    without a holder is the user's: "Favourite movie: Heat"), and the shorter one not naming what the longer
    one says its holder is ("my car is a Golf" / "I traded the Golf for a Civic")."""
    found = _ordered(new, old)
    if found is None:
        return None
    shorter, longer, new_is_shorter = found
    added = longer.keys - shorter.keys - _UNNAMED
    said = _WORD_RE.findall(shorter.text)
    if wordings is not None:  # the shorter statement in one wording of the relation the two state
        said += re.split(r"[\s-]+", wordings[0] if new_is_shorter else wordings[1])
    if not added or any(_family(key, said) and not _is_one(shorter.text, key) for key in added):
        return None
    if _names_its_value(longer, shorter):
        return None
    inner = " ".join(sorted(shorter.keys)) or _SPEAKERS[shorter.person]
    if _one_head(longer, shorter):
        return f"one head noun, narrowed: '{inner}' and the '{' '.join(sorted(added))} {shorter.last}'"
    return f"two holders: '{inner}' and its '{' '.join(sorted(added))}'"


def _ordered(new: str, old: str) -> tuple[Holder, Holder, bool] | None:
    """(shorter, longer, whether the new statement's is the shorter): the two holders when both are known, told in the same person, and one's keys are a
    strict part of the other's; None otherwise."""
    new_holder, old_holder = reading(speaker(new)[1]), reading(speaker(old)[1])
    if new_holder is None or old_holder is None or new_holder.person != old_holder.person:
        return None
    if new_holder.keys < old_holder.keys:
        return new_holder, old_holder, True
    if old_holder.keys < new_holder.keys:
        return old_holder, new_holder, False
    return None


def _narrowed(new: str, old: str) -> bool:
    """The nesting `nested` found only narrows one head noun (`_one_head`): weaker evidence of two holders."""
    found = _ordered(new, old)
    return found is not None and _one_head(found[1], found[0])


def _one_head(longer: Holder, shorter: Holder) -> bool:
    """The longer holder only narrows the same head noun with words before it ("the team standup" /
    "standup", "the staging database" / "the database"): maybe one thing, maybe a narrower scope of it.
    Nothing possessed, no head noun added: the evidence of one holder is weaker, not absent."""
    return (
        bool(shorter.last)
        and stem(longer.last) == stem(shorter.last)
        and not re.search(
            r"['’]s\b", re.split(re.escape(longer.last), longer.said, maxsplit=1, flags=re.IGNORECASE)[0]
        )
    )


_UNNAMED = frozenset({"user"})
"""The holder a note without one is about: "Favourite movie: Heat" is the user's."""


def _names_its_value(longer: Holder, shorter: Holder) -> bool:
    """The longer holder's statement says what its holder is ("my car is a Golf", "the user's phone is an
    iPhone 12") and the other statement names it: that thing is the holder they share."""
    copula = re.search(
        rf"\b{re.escape(longer.last)}(?:['’]s)?\s+(?:is|are|was)\b", longer.said, re.IGNORECASE
    )
    if copula is None:
        return False
    # the whole statement is read for names (a name right after the copula is the phrase's first word,
    # which alone would look like a capitalised sentence start), then the names before the copula dropped
    told = entities(longer.said) - entities(longer.said[: copula.start()])
    return bool(told & entities(shorter.said))


_SPEAKERS = {"i": "I", "we": "we", "": "?"}


def _is_one(text: str, key: str) -> bool:
    """The statement says its holder is what the added noun names ("Priya is now the manager of …" beside
    "Priya's manager is Tom"): a role the holder holds, not an attribute it has."""
    role = rf"\b(?:is|are|am)\s+(?:now\s+)?(?:the|a|an|our|their)\s+(?:new\s+)?{re.escape(key[:_STEM])}"
    return re.search(role, text) is not None


def _family(key: str, words: list[str]) -> bool:
    prefix = key[:_STEM]
    return any(word.startswith(prefix) for word in words)


def one_holder(new: str, old: str, rel: Relation, wordings: tuple[str, str] | None = None) -> Relation:
    """`rel`, unless it reads an update (or a possible one) across two nested holders: then both hold.
    `wordings`: the two statements in one wording of their relation (`relation_frames.one_wording`), where
    an added noun may be the relation's own ("the backend's implementation language" / "written in")."""
    if rel.kind not in ("update", "possible_update"):
        return rel
    why = nested(new, old, wordings)
    if why is not None and _narrowed(new, old):  # a narrowed head: both stay current, linked newest first
        return Relation("possible_update", f"{why} ({rel.reason})")
    why = why or two_scopes(new, old)
    return rel if why is None else Relation("compatible", f"{why} ({rel.reason})")


def two_scopes(new: str, old: str) -> str | None:
    """Why the two holders are two things of one kind, or None: the same head noun narrowed by different words
    on both sides ("the staging cluster" / "the production cluster", "the iOS app" / "the Android app")."""
    new_holder, old_holder = reading(speaker(new)[1]), reading(speaker(old)[1])
    if new_holder is None or old_holder is None or not new_holder.last or not old_holder.last:
        return None
    if stem(new_holder.last) != stem(old_holder.last) or new_holder.person != old_holder.person:
        return None
    new_only, old_only = new_holder.keys - old_holder.keys, old_holder.keys - new_holder.keys
    if not new_only or not old_only or acronyms.expanded(new, old) or acronyms.expanded(old, new):
        return None  # "the SRE team" / "the site reliability engineering team": one name, two spellings
    return f"two of one kind: the '{' '.join(sorted(old_only))}' and the '{' '.join(sorted(new_only))}' {new_holder.last}"
