"""A hand-written lexicon of relation frames: the several ways English states one relation (issue 27).

A memory service is told the same few relations over and over — where someone works, where they live, who
they report to, when an appointment is, which tool holds what, what a program is written in, how someone gets
to work, how much is allowed — each in many surface forms: "works from the Dublin office" / "is based in the
Dublin office", "the dentist appointment is on March 10" / "I see the dentist on March 10", "the team uses
Linear for tickets" / "tickets are tracked in Linear", "written in Go" / "the implementation language is Go",
"cycles to work" / "commutes by bike". `shared` finds the frames two statements have in common (the same
canonical relation with the same arguments) and returns the words those frames spend on saying which
relation it is; the merge guard (`paraphrase.same_meaning`) then treats those words as accounted for and still
checks everything else: values, names, polarity, tense and every other word must agree, so "works from
Lisbon" / "moved to Lisbon" ("moved" is no form of a frame) and "sees the dentist" / "cancelled the dentist
appointment" ("cancelled" is left over) stay apart.

A *converse* frame names two participants in fixed roles ("Ana reports to Bo" = "Bo is Ana's manager" = "Bo
manages Ana"): `converse` answers whether both statements give the same participants the same roles, which
decides the roles check for them ("Ana reports to me" is not "I report to Ana").

Why hand-written: no package installable here ships such data offline in a wheel. Checked: `conceptnet-lite`
(code only, downloads its database at run time) and `contradict-text` (loads a model from a hub) last round;
`nlptoolkit-framenet` 1.0.11 ships FrameNet frame names whose lexical units are Turkish WordNet ids (no
English verbs); `funcverbnet` 0.2.24 is a classifier of software-functionality verbs in code comments; NLTK's
FrameNet, VerbNet and PropBank and the PPDB are corpora downloaded at run time, in no wheel. The forms below
are written from general English usage, one line per form; a missing form only keeps two memories apart."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ..memo import memo
from .slots import STOP_FOR_TERMS
from .tokens import PRONOUNS, normalize, speaker

_DET = r"(?:(?:the|a|an|my|our|his|her|their|your)\s+)?"
_NUMBER_AHEAD = (
    r"(?=\s*(?:\d|(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|twenty|fifty|a hundred)\b))"
)
_NOT_WHEN = r"(?!\s*(?:the\s+)?(?:\d|(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b|weekdays?\b|weekends?\b))"
"""Not a time: "runs on Fridays", "is deployed on the 3rd" say when, not where."""
_WORK = r"(?:work|the office|school|uni|university|college)"
_MODE = r"(?P<mode>bikes?|bicycles?|cars?|trains?|bus|buses|foot|trams?|subway|metro|tube|ferry|scooters?)"

# One line per relation: its canonical name, then its surface forms (regular expressions over the normalized
# statement: case folded, contractions expanded, no possessive "'s"). A named group `arg` is an argument both
# statements must name alike (the professional of an appointment, the tool); `mode` is a value told by a word
# (how someone commutes), folded by `_MODES`. The words a form matches outside its groups are the frame's own.
_FRAMES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("employer", (
        r"\b(?:works?|working) (?:at|for)\b",
        r"\b(?:is|am|are) employed (?:at|by)\b",
        r"\b(?:employer|workplace) is\b",
        r"\b(?:job|position) is at\b",
    )),
    ("work location", (
        r"\b(?:works?|working) (?:from|out of)\b",
        r"\b(?:is|am|are) based (?:in|at|out of)\b",
        r"\b(?:office|desk|base) is (?:in|at)\b",
    )),
    ("home", (
        r"\b(?:lives?|living) in\b",
        r"\b(?:resides?|residing) in\b",
        r"\b(?:is|am|are) resident in\b",
        r"\bhome is in\b",
        r"\bmakes? (?:my|his|her|their|our) home in\b",
    )),
    ("appointment", (
        rf"\b(?:appointment|appt) (?:with|at) {_DET}(?P<arg>\w+)",
        r"\b(?P<arg>\w+) (?:appointment|appt|visit)\b",
        rf"\b(?:see|sees|seeing|visit|visits|visiting) {_DET}(?P<arg>\w+)",
    )),
    ("tool for", (
        rf"\b(?:use|uses|using) {_DET}(?P<arg>[\w.-]+) (?:for|to (?:track|manage|store|handle|host))\b",
        rf"\b(?:is|are) (?:tracked|managed|kept|handled|organi[sz]ed|stored|hosted) (?:in|on|with|using|via) "
        rf"{_DET}{_NOT_WHEN}(?P<arg>[\w.-]+)",
        r"\b(?P<arg>[\w.-]+) is (?:used|the tool) for\b",
    )),
    ("implementation language", (
        r"\b(?:is|are)? ?(?:written|implemented|coded|programmed|developed) in\b",
        r"\b(?:implementation|programming|source) language(?: is)?\b",
    )),
    ("commute", (
        rf"\b(?P<mode>cycles?|cycling|bikes?|biking|drives?|driving|walks?|walking) to {_WORK}",
        rf"\b(?:rides?|riding) {_DET}(?P<mode>bikes?|bicycles?|scooters?) to {_WORK}",
        rf"\b(?:commutes?|commuting|gets? to {_WORK}|goes to {_WORK}|travels? to {_WORK}) (?:by|on) {_MODE}",
        rf"\b(?:takes?|taking) the (?P<mode>bus|train|tram|subway|metro|tube|ferry) to {_WORK}",
    )),
    ("limit", (
        rf"\b(?:rate )?limit(?:ed)? (?:is |of |to |at )?{_NUMBER_AHEAD}",
        rf"\b(?:(?:may|can) (?:make|send|run|do|have|use) )?up to{_NUMBER_AHEAD}",
        rf"\b(?:at most|no more than|a maximum of|maximum|max|capped at|a cap of){_NUMBER_AHEAD}",
    )),
    ("schedule", (
        r"\b(?:is|are) (?:held|scheduled|planned) (?=on|at|for|every|each)\b",
        r"\b(?:is|are) (?=on \w+|at \d|every|each)",
        r"\btakes? place\b",
    )),
    ("birthday", (
        r"\bbirthday is(?: on)?\b",
        r"\b(?:was|were) born on\b",
        r"\bdate of birth is\b",
    )),
    ("allergy", (
        r"\b(?:is|am|are) allergic to\b",
        r"\b(?:has|have) an? (?:\w+ )?allergy to\b",
        r"\ballergy is to\b",
    )),
    ("deadline", (
        r"\b(?:is|are) due (?:on|by)\b",
        r"\b(?:deadline|due date) is(?: on)?\b",
        r"\bmust be (?:done|finished|delivered|shipped) by\b",
    )),
    ("port", (
        r"\blistens on(?: port)?\b",
        r"\b(?:runs|is served|is exposed|is reachable) on port\b",
        r"\bport is\b",
    )),
    ("hosting", (
        rf"\b(?:is|are) (?:hosted|deployed) (?:on|to|in)\b{_NOT_WHEN}",
        rf"\b(?:runs|run) on\b{_NOT_WHEN}",
    )),
    ("price", (
        r"\bcosts?\b",
        r"\b(?:price|cost) is\b",
        r"\b(?:is|are) priced at\b",
    )),
    ("age", (
        rf"\b(?:is|am|are){_NUMBER_AHEAD}(?=\s*\S+ years? old\b)",
        r"\byears? old\b",
        r"\b(?:age is|is aged|am aged)\b",
    )),
    ("contact", (
        r"\b(?:e-?mail|email address) is\b",
        r"\bcan be (?:reached|contacted|emailed) at\b",
    )),
    ("ownership", (
        r"\b(?:owns?|owned)\b",
        r"\b(?:is|are) the owners? of\b",
        r"\bbelongs? to\b",
    )),
)  # fmt: skip

_MODES = {
    "cycle": "bike", "cycles": "bike", "cycling": "bike", "bike": "bike", "bikes": "bike", "biking": "bike",
    "bicycle": "bike", "bicycles": "bike", "drive": "car", "drives": "car", "driving": "car", "car": "car",
    "cars": "car", "walk": "foot", "walks": "foot", "walking": "foot", "foot": "foot", "train": "train",
    "trains": "train", "bus": "bus", "buses": "bus", "tram": "tram", "trams": "tram", "subway": "metro",
    "metro": "metro", "tube": "metro", "ferry": "ferry", "scooter": "scooter", "scooters": "scooter",
}  # fmt: skip
"""How someone travels, by the words for it: "cycling" and "by bike" are one mode, "drives" and "by car"."""

_ROLE = r"(?P<{}>\w+)"
_MANAGED = _ROLE.format("report")
_MANAGER = _ROLE.format("manager")
_BOSS_NOUN = r"(?:line manager|manager|boss|supervisor)"
# The converse frame: who reports to whom. `report` is the one managed, `manager` the one who manages.
_CONVERSE: tuple[str, ...] = (
    rf"\b{_MANAGED} (?:reports?|reporting) to {_MANAGER}\b",
    rf"\b{_MANAGED} (?:works?|working) under {_MANAGER}\b",
    rf"\b{_MANAGER} (?:manages|supervises) {_MANAGED}\b",
    rf"\b{_MANAGER} (?:is|am|are) {_MANAGED} (?:direct )?{_BOSS_NOUN}\b",
    rf"\b{_MANAGED} {_BOSS_NOUN} is {_MANAGER}\b",
    rf"\b{_MANAGED} (?:is|am|are) {_MANAGER} (?:direct )?report\b",
)


@dataclass(frozen=True)
class Found:
    """One frame found in a statement: its relation, its arguments (folded) and its own words."""

    relation: str
    arguments: tuple[str, ...]
    words: tuple[str, ...]


def _own_words(match: re.Match[str]) -> tuple[str, ...]:
    """The words of `match` outside its named groups."""
    text, start = match.group(0), match.start()
    spans = [match.span(name) for name in match.groupdict() if match.group(name) is not None]
    kept = [c if not any(s - start <= i < e - start for s, e in spans) else " " for i, c in enumerate(text)]
    return tuple("".join(kept).split())


def _argument(name: str, value: str) -> str:
    return _MODES.get(value, value) if name == "mode" else value


@memo(maxsize=4096)
def found(text: str) -> tuple[Found, ...]:
    """The frames of `text` (its speaker left out)."""
    body = normalize(speaker(text)[1])
    out: list[Found] = []
    if not _any_form().search(body):
        return ()  # most statements state no frame: one scan instead of one per form
    for relation, forms in _FRAMES:
        for form in forms:
            for match in _compiled(form).finditer(body):
                arguments = tuple(_argument(k, v) for k, v in sorted(match.groupdict().items()) if v)
                out.append(Found(relation, arguments, _own_words(match)))
    return tuple(out)


@functools.lru_cache(maxsize=256)
def _compiled(form: str) -> re.Pattern[str]:
    return re.compile(form)


@functools.cache
def _any_form() -> re.Pattern[str]:
    """Every form of `_FRAMES` as one alternation without the named groups (a name may repeat across forms):
    it matches where at least one form matches, so `found` scans a statement once before trying each form.
    Built on first use (cold starts that never decide pay nothing) and kept: the lexicon's own patterns."""
    bare = (_GROUP_NAME.sub("(?:", form) for _, forms in _FRAMES for form in forms)
    return re.compile("|".join(f"(?:{form})" for form in bare))


