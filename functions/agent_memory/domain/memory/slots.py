"""The values a statement holds, in a canonical form two statements can be compared by (issue 27).

A statement is read as a sequence of *terms*: its content words (light stems from `tokens`), with every value
brought to one spelling — numbers and number words ("two" = "2"), times ("2 pm" = "14:00"), weekdays
("Mondays" = "monday"), months, ISO dates, versions — and with a few predicate synonyms folded ("likes",
"loves", "enjoys"). Each term has a kind: `value` (number, time, date, weekday, month, version), `entity` (a
name written with a capital inside the sentence, or a token with digits or symbols such as `b@x.com`),
`negation`, or `word`.

Two uses:
* the merge guard (`merge_guard.same_statement`) compares them: two statements may be merged only when they
  hold the same terms (as a multiset), the same polarity and the same order of compared items ("X over Y"); a
  difference in any value, name or content word forbids it. Words that only soften or intensify ("really", "best") do not count.
* `terms` and `ordered_pairs` — the material `relation.py` aligns to find an update.

Pure string work over precompiled, bounded patterns; every function is memoised by its text because one
remember compares the new statement with up to a dozen neighbours."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from ..memo import memo
from ..patterns import lazy
from .tokens import normalize, speaker, stem, tokens

TermKind = Literal["value", "entity", "negation", "word"]


@dataclass(frozen=True)
class Term:
    key: str
    kind: TermKind
    surface: str


_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40,
    "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "dozen": 12,
    "once": 1, "twice": 2, "single": 1, "double": 2, "pair": 2, "couple": 2,
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5,
}  # fmt: skip
_WEEKDAYS = {
    "monday": "monday", "mon": "monday", "tuesday": "tuesday", "tue": "tuesday", "tues": "tuesday",
    "wednesday": "wednesday", "wed": "wednesday", "thursday": "thursday", "thu": "thursday",
    "thurs": "thursday", "friday": "friday", "fri": "friday", "saturday": "saturday", "sat": "saturday",
    "sunday": "sunday", "sun": "sunday",
    "montag": "monday", "dienstag": "tuesday", "mittwoch": "wednesday", "donnerstag": "thursday",
    "freitag": "friday", "samstag": "saturday", "sonntag": "sunday", "lundi": "monday", "mardi": "tuesday",
    "mercredi": "wednesday", "jeudi": "thursday", "vendredi": "friday", "samedi": "saturday",
    "dimanche": "sunday", "lunes": "monday", "martes": "tuesday", "miércoles": "wednesday",
    "jueves": "thursday", "viernes": "friday", "sábado": "saturday", "domingo": "sunday",
}  # fmt: skip
_MONTHS = {
    "january": "jan", "jan": "jan", "february": "feb", "feb": "feb", "march": "mar", "mar": "mar",
    "april": "apr", "apr": "apr", "may": "may", "june": "jun", "jun": "jun", "july": "jul", "jul": "jul",
    "august": "aug", "aug": "aug", "september": "sep", "sept": "sep", "sep": "sep", "october": "oct",
    "oct": "oct", "november": "nov", "nov": "nov", "december": "dec", "dec": "dec",
}  # fmt: skip
# Predicates that say the same thing: folded to one key so "likes X" and "loves X" can merge. Values never
# appear here; a word missing from this table only makes a merge less likely, never wrong.
_SYNONYMS = {
    "love": "like", "enjoy": "like", "fond": "like", "favor": "prefer", "favour": "prefer",
    "utilize": "use", "utilise": "use", "employ": "use", "leverage": "use", "rely": "use",
    "ship": "deploy", "release": "deploy", "roll": "deploy", "begin": "start", "commence": "start",
    "large": "big", "huge": "big", "small": "little", "tiny": "little", "quick": "fast", "rapid": "fast",
    "hate": "dislike", "detest": "dislike", "loathe": "dislike", "every": "each", "weekly": "week",
    "daily": "day", "monthly": "month", "yearly": "year", "annually": "year", "annual": "year",
    "reside": "live", "residing": "live", "resid": "live", "mail": "email", "e-mail": "email",
    "occur": "happen", "take": "happen", "held": "happen", "hold": "happen",
    "repository": "repo", "licence": "license", "child": "kid", "children": "kid", "postgresql": "postgres",
    "study": "learn", "studying": "learn", "relocate": "move", "relocated": "move", "nightly": "night",
    "employed": "work", "home": "live", "girl": "daughter", "boy": "son",
    "began": "start", "concise": "short", "brief": "short", "response": "answer", "reply": "answer",
}  # fmt: skip
_SYNONYM_STEMS = {stem(word): stem(canonical) for word, canonical in _SYNONYMS.items()}
_DERIVATIONS = ("ation", "ment", "ness", "ity", "er", "or", "ic", "y", "ly")


@memo(maxsize=65536)
def _fold(key: str) -> str:
    """One key for a word's family: synonyms folded ("loves" = "likes"), then derivational endings dropped
    ("deployment" = "deploy", "teacher" = "teach", "allergic" = "allergy"); only for words of 6+ letters."""
    key = _SYNONYM_STEMS.get(key, key)
    if len(key) >= 6 and key.isalpha():
        for ending in _DERIVATIONS:
            if key.endswith(ending) and len(key) - len(ending) >= 4:
                return _fold(key[: -len(ending)])  # "deployment" → "deploy" → "deplo", as "deploy" folds
    return key


# Words that soften, intensify or frame without adding a value: a difference in them alone is a paraphrase.
_SOFT_TEXT = """
    really very always usually generally typically best most mostly quite pretty just also too much strongly
    definitely truly certainly absolutely kind sort rather lot lots please note remember keep mind that which
    what user users person people team default normally basically actually literally simply only currently
    now today nowadays these days moment time nah ok okay yeah yep hmm oh something anything
