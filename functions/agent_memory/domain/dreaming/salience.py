"""Content salience of a dreaming candidate: what the statement itself says about whether it is worth keeping,
before and besides any recall (issue 19). Pure, deterministic, English-first (Chinese text gets the concept
and number parts only).

    salience = clamp(Σ weight × part − chatter, 0, 1)

Parts, each in [0, 1]:

- `concepts`: distinct content words / 8 (a statement with substance is longer than chit-chat);
- `entities`: names, places and titles — capitalised words that do not start a sentence and are not "I", a
  speaker's name or a greeting — 1 for two or more, ½ for one;
- `numbers_dates`: a number, a year, a month or weekday, a time expression ("last week", "yesterday",
  "next month", "ago") or a period ("monthly", "deadline");
- `first_person`: a first-person fact or plan ("I went", "I'm going to", "my kids", "we adopted");
- `preference`: a like, love, favourite or dislike of the speaker;
- `decision`: a decision, a commitment or a change ("decided", "signed up", "started", "quit", "applied");
- `write_discipline`: the write-discipline classifier found a durable cue (a preference, a decision, a
  project state, a correction, a procedure) — not its cue-less `domain_knowledge` default.

`chatter` subtracts for an utterance that is about the other person's news rather than a fact: one that opens
with an acknowledgement, a compliment or a reaction ("Thanks", "Wow", "That's great", "Sounds fun", "You're
doing great") and states no first-person fact.

A transcript line's speaker prefix (`Speaker: text`, `[Speaker] text`) is not part of the statement: it is
stripped before any part is measured, and the names of the line's speakers never count as entities.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..memo import memo
from ..memory import classify as classifier
from ..patterns import lazy
from ..records import MemoryType
from ..text import tokenize
from .extraction import concept_count, split_speaker

WEIGHTS: dict[str, float] = {
    "concepts": 0.25,
    "entities": 0.20,
    "numbers_dates": 0.25,
    "first_person": 0.15,
    "preference": 0.05,
    "decision": 0.05,
    "write_discipline": 0.05,
}
"""The parts' weights; they sum to 1."""
CHATTER_PENALTY = 0.35
CONCEPT_SATURATION = 8.0

_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_DATE_WORDS = (
    rf"\b(?:{_WEEKDAYS})s?\b|\b(?:january|february|april|june|july|august|september|october|november|"
    r"december)\b|\b(?:yesterday|tomorrow|tonight|ago|weekend|birthday|anniversary|daily|weekly|monthly|"
    r"yearly|annually|quarterly|deadline)\b|"
    r"\b(?:last|next|this|past|coming)\s+(?:week|month|year|summer|winter|spring|fall|autumn|weekend|"
    r"night|time|few\s+(?:days|weeks|months|years))\b|"
    r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|twenty|hundred|thousand)\b|"
    r"\b(?:days?|weeks?|months?|years?)\s+(?:ago|later|before|after)\b"
)
_NUMBER_DATE_RE = re.compile(rf"\d|{_DATE_WORDS}", re.IGNORECASE)
_FIRST_PERSON_RE = re.compile(
    r"\b(?:i|we)\s+(?:just\s+|recently\s+|finally\s+|also\s+|actually\s+|really\s+)?"
    r"(?:am|was|were|have|had|went|got|started|joined|bought|made|finished|took|visited|moved|adopted|"
    r"learned|learnt|became|began|tried|found|met|lost|won|wrote|painted|ran|read|built|created|received|"
    r"volunteered|attended|graduated|travel(?:l)?ed|saw|did|used|play|played|work|worked|live|lived|"
    r"will|would\s+like|want|plan|planned|hope|need|'m|'ve|'ll|'d)\b|"
    r"\b(?:i|we)\s+(?:just\s+|recently\s+|finally\s+|also\s+)?[a-z]{3,}ed\b|"
    r"\bi'm\b|\bi've\b|\bi'll\b|\bwe're\b|\bwe've\b|\bmy\s+(?!goodness|god|gosh|pleasure|bad)\w+|\bour\s+\w+",
    re.IGNORECASE,
)
_PREFERENCE_RE = re.compile(
    r"\b(?:love|loved|loves|like|likes|liked|enjoy|enjoys|enjoyed|favorite|favourite|prefer|prefers|"
    r"preferred|passion|passionate|hate|hates|dislike|dislikes|fan\s+of|into)\b",
    re.IGNORECASE,
)
_DECISION_RE = re.compile(
    r"\b(?:decided|decide|decision|chose|choose|signed\s+up|sign\s+up|going\s+to|gonna|plan(?:ning)?\s+to|"
    r"started|starting|quit|applied|accepted|enrolled|registered|switched|committed|promised|"
    r"booked|scheduled|will|'ll)\b",
    re.IGNORECASE,
)
_CHATTER_OPEN_RE = re.compile(
    r"^\s*(?:thanks?|thank\s+you|thx|wow+|whoa+|woah+|aw+|oh+|ooh+|haha\w*|lol|yay|omg|congrats|"
    r"congratulations|glad|great|awesome|cool|nice|amazing|sweet|sure|ok(?:ay)?|yeah|yes|yep|no\s+worries|"
    r"hey|hi|hello|bye|good\s+(?:luck|job|night|morning)|that'?s|that\s+is|this\s+is|sounds|you'?re|you\s+are|"
    r"you\s+(?:should|must|can|have|did|got)|love\s+(?:that|this|it)|so\s+(?:cool|great|glad|happy)|"
    r"how\s+(?:cool|fun|nice|great)|what\s+a)\b",
    re.IGNORECASE,
)
_CAPITALISED_RE = re.compile(r"\b[A-Z][a-zA-Z'-]+\b")