_GROUP_NAME = re.compile(r"\(\?P<\w+>")


def shared(new: str, old: str) -> tuple[frozenset[str], frozenset[str]]:
    """The frame words of `new` and of `old` spent on a relation both state with the same arguments (the
    words as written, for the caller to fold); empty sets when they share none."""
    new_found, old_found = found(new), found(old)
    common = {(f.relation, f.arguments) for f in new_found} & {(f.relation, f.arguments) for f in old_found}
    conversed = converse(new, old)
    return (
        _words_of(new_found, common) | (_converse_words(new) if conversed else frozenset()),
        _words_of(old_found, common) | (_converse_words(old) if conversed else frozenset()),
    )


def _words_of(found_here: tuple[Found, ...], common: set[tuple[str, tuple[str, ...]]]) -> frozenset[str]:
    return frozenset(w for f in found_here if (f.relation, f.arguments) in common for w in f.words)


def _participant(word: str, names: frozenset[str]) -> str | None:
    """A pronoun's class ("me", "my" → the user) or a name; None for anything else ("the", "team")."""
    if word in PRONOUNS:
        return PRONOUNS[word]
    return word if word in names else None


@memo(maxsize=4096)
def roles(text: str) -> tuple[tuple[str, str], ...]:
    """(managed, manager) for each statement of who reports to whom in `text`, participants only."""
    body_written = speaker(text)[1]
    names = frozenset(re.findall(r"\b[A-Z][\w-]*", body_written)) - {""}
    names = frozenset(word.casefold() for word in names) - STOP_FOR_TERMS
    body = normalize(body_written)
    out: list[tuple[str, str]] = []
    for form in _CONVERSE:
        for match in _compiled(form).finditer(body):
            managed = _participant(match["report"], names)
            manager = _participant(match["manager"], names)
            if managed and manager and managed != manager:
                out.append((managed, manager))
    return tuple(out)