"""
SOFT = frozenset(_SOFT_TEXT.split())
_NEGATION_WORDS_TEXT = """
    not no never none nothing nobody neither nor without cannot stop stopped quit
    nicht kein keine keinen keinem keiner keines nie niemals ne pas jamais non nunca nada 不 没 没有 别 不要 不再
"""
_NEGATION_WORDS = frozenset(_NEGATION_WORDS_TEXT.split())

_TIME_RE = lazy(
    r"\b(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ap>a\.?m\.?|p\.?m\.?)(?![a-z])|\b(?P<h24>\d{1,2}):(?P<m24>\d{2})\b"
    r"|\b(?P<word>noon|midday|midnight)\b"
)
_HEX_COLOUR_RE = lazy(r"(?<![\w&])#(?=\d*[a-f])((?:[0-9a-f]{3}){1,2}|[0-9a-f]{8})(?![\w-])")
"""A hex colour ("#1E6FD9", "#fff"; a letter in it: "#123" is an issue number): one value, not a number and a name."""
_ISO_DATE_RE = lazy(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_VERSION_RE = lazy(r"\bv?(\d+(?:\.\d+)+)\b")
_NUMBER_RE = lazy(r"(?<![\w.])(\d+(?:[.,]\d+)?)(?:\s*(%|°c|°f|k\b|m\b|kb\b|gb\b|mb\b|tb\b|ms\b|s\b))?")
_UNIT_WORDS = (
    (lazy(r"(?<=\d)\s*(?:°\s*c|degrees?\s+(?:c|celsius|centigrade))\b"), "°c"),
    (lazy(r"(?<=\d)\s*(?:°\s*f|degrees?\s+(?:f|fahrenheit))\b"), "°f"),
    (lazy(r"(?<=\d)\s*(?:kilobytes?|kbs?)\b"), " kb"),
    (lazy(r"(?<=\d)\s*(?:megabytes?|megs?|mbs)\b"), " mb"),
    (lazy(r"(?<=\d)\s*(?:gigabytes?|gigs?|gbs)\b"), " gb"),
    (lazy(r"(?<=\d)\s*(?:terabytes?|tbs)\b"), " tb"),
    (lazy(r"(?<=\d)\s*(?:milliseconds?|msecs?)\b"), " ms"),
    (lazy(r"(?<=\d)\s*(?:seconds?|secs?)\b"), " s"),
)
"""A unit after a number spelled out or abbreviated is one unit: "20 megabytes" = "20 MB", "30 seconds" = "30 s",
"21 degrees Celsius" = "21°C" (and is not "21°F"; "21 degrees" without a scale stays a bare number)."""
_CURRENCIES = {
    "€": "eur", "euro": "eur", "eur": "eur", "$": "usd", "dollar": "usd", "usd": "usd", "£": "gbp",
    "gbp": "gbp", "¥": "jpy", "yen": "jpy", "jpy": "jpy", "chf": "chf",
}  # fmt: skip
_CURRENCY_RE = lazy(r"[€$£¥]|\b(?:euros?|eur|dollars?|usd|gbp|yen|jpy|chf)\b")
"""A currency is a value: "€3,500" = "3,500 euros", and "€3,500" is not "$3,500"."""
_ORDINAL_RE = lazy(r"\b(\d+)(?:st|nd|rd|th)\b")
_ORDERED_RE = lazy(
    r"(?P<x>[\w#+.-]+(?:\s+[\w#+.-]+){0,2}?)\s+(?:over|rather\s+than|instead\s+of|more\s+than|before|to(?!\s+be\b)|vs\.?|"
    r"versus)\s+(?P<y>[\w#+.-]+(?:\s+(?!for\b|in\b|on\b|at\b|when\b|with\b)[\w#+.-]+){0,2})"
)
_PREFERENCE_RE = lazy(
    r"\b(?:prefer\w*|favou?r\w*|rather|like\w*\s+\w+\s+better|choose|chose|pick\w*|more\s+than)\b"
)
_OTHER_COMPARATOR_RE = lazy(r"\b(?:over|rather\s+than|more\s+than|instead\s+of)\b")
_VS_NAME_RE = lazy(r"\bvs\s+(?=\w)")
_RATHER_RE = lazy(
    r"\brather\s+(?:[\w#+.-]+\s+){0,3}?(?P<x>[\w#+.-]+)\s+than\s+(?:with\s+|to\s+|in\s+)?(?P<y>[\w#+.-]+)"
)
"""'would rather indent with tabs than with spaces': the compared items are the words next to 'than'."""
_CAPITAL_RE = lazy(r"(?<![\w'’])([A-Z][\w&.-]*|[a-z]+[A-Z][\w.-]*)")
_SENTENCE_START_RE = lazy(r"(?:^\s*(?:[-*•]\s*)?|[.!?:;]\s+|\n\s*[-*]?\s*|\*\*\s*|\(\s*)$")


_HOUR_WORDS = "one two three four five six seven eight nine ten eleven twelve"
_SPOKEN_TIME_RE = lazy(
    rf"\b(?:(?P<part>half|quarter)\s+(?P<rel>past|to)\s+(?P<h>\d{{1,2}}|{_HOUR_WORDS.replace(' ', '|')})"
    rf"(?:\s+o'?clock)?|(?P<h2>\d{{1,2}}|{_HOUR_WORDS.replace(' ', '|')})\s+o'?clock)"
    r"(?:\s+(?P<day>in\s+the\s+(?:morning|afternoon|evening)|at\s+night))?"
)
"""A time said in words: "half past six in the morning" = 6:30 am, "quarter to ten" = 9:45, "7 o'clock"."""


def _spoken_time(match: re.Match[str]) -> str:
    said = match.group("h") or match.group("h2")
    hour = int(said) if said.isdigit() else _NUMBER_WORDS[said]
    minute = {"half": 30, "quarter": 15, None: 0}[match.group("part")]
    if match.group("rel") == "to":
        hour, minute = (hour - 1) % 12 or 12, 60 - minute
    day = match.group("day") or ""
    if "night" in day and (hour == 12 or hour < 5):
        return _time_key(hour % 12, minute, None)  # "half past twelve at night" = 00:30
    meridiem = "am" if "morning" in day else "pm" if day else None
    return _time_key(hour, minute, meridiem)


def _time_key(hour: int, minute: int, meridiem: str | None) -> str:
    if meridiem:
        hour = hour % 12 + (12 if meridiem.startswith("p") else 0)
    return f"t{hour:02d}:{minute:02d}"


_TENS = "twenty thirty forty fifty sixty seventy eighty ninety"
_UNITS = "one two three four five six seven eight nine"
_COMPOUND_NUMBER_RE = lazy(
    rf"\b(?P<tens>{_TENS.replace(' ', '|')})[\s-](?P<unit>{_UNITS.replace(' ', '|')})\b"
)
"""A number said in two words: "thirty-five" = "thirty five" = 35."""
_CARDINALS = [
    word for word in _NUMBER_WORDS if list(_NUMBER_WORDS).index(word) < list(_NUMBER_WORDS).index("once")
]
_NUMBER_WORD_ALTERNATION = "|".join(sorted(_CARDINALS, key=len, reverse=True))
_AGE_RE = lazy(r"(?<![\w.])(?P<n>\d+)(?:\s+|-)years?(?:\s+|-)old\b")
"""An age: "35 years old" says what "I am 35" does; the value stays, the unit words go."""
_PERCENT_RE = lazy(r"(?<![\w.])(?P<n>\d+(?:\.\d+)?)\s*(?:%|per\s?cent\b)")
_FRACTION_RE = lazy(r"(?<![\w.])(?P<n>0\.\d+)(?![\w.])")
"""A share written as a fraction or a percentage is one value: 0.2 = 20 % = 20 percent."""
_DURATION_RE = lazy(
    rf"(?<![\w.])(?P<n>\d+(?:\.\d+)?|{_NUMBER_WORD_ALTERNATION})\s+(?P<unit>weeks?|hours?|hrs?)\b"
    r"|\b(?P<part>quarter|half)\s+(?:of\s+)?an\s+hour\b"
)
"""A duration in one unit for each kind: weeks in days ("two weeks" = "14 days"), hours in minutes ("a quarter
of an hour" = "15 minutes"). Months and years are not converted (their length varies)."""


def _share(number: str, percent: bool) -> str:
    value = Decimal(number) / (100 if percent else 1)
    return f"n{format(value.normalize(), 'f')}"


def _duration(match: re.Match[str]) -> tuple[str, str]:
    """(canonical number, unit word) of a duration match."""
    if match.group("part"):
        return ("n15" if match.group("part") == "quarter" else "n30"), "minutes"
    said = match.group("n")
    number = Decimal(said) if said[0].isdigit() else Decimal(_NUMBER_WORDS[said])
    weeks = match.group("unit").startswith("w")
    value = number * (7 if weeks else 60)
    return f"n{format(value.normalize(), 'f')}", "days" if weeks else "minutes"


_IDIOMS = (
    (lazy(r"\b(?:can|could)\s+not\s+(?:stand|bear)\b"), "dislike"),
    (lazy(r"\b(ha(?:ve|s))\s+got\b(?!\s+to\b)"), r"\1"),
    (lazy(r"\bevery\s+other\b"), "every second"),
    (lazy(r"\b(?:ne\s+|n')(?=(?:[\w']+\s+){0,3}?(?:pas|jamais|rien|personne)\b)"), ""),
    (lazy(r"\bn'(?=\w+(?:\s+[\w']+){0,2}?\s+plus\b)"), "ne "),
)
"""Phrases with one plain spelling: "can't stand" = "dislike", "have got" = "have" (not "have got to"), "every
other" = "every second"; French "ne … pas" is one negation ("pas" carries it), "n'… plus" one too."""


def _canonical_values(text: str) -> tuple[str, list[str]]:
    """`text` (normalised) with times, ISO dates and versions replaced by placeholder words, and the values in
    order. Placeholders keep the sentence's shape for alignment."""
    values: list[str] = []

    def keep(value: str) -> str:
        values.append(value)
        return f" zzv{len(values) - 1}zz "

    def time(match: re.Match[str]) -> str:
        if match.group("word"):
            return keep("t00:00" if match.group("word") == "midnight" else "t12:00")
        if match.group("h24") is not None:
            return keep(_time_key(int(match.group("h24")), int(match.group("m24")), None))
        meridiem = match.group("ap").replace(".", "")
        return keep(_time_key(int(match.group("h")), int(match.group("m") or 0), meridiem))

    def duration(match: re.Match[str]) -> str:
        number, unit = _duration(match)
        return f"{keep(number)}{unit} "

    for pattern, replacement in _IDIOMS:
        text = pattern.sub(replacement, text)
    text = _HEX_COLOUR_RE.sub(lambda m: keep(f"hex:{m[1]}"), text)
    text = _COMPOUND_NUMBER_RE.sub(lambda m: f" {_NUMBER_WORDS[m['tens']] + _NUMBER_WORDS[m['unit']]} ", text)
    text = _AGE_RE.sub(lambda m: keep(f"n{int(m['n'])}"), text)
    text = _PERCENT_RE.sub(lambda m: keep(_share(m["n"], percent=True)), text)
    text = _FRACTION_RE.sub(lambda m: keep(_share(m["n"], percent=False)), text)
    text = _SPOKEN_TIME_RE.sub(lambda m: keep(_spoken_time(m)), text)
    text = _TIME_RE.sub(time, text)
    text = _DURATION_RE.sub(duration, text)
    text = _ISO_DATE_RE.sub(lambda m: keep(f"d{int(m[1]):04d}-{int(m[2]):02d}-{int(m[3]):02d}"), text)
    text = _VERSION_RE.sub(lambda m: keep(f"v{m[1]}"), text)
    text = _CURRENCY_RE.sub(lambda m: keep(f"cur:{_CURRENCIES[m[0].rstrip('s')]}"), text)
    text = _ORDINAL_RE.sub(lambda m: keep(f"n{int(m[1])}"), text)
    for pattern, unit in _UNIT_WORDS:
        text = pattern.sub(unit, text)
    text = _NUMBER_RE.sub(lambda m: keep(f"n{m[1].replace(',', '')}{m[2] or ''}"), text)
    return text, values


@memo(maxsize=8192)
def entities(text: str) -> frozenset[str]:
    """Casefolded words written with a capital where a sentence does not start (names: "Acme", "Berlin",
    "Alice", "iOS"), plus words with digits or symbols ("b@x.com", "gpt-4")."""
    found: set[str] = set()
    for match in _CAPITAL_RE.finditer(text):
        word = match.group(1).strip(".-")
        if not word or word == "I":
            continue
        if _SENTENCE_START_RE.search(text[: match.start()]) and not _looks_like_name(word):
            continue
        found.add(word.casefold())
    return frozenset(found)


_ACRONYM_PLURAL_RE = lazy(r"(?<![\w'’])([A-Z][A-Z0-9]+)s\b")


def _acronym_plurals(text: str) -> frozenset[str]:
    """Casefolded plurals of names written in capitals with a lower-case "s" ("PRs", "APIs", "URLs"): the name
    counted, written "pr", "api", "url" in the singular. "AWS", "JS", "OS" (an upper-case S) are names as such."""
    return frozenset(match.group(0).casefold() for match in _ACRONYM_PLURAL_RE.finditer(text))


def _looks_like_name(word: str) -> bool:
    """A sentence's first word is a name when it has inner capitals or digits ("iOS", "GitHub", "S3")."""
    return any(c.isupper() for c in word[1:]) or any(c.isdigit() for c in word)


@memo(maxsize=8192)
def terms(text: str) -> tuple[Term, ...]:
    """The statement's terms in order (see the module docstring). A transcript line's speaker is left out."""
    _, body = speaker(text)
    names = entities(body)
    plurals = _acronym_plurals(body)
    canonical, values = _canonical_values(normalize(body))
    out: list[Term] = []
    for token in tokens(canonical):
        surface = token.surface
        if surface.startswith("zzv") and surface.endswith("zz"):
            value = values[int(surface[3:-2])]
            out.append(Term(value, "value", value))
        elif surface in _NEGATION_WORDS or (token.key in _NEGATION_WORDS and len(token.key) > 2):
            # a stem's key counts ("stopped" → "stop"), not a short one ("need" → "ne", French "ne")
            out.append(Term("<not>", "negation", surface))
        elif surface in _STATES and _state_position(canonical, token.start, token.end):
            out.append(Term(f"state:{_STATES[surface]}", "value", surface))
        elif surface in _NUMBER_WORDS:
            out.append(Term(f"n{_NUMBER_WORDS[surface]}", "value", surface))
        elif surface in _WEEKDAYS or surface.rstrip("s") in _WEEKDAYS:
            out.append(Term(_WEEKDAYS.get(surface) or _WEEKDAYS[surface.rstrip("s")], "value", surface))
        elif surface in _MONTHS and (surface != "may" or "may" in names):
            out.append(Term(_MONTHS[surface], "value", surface))
        elif token.key.startswith("<"):
            continue  # pronouns: who the statement is about is compared by `relation`, not here
        elif token.kind == "sym":
            continue
        elif surface in plurals:  # "PRs" is the name "PR" counted, as "tickets" is "ticket"
            out.append(Term(_fold(stem(surface[:-1])), "entity", surface))
        elif surface in names or any(c.isdigit() for c in surface) or "@" in surface:
            out.append(Term(_fold(token.key), "entity", surface))
        elif token.surface in STOP_FOR_TERMS:
            continue
        else:
            out.append(Term(_fold(token.key), "word", surface))
    return tuple(out)


_STOP_FOR_TERMS_TEXT = """
    a an the this that these those it its you your be is are was were am been being do does did have has had
    will would can could should shall may might must to of for in on at by with and or but so as into from
    over than then there here some any all about up out off via per also just still again wieder erneut 的 了 吧 呢 吗 啊
    是 在 和 也 都 很 就 还 们 把 被 个 这 那 过 着 再
"""
STOP_FOR_TERMS = frozenset(_STOP_FOR_TERMS_TEXT.split())
"""Function words dropped from terms; prepositions stay out because "runs on" and "runs in" are one frame."""


@memo(maxsize=8192)
def ordered_pairs(text: str) -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
    """Compared items in order, each side as its content words: "prefers tabs over spaces" → (({"tab"},
    {"spac"}),). Only where the statement expresses a preference or choice, so "moved to Munich" is no pair."""
    normalized = normalize(speaker(text)[1])
    if not _PREFERENCE_RE.search(normalized) and " over " not in normalized and " vs" not in normalized:
        return ()
    if _OTHER_COMPARATOR_RE.search(normalized):
        normalized = _VS_NAME_RE.sub(
            "vs-", normalized
        )  # "prefers PyCharm over VS Code": a name, no comparator
    pairs: list[tuple[frozenset[str], frozenset[str]]] = []
    for pattern in (_ORDERED_RE, _RATHER_RE):
        for match in pattern.finditer(normalized):
            x, y = _side(match.group("x")), _side(match.group("y"))
            if x and y and x != y and (x, y) not in pairs:
                pairs.append((x, y))
    return tuple(pairs)


def _side(phrase: str) -> frozenset[str]:
    keys = {t.key for t in tokens(phrase) if t.surface not in STOP_FOR_TERMS and not t.key.startswith("<")}
    return frozenset(keys - _PREFERENCE_KEYS)


_PREFERENCE_KEYS = frozenset({"prefer", "favor", "favour", "rather", "lik", "like", "choos", "chos", "pick"})


_STATES = {
    "on": "on", "off": "off", "enabled": "on", "disabled": "off", "true": "on", "false": "off",
    "open": "open", "closed": "closed", "allowed": "on", "forbidden": "off", "banned": "off",
}  # fmt: skip
_STATE_BEFORE_RE = lazy(r"(?:\b(?:is|are|was|were|be|turned|switched|set|stays?|remains?|now|flag)\s+)$")


_STATE_AFTER_RE = lazy(
    r"^\s*(?:$|[.,;!?)]|(?:in|for|at|during|since|until|now|again|by|everywhere|across|globally)\b)"
)


def _state_position(text: str, start: int, end: int) -> bool:
    """ "on"/"off" as a state ("the flag is off", "turned on", "… is on in staging"), not a preposition ("is on
    March 10")."""
    if not _STATE_AFTER_RE.match(text[end:]) or text[:start].endswith("from now "):
        return False  # "from now on" dates a statement
    return bool(_STATE_BEFORE_RE.search(text[:start])) or not text[end:].strip(" .!;")


def is_date(key: str) -> bool:
    """Whether a value term is a date or time (ISO date, time of day, weekday, month)."""
    if key[:1] in ("d", "t") and key[1:2].isdigit():
        return True
    return key in _WEEKDAYS.values() or key in _MONTHS.values()


def negations(text: str) -> int:
    return sum(1 for term in terms(text) if term.kind == "negation")


def values(text: str) -> Counter[str]:
    """Values and names of the statement, counted (two "3"s are not one)."""
    return Counter(term.key for term in terms(text) if term.kind in ("value", "entity"))


def meaning(text: str) -> Counter[str]:
    """Every term but the soft words, counted: what two statements must share to be one statement."""
    return Counter(
        term.key
        for term in terms(text)
        if term.kind != "word" or (term.key not in SOFT and term.surface not in SOFT)
    )


_PERMISSION_TEXT = "allowed allow permitted permit"
_LIGHT_VERBS = frozenset(stem(word) for word in ["use", "using", "do", "be", "have", "get", "go", "make"])


def negated(text: str) -> frozenset[str]:
    """The first content term after each negation, past a light verb: what is negated ("use pnpm, not npm"
    and "don't use npm" both negate npm). What is "not allowed" is what stands before ("deployments are not
    allowed on Fridays" negates deployments, as "never deploy on Fridays" does)."""
    found: set[str] = set()
    listed = terms(text)
    for index, term in enumerate(listed):
        if term.kind != "negation":
            continue
        following = next(
            (
                t.key
                for t in listed[index + 1 :]
                if t.kind != "negation"
                and t.key not in SOFT
                and t.surface not in SOFT  # "not something I enjoy" negates "enjoy"
                and t.key not in _LIGHT_VERBS
            ),
            "",
        )
        if term.surface in _AFTER_VERB:  # French: "n'aime pas", "ne les aime pas": the verb before
            following = next((t.key for t in reversed(listed[:index]) if t.kind == "word"), following)
        if following in PERMISSIONS:
            following = next((t.key for t in reversed(listed[:index]) if t.kind == "word"), following)
        found.add(following)
    return frozenset(found)


PERMISSIONS = frozenset(stem(word) for word in _PERMISSION_TEXT.split())
_AFTER_VERB = frozenset(["pas", "jamais"])
"""Negations that follow what they negate (French "ne … pas")."""
"""Words whose negation forbids what stands before them."""
