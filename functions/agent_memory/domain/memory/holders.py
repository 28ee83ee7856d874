"""What a statement gives a value for (issue 27, "never destroy what a user gave us"): its holder, the noun
phrase before its first verb ("Harbor's lockfile", "The Atlas API", "Standup"), and the rest, its predicate.

A change cue ("moved to", "now", "deprecated") supersedes an older statement only about the same holder and
the same attribute. A shared name alone is not enough: "Harbor's lockfile moved to pnpm 9" is about the
lockfile, not about Harbor's palette; "The Atlas API is at v3" says nothing of the port the Atlas API listens
on. Used by `frames.changed_topic`, `frames._one_slot` (a change cue in a shared frame) and
`relation._opposition` (a switch); pure string work."""

from __future__ import annotations

from ..patterns import lazy
from . import copula, cues
from .slots import SOFT, terms
from .tokens import normalize, stem

_PREFIX_RE = lazy(
    r"^\s*(?:[-*•]\s*)?(?:\[[^\]]{1,40}\]\s*)?(?:\d{4}-\d\d-\d\d\s*(?::|-|—|–)?\s*)?"
    r"(?:(?:from\s+now\s+on|going\s+forward|now)\s*,?\s+)?"
    r"(?:(?:the|our|my|their|its|his|her|your|a|an|this|that|le|la|les|el|los|las|der|die|das)\s+)?"
    r"(?:(?:new|every|each|all|any)\s+)?"
)
_WORD_RE = lazy(r"[^\W_][\w.#+/-]*(?:'s)?|'s|[:;,]")
_BOUNDARY_WORDS = """
    is are was were be been being am has have had will would must should can could may might need needs does do did
    got gets get keeps keep now no not never also still just finally always only in on at to for from with by of
    about over after before since until via as than and or but , ; : que est sont ist sind hat haben es son está
    están a en de à au zu im bei sur dans chez para por con
"""
_BOUNDARY = frozenset(_BOUNDARY_WORDS.split())
"""Words that end a holder: a copula, an auxiliary, a preposition, a conjunction, a clause's punctuation."""
_VERB_WORDS = """
    run use live work go come need want like love prefer own handle leave start stop take make send ship sync
    expire deploy happen meet pay cost last require support serve store keep talk speak read write drive play eat
    drink belong report lead manage rotate end begin open close follow wake sleep give gave trabajo vivo tengo uso
    habe wohne arbeite
"""
_VERBS = frozenset(stem(word) for word in _VERB_WORDS.split())
"""Verbs in their base form: a plural holder's verb ("Backups run nightly") or an imperative's first word."""
_UNSAID_WORDS = (
    "i we you they he she it me us them there this that these those ya so well and but then oh please"
)
_UNSAID = frozenset(_UNSAID_WORDS.split())
"""First words that leave the holder unsaid (a pronoun, a filler): nothing is known of it."""
_MAX_WORDS = 5
_INFLECTED_RE = lazy(r"[a-z]{3,}(?:ed|es)|[a-z]{2,}[^s'\W]s")
"""A word in -ed / -es / -s after the holder's first word: most likely its verb ("listens", "moved")."""
_PAST_RE = lazy(r"[a-z]{3,}ed")
"""A first word in -ed: a log line told without its "I" ("Booked the flight to Lisbon")."""


def holder(text: str) -> frozenset[str] | None:
    """The topic keys of the statement's holder: the words after a bullet, a log date and a determiner, up to
    the first verb-like word (a copula, auxiliary, change cue, preposition, or a word in -s / -ed after the
    first). None when the statement starts with a pronoun or an imperative, or no boundary is seen within a
    few words: then nothing is known of its holder. A copula that names a role holds that role, whichever side
    it is written on (`copula.read`: "Elif Yılmaz is Ravi Menon's mentor" holds "Ravi Menon's mentor")."""
    taken = holder_words(text)
    if not taken:
        return None
    keys = _keys(" ".join(taken))
    return frozenset(keys) or None