def converse(new: str, old: str) -> bool | None:
    """Whether both statements say who reports to whom alike (True), differently (False), or one of them
    does not say it (None)."""
    new_roles, old_roles = roles(new), roles(old)
    if not new_roles or not old_roles:
        return None
    return set(new_roles) == set(old_roles)


def _converse_words(text: str) -> frozenset[str]:
    """The words of `text`'s reporting frames less their participants."""
    body = normalize(speaker(text)[1])
    return frozenset(w for form in _CONVERSE for m in _compiled(form).finditer(body) for w in _own_words(m))


def _canonical(text: str, relations: frozenset[str]) -> str:
    """`text` with each form of one of `relations` written as that relation's one verb ("works from",
    "is based in" → "frame-work-location"), its arguments kept; the speaker kept too."""
    who, body = speaker(text)
    body = normalize(body)
    for relation, forms in _FRAMES:
        if relation not in relations:
            continue
        verb = "frame-" + relation.replace(" ", "-")
        for form in forms:
            body = _compiled(form).sub(functools.partial(_with_arguments, verb=verb), body)
    return f"{who}: {body}" if who else body


def _with_arguments(match: re.Match[str], verb: str) -> str:
    arguments = [_argument(k, v) for k, v in match.groupdict().items() if v]
    return " ".join([verb, *arguments])


def one_wording(new: str, old: str) -> tuple[str, str] | None:
    """Both statements with the relations they both state (whatever their arguments) in one wording, so that
    a change of value reads as one ("cycles to work" → "commutes by car now"); None when they share none or
    the wording is already one."""
    relations = frozenset(f.relation for f in found(new)) & frozenset(f.relation for f in found(old))
    if not relations:
        return None
    rewritten = _canonical(new, relations), _canonical(old, relations)
    return None if rewritten == (normalize(new), normalize(old)) else rewritten