# The same cues, fast, for an ASCII statement (nearly all of them). On an ASCII string, case-insensitive
# matching is exactly case-sensitive matching of its lower-cased copy against a pattern whose literals are all
# lower case (the patterns above have no upper-case letter and no case-dependent construct; the four non-ASCII
# letters IGNORECASE also folds, İ ı ſ K, cannot occur), and Python's re without IGNORECASE runs about twice as
# fast. The date cue is split in two: `\d` on the text, then the word branches behind one `\b(?=[a-z])` (every
# branch opens with `\b` and a lower-case letter), which spares re trying each branch at every position.
# Compiled on first use (a cold start that never sweeps never pays for them).
_ASCII_DIGIT_RE = lazy(r"\d")
_ASCII_DATE_WORDS_RE = lazy(rf"\b(?=[a-z])(?:{_DATE_WORDS})")
_ASCII_FIRST_PERSON_RE = lazy(_FIRST_PERSON_RE.pattern)
_ASCII_PREFERENCE_RE = lazy(_PREFERENCE_RE.pattern)
_ASCII_DECISION_RE = lazy(_DECISION_RE.pattern)
_ASCII_CHATTER_OPEN_RE = lazy(_CHATTER_OPEN_RE.pattern)
_NOT_ENTITIES = frozenset(
    {
        "I",
        "I'm",
        "I've",
        "I'll",
        "I'd",
        "Hey",
        "Hi",
        "Hello",
        "Thanks",
        "Thank",
        "Wow",
        "Oh",
        "OK",
        "Ok",
        "Yes",
        "No",
        "Yeah",
        "Mom",
        "Dad",
        "God",
        "Lol",
        "Haha",
        "Omg",
    }
)


@dataclass(frozen=True)
class Salience:
    value: float
    parts: dict[str, float]
    chatter: bool

    def as_dict(self) -> dict[str, object]:
        return {
            "value": round(self.value, 4),
            "parts": {name: round(part, 3) for name, part in self.parts.items()},
            "chatter": self.chatter,
        }


def _starts_sentence(body: str, start: int) -> bool:
    """Whether the word at `start` opens a sentence: only spaces and quotes between it and the start of the
    text or a sentence end."""
    index = start - 1
    while index >= 0 and body[index] in " \t\n\"'(":
        index -= 1
    return index < 0 or body[index] in ".!?:;"