def holder_words(text: str) -> list[str] | None:
    """The holder's words as written, possessive endings dropped ("The user's daughter plays …" → user,
    daughter), soft words kept; None as for `holder`. A role copula's holder is its role, on either side."""
    reading = copula.read(text)
    if reading is not None:
        said = normalize(reading.said)
        start = _PREFIX_RE.match(said)
        return _WORD_RE.findall(said[start.end() if start else 0 :].replace("'s", " ")) or None
    body = normalize(text)
    start = _PREFIX_RE.match(body)
    words = _WORD_RE.findall(body[start.end() if start else 0 :])
    taken: list[str] = []
    for index, word in enumerate(words[: _MAX_WORDS + 1]):
        if index == 0 and (word in _UNSAID or _verb_like(word, first=True)):
            return None
        possessive = word.endswith("'s") and word != "'s"
        bare = word[:-2] if possessive else word
        if word == "'s":
            continue
        if index and _verb_like(bare, first=False):
            break
        taken.append(bare)
    else:
        return None
    return taken


_IMPERATIVE_WORDS = "never always don't do avoid please"
_IMPERATIVE = frozenset(_IMPERATIVE_WORDS.split())


def _imperative(text: str) -> bool:
    """A rule told as an order: its first word is "never", "always", "don't" or a verb in its base form."""
    body = normalize(text)
    start = _PREFIX_RE.match(body)
    words = _WORD_RE.findall(body[start.end() if start else 0 :])
    return bool(words) and (words[0] in _IMPERATIVE or stem(words[0]) in _VERBS)


def _verb_like(word: str, *, first: bool) -> bool:
    if word in _BOUNDARY or cues.STRONG_CHANGE_RE.fullmatch(word) or cues.CHANGE_CUE_RE.fullmatch(word):
        return True
    if stem(word) in _VERBS:
        return True
    if first:
        return _PAST_RE.fullmatch(word) is not None  # a log line told without its "I": "Booked the flight"
    return _INFLECTED_RE.fullmatch(word) is not None


def _keys(text: str) -> list[str]:
    return [
        t.key for t in terms(text) if t.kind != "negation" and t.key not in SOFT and t.surface not in SOFT
    ]


def predicate(text: str, own: frozenset[str]) -> set[str]:
    """The content words of the statement beyond its holder: no values (numbers, dates, versions), no names,
    no change cues - what it says about the holder."""
    return {
        t.key
        for t in terms(text)
        if t.kind == "word"
        and t.key not in own
        and t.key not in _VERBS
        and t.key not in SOFT
        and t.surface not in SOFT
        and not cues.CHANGE_CUE_RE.fullmatch(t.surface)
        and not cues.STRONG_CHANGE_RE.fullmatch(t.surface)
    }