def speakers_of(texts: Iterable[str]) -> frozenset[str]:
    """The speakers' names (and each of their words) found in transcript-line prefixes among `texts`."""
    return speakers_of_lines(split_speaker(text) for text in texts)


def speakers_of_lines(lines: Iterable[tuple[str | None, str]]) -> frozenset[str]:
    """`speakers_of` for texts already split by `split_speaker`."""
    names: set[str] = set()
    for name, _ in lines:
        if name:
            names.add(name)
            names.update(name.split())
    return frozenset(names)


def salience(
    text: str,
    speakers: frozenset[str] = frozenset(),
    *,
    durable: bool | None = None,
    concepts: float | None = None,
    line: tuple[str | None, str] | None = None,
) -> Salience:
    """The content salience of one statement (see the module docstring). `durable`: whether the write
    discipline's classifier found a durable cue, when the caller already knows (a candidate's kind);
    None classifies the statement here. `concepts`: its concept count when the caller has it (a candidate's
    terms; a speaker's name in the prefix then counts too). Cached: the same candidates come back sweep after
    sweep. `line`: `split_speaker(text)` when the caller has it already (a sweep splits every candidate once)."""
    return _salience(text, speakers, durable, concepts, line)


@memo(maxsize=32_768)
def _salience(
    text: str,
    speakers: frozenset[str],
    durable: bool | None,
    concepts: float | None,
    line: tuple[str | None, str] | None,
) -> Salience:
    name, body = split_speaker(text) if line is None else line
    names = speakers | ({name, *name.split()} if name else set())
    if concepts is None:
        concepts = concept_count(frozenset(tokenize(body)))
    entities = 0
    for match in _CAPITALISED_RE.finditer(body):
        word = match.group(0)
        if word in _NOT_ENTITIES or word in names or word.removesuffix("'s") in names:
            continue
        if _starts_sentence(body, match.start()):
            continue
        entities += 1
    dated, first_person, preference, decision, chatter_open = _cues(body)
    if durable is None:
        verdict = classifier.classify(body)
        durable = verdict.signals != ["domain_knowledge:default"] and verdict.type is not MemoryType.TEMPORARY
    parts = {
        "concepts": min(1.0, concepts / CONCEPT_SATURATION),
        "entities": 1.0 if entities >= 2 else 0.5 if entities == 1 else 0.0,
        "numbers_dates": 1.0 if dated else 0.0,
        "first_person": 1.0 if first_person else 0.0,
        "preference": 1.0 if preference else 0.0,
        "decision": 1.0 if decision else 0.0,
        "write_discipline": 1.0 if durable else 0.0,
    }
    chatter = chatter_open and not first_person
    value = 0.0  # Σ weight × part, in WEIGHTS order (a plain loop: no generator per candidate)
    for part, weight in WEIGHTS.items():
        value += weight * parts[part]
    value -= CHATTER_PENALTY if chatter else 0.0
    return Salience(max(0.0, min(1.0, value)), parts, chatter)


def _cues(body: str) -> tuple[bool, bool, bool, bool, bool]:
    """Whether `body` has a number or date, a first-person fact, a preference, a decision, and whether it opens
    with chatter: the fast patterns for ASCII text, the case-insensitive ones otherwise (the same answers)."""
    if body.isascii():
        lowered = body.lower()
        return (
            _ASCII_DIGIT_RE.compiled.search(body) is not None
            or _ASCII_DATE_WORDS_RE.compiled.search(lowered) is not None,
            _ASCII_FIRST_PERSON_RE.compiled.search(lowered) is not None,
            _ASCII_PREFERENCE_RE.compiled.search(lowered) is not None,
            _ASCII_DECISION_RE.compiled.search(lowered) is not None,
            _ASCII_CHATTER_OPEN_RE.compiled.match(lowered) is not None,
        )
    return (
        _NUMBER_DATE_RE.search(body) is not None,
        _FIRST_PERSON_RE.search(body) is not None,
        _PREFERENCE_RE.search(body) is not None,
        _DECISION_RE.search(body) is not None,
        _CHATTER_OPEN_RE.match(body) is not None,
    )