def other_attribute(new: str, old: str) -> str | None:
    """Why `new` changes another attribute than the one `old` states, or None when it may be the same one.

    Another thing: the new statement says what it switched or moved ("switched my gym to …") and the old one
    does not mention it. Another holder: the new statement names a holder the old one does not mention
    ("Grafana's admin login" / "Grafana is at …"), the old one is about a part of the new one's holder
    ("Kestrel's staging environment" / "Kestrel moved to …"), or the new holder is only a thing the old one
    names, with no predicate word in common ("the cache host now runs …" / "maxmemory is 2 GB on the cache
    host"). One holder: the two predicates share no word and together carry three or more (a word not a
    value or a name), or the old one carries two the new one does not mention, so each says something else
    about it ("is allergic to peanuts" / "moved to Rotterdam in March" - where "runs in us-east-1" / "moved
    to eu-west-1" keeps one word each: the value)."""
    old_keys = set(_keys(old))
    thing = _SWITCHED_RE.search(normalize(new))
    if thing is not None and not any(_mentioned({word}, old_keys) for word in _keys(thing["thing"])):
        return f"another thing ('{thing['thing'].strip()}')"
    new_holder, old_holder = holder(new), holder(old)
    if new_holder is None:
        return None
    if not _mentioned(new_holder, old_keys) or (old_holder is not None and new_holder < old_holder):
        return f"another holder ('{' '.join(sorted(new_holder))}')"
    if old_holder is None:
        # a rule told as an imperative names things, not a holder: the new holder is only one of its things
        # unless they share more ("Never commit to main; open a pull request" / "every pull request needs …")
        shared = (set(_keys(new)) & old_keys) - new_holder
        return (
            f"another holder ('{' '.join(sorted(new_holder))}')" if _imperative(old) and not shared else None
        )
    if not new_holder & old_holder:
        # told the other way round ("is now owned by Tomasz"): only with a predicate word or both holders shared
        shared = set(_keys(new)) & old_keys
        crossed = shared - new_holder - old_holder or old_holder <= shared
        return None if crossed else f"another holder ('{' '.join(sorted(new_holder))}')"
    own = new_holder | old_holder
    new_rest = {w for w in predicate(new, own) if not _mentioned({w}, set(own))}
    old_rest = {w for w in predicate(old, own) if not _mentioned({w}, set(own))}
    if not new_rest & old_rest and (len(new_rest) + len(old_rest) >= 3 or len(old_rest) >= 2):
        return f"another attribute of '{' '.join(sorted(own))}'"
    return None


_SWITCHED_RE = lazy(
    r"\b(?:switched|changed|moved|migrated|swapped|traded)\s+(?P<thing>(?:my|our|the|their|his|her|its)\s+"
    r"(?:[\w'-]+\s+){0,2}?[\w'-]+)\s+(?:over\s+)?(?:to|for)\b"
)
"""A switch that names what it switched ("switched my gym to …", "moved their standup to …")."""


def _mentioned(words: frozenset[str] | set[str], keys: set[str]) -> bool:
    """Every word is among `keys`, or shares its first four letters with one ("build" / "built")."""
    return all(w in keys or (len(w) >= 4 and any(k[:4] == w[:4] for k in keys)) for w in words)


def foreign_holders(new: str, old: str) -> str | None:
    """Two holders, neither named by the other statement ("The Firefox profile moved to …" / "Dock order:
    Finder, Firefox, …"): the statements are about different things, whatever frame they share."""
    new_holder, old_holder = holder(new), holder(old)
    if new_holder is None or old_holder is None:
        return None
    if _mentioned(new_holder, set(_keys(old))) or _mentioned(old_holder, set(_keys(new))):
        return None
    return f"two holders ('{' '.join(sorted(new_holder))}' / '{' '.join(sorted(old_holder))}')"


_RATE_RE = lazy(
    r"\b(?P<number>\d[\d,.]*)\s*(?P<counted>[a-z]+(?:\s+[a-z]+)?)\s*(?:per|a|an|each|every|/)\s*"
    r"(?P<period>second|sec|minute|min|hour|hr|day|week|month|year)s?\b"
)
"""A rate: a number of things per period of time ("100 requests per minute", "200 requests a minute")."""


def same_rate(new: str, old: str) -> str | None:
    """The rate both statements give with another number (the same things counted per the same period), or
    None: one measure, whatever holder each names ("Rate limit is 100 requests per minute" / "Each key may now
    make up to 200 requests a minute") - too little to tell whose rate it is, enough to link the two."""
    new_rates, old_rates = _rates(normalize(new)), _rates(normalize(old))
    for (counted, period), number in new_rates.items():
        if (counted, period) in old_rates and old_rates[(counted, period)] != number:
            return f"{' '.join(counted)} per {period}"
    return None


def _rates(text: str) -> dict[tuple[tuple[str, ...], str], str]:
    found: dict[tuple[tuple[str, ...], str], str] = {}
    for match in _RATE_RE.finditer(text):
        counted = (stem(match["counted"].split()[-1]),)  # the counted noun: "requests", "jobs"
        found[(counted, match["period"][:3])] = match["number"].replace(",", "")
    return found
