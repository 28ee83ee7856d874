"""Statements that share a frame (issue 27): aligned term by term, two statements that differ in one slot are
an update or compatible depending on the slot and the predicate; and the frames the alignment cannot see —
roles ("Alice is the team lead" / "Mei is the new CTO"), key–value notes ("Region: us-east-1"), one named thing
at another version ("PostgreSQL 14" → "upgraded to PostgreSQL 16"), one attribute worded by different verbs
("lives in Berlin" → "moved to Munich"). Used by `relation.relate`; pure string work."""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

from ..patterns import lazy
from . import cues, holders, phrasal
from .slots import SOFT, Term, entities, is_date, terms
from .tokens import clash, normalize, quote, stem, subject, tokens

RelationKind = Literal["same", "update", "possible_update", "compatible"]


@dataclass(frozen=True)
class Relation:
    kind: RelationKind
    reason: str


# Predicates (as stems) holding one value at a time, and predicates holding many. A predicate in neither list
# gives a weaker answer (`possible_update`) for a changed name or word.
_SINGLE_WORDS = """
    live lives living lived reside based located home hometown work works working worked employ employed employer
    job prefer prefers preferred favorite favourite target targets run runs running deploy deploys deployed host
    hosted written write name named called call timezone email phone address age birthday married lead leads
    manager manages owner owns default version port region limit deadline due schedule scheduled rotate rotation
    budget price cost salary rent editor shell theme mode language framework database stack provider plan tier
    team manager boss partner spouse wife husband capital weight height size length count total status
    report reports reporting colour color licensed license licence
"""
_MULTI_WORDS = """
    speak speaks spoke fluent like likes liked love loves loved enjoy enjoys enjoyed have has had own owns know
    knows visit visits visited play plays played collect collects read reads watch watches listen listens
    allergic allergy interest interested learn learns learning study studies support supports attend attends
    follow follows eat eats drink drinks cook cooks friend friends sibling siblings kid kids child children
    pet pets dog dogs cat cats hobby hobbies member tool tools dislike dislikes hate hates skill skills
"""
_SINGLE = frozenset(stem(word) for word in _SINGLE_WORDS.split())
_MULTI = frozenset(stem(word) for word in _MULTI_WORDS.split())
_NOT_EVENTS = frozenset(
    stem(w)
    for w in [
        "based",
        "located",
        "named",
        "called",
        "married",
        "employed",
        "interested",
        "allergic",
        "used",
        "supposed",
        "scheduled",
    ]
)
_IRREGULAR_PAST = frozenset(
    [
        "went",
        "saw",
        "met",
        "bought",
        "ate",
        "took",
        "got",
        "ran",
        "flew",
        "won",
        "lost",
        "made",
        "gave",
        "wrote",
        "drove",
        "rode",
        "swam",
        "sang",
        "began",
    ]
)

# Attributes worded by different verbs: a change cue on one and the attribute on the other is one attribute.
_ATTRIBUTES = (
    (lazy(r"\b(?:live[sd]?|living|reside[sd]?|based|home\s+is|located)\s+(?:in|at|near|on)\b"
          r"|\b(?:wohne|wohnt|wohnen|lebe|lebt)\s+in\b|\b(?:vivo|vive|viven)\s+en\b|\bj'habite\b|\bhabite\s+à\b"),
     lazy(r"\b(?:moved|moving|relocated|relocating|moves)\s+(?:(?:back|again|once\s+more)[\s,]+(?:this\s+time[\s,]+)?)?(?:to|in)\b"
          r"|\b(?:umgezogen|gezogen|zieht|ziehe)\b|\b(?:me|se|nos)\s+(?:mudé|mudó|mudamos|mudado)\b"
          r"|\bdéménag\w*")),
    (lazy(r"\b(?:work(?:s|ed|ing)?\s+(?:at|for)|employed\s+(?:at|by)|job\s+at|employer)\b"),
     lazy(r"\b(?:joined|joins|started\s+(?:at|working\s+(?:at|for))|switched\s+jobs?\s+to|hired\s+by|left)\b")),
)  # fmt: skip


def _core(text: str) -> list[Term]:
    """Terms without soft words and change cues: the frame and its values."""
    return [
        t
        for t in terms(text)
        if not (
            t.kind == "word"
            and (t.key in SOFT or t.surface in SOFT or cues.CHANGE_CUE_RE.fullmatch(t.surface))
        )
    ]


@dataclass(frozen=True)
class _Difference:
    old: tuple[Term, ...]
    new: tuple[Term, ...]
    at: int = 0
    """Where the stretch starts in the old statement's terms (0: the subject's place)."""

    @property
    def kind(self) -> str:
        both = (*self.old, *self.new)
        if any(t.kind == "negation" for t in both):
            return "negation"
        if any(t.kind == "value" for t in both):
            return "value"
        if any(t.kind == "entity" for t in both):
            return "entity"
        return "word"

    def describe(self) -> str:
        was = " ".join(t.surface for t in self.old) or "—"
        now = " ".join(t.surface for t in self.new) or "—"
        return f"'{quote(was, 30)}' → '{quote(now, 30)}'"


def _differences(old: list[Term], new: list[Term]) -> tuple[list[_Difference], int]:
    """The non-equal stretches of the two term sequences and the number of shared terms. An inserted stretch
    that only repeats the old value ("Bob is the lead now; Alice left") is not a difference."""
    matcher = SequenceMatcher(None, [t.key for t in old], [t.key for t in new], autojunk=False)
    shared = 0
    found: list[_Difference] = []
    old_keys = {t.key for t in old}
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            shared += i2 - i1
            continue
        found.append(_Difference(tuple(old[i1:i2]), tuple(new[j1:j2]), i1))
    replaced = {t.key for d in found if d.old and d.new for t in d.old}
    found = [
        d
        for d in found
        if d.old or not all(t.key in replaced or t.key in old_keys for t in d.new) or not replaced
    ]
    return found, shared


def parallel(new: str, old: str) -> Relation | None:
    """Two statements aligned term by term (`slots.terms` without soft words and change cues)."""
    new_terms, old_terms = _core(new), _core(old)
    differences, shared = _differences(old_terms, new_terms)
    if not differences or shared == 0:
        return None
    content_shared = shared - sum(1 for t in new_terms if t.kind == "value" and t in old_terms)
    if content_shared < 1:
        return None
    kinds = {d.kind for d in differences}
    if "negation" in kinds:
        return None
    cue = new_cue(new, old)
    frame = _frame_keys(old_terms, differences)
    replaced = [d for d in differences if d.old and d.new]
    extra = [d for d in differences if not (d.old and d.new)]
    if len(replaced) > 1:
        all_values = all(t.kind == "value" for d in differences for t in (*d.old, *d.new))
        if all_values and _dated(differences) and not _events(new, old):
            changes = "; ".join(d.describe() for d in differences)
            return Relation("update", f"same statement with new values: {changes}")
        return None  # two details differ: different scopes ("tabs in Go" / "spaces in YAML")
    if not replaced:
        return None  # one adds a detail to the other: a refinement, both hold
    # One slot replaced; a few added or dropped words beside it ("got pushed back to") do not make a second,
    # unless they stand where the subject does ("I work at Acme" / "my wife works at Globex").
    if any(d.at == 0 and not cue for d in extra):
        return Relation("compatible", "about someone or something else")
    if any(len(d.old) + len(d.new) > 3 or d.kind in ("value", "entity") for d in extra):
        return None
    difference = replaced[0]
    if len(difference.old) > 3 or len(difference.new) > 3 or _mixed(difference):
        return None
    if (
        difference.kind == "value"
        and difference.at > 0
        and old_terms[difference.at - 1].surface in _IDENTIFIERS
    ):
        return Relation("compatible", f"another item of a numbered series ({difference.describe()})")
    return _one_slot(new, old, difference, frame, cue)


_IDENTIFIER_WORDS = (
    "number no # id ticket issue pr item step case room build episode chapter part section page line"
)
_IDENTIFIERS = frozenset(_IDENTIFIER_WORDS.split())
"""Words whose number names the thing ("fact number 2", "ticket 41"): another number is another thing."""


def new_cue(new: str, old: str) -> bool:
    """Whether the new statement carries a change cue the old one does not ("changed every Monday" in both is
    the predicate, not a change)."""
    old_text = normalize(old)
    return any(match.group() not in old_text for match in cues.CHANGE_CUE_RE.finditer(normalize(new)))


def _mixed(difference: _Difference) -> bool:
    """A replaced stretch holding a value beside a name or word ("staging 3" → "production 12") changes two
    slots at once: the subject and its value, so the statements are about different things."""
    for side in (difference.old, difference.new):
        values = sum(1 for t in side if t.kind == "value")
        units = sum(1 for t in side if t.key in MEASURES)
        if values and values + units < len(side):
            return True
    return False


_MEASURE_WORDS = """
    second seconds minute minutes min mins hour hours hr hrs day days week weeks month months year years
    kg kgs kilo kilos kilogram kilograms lb lbs pound pounds g gram grams km kilometer kilometers mile miles
    m meter meters metre metres cm mm percent degree degrees mb gb tb kb ms
"""
MEASURES = frozenset(key for word in _MEASURE_WORDS.split() for key in (word, stem(word)))
"""Units that change with their number ("1 hour" → "15 minutes" is one value)."""


def _one_slot(new: str, old: str, difference: _Difference, frame: set[str], cue: bool) -> Relation:
    what = difference.describe()
    role = bool(cues.ROLE_FRAME_RE.search(normalize(old))) and bool(cues.ROLE_FRAME_RE.search(normalize(new)))
    if _events(new, old) and not cue:
        return Relation("compatible", f"two events ({what})")
    if _antonyms(difference):
        return Relation("update", f"the same statement with the opposite predicate: {what}")
    if difference.at == 0 and difference.kind != "value" and not role and not cue:
        return Relation("compatible", f"about different things with the same predicate ({what})")
    named = cues.CHANGE_VERB_RE.search(normalize(new)) is not None
    if difference.kind != "value" and _other_topic(difference) and not named:
        return Relation("compatible", f"a value about another topic ({what})")
    multi = bool(frame & _MULTI) and not (frame & _SINGLE) and not role
    if difference.kind == "value":
        if multi and not _quantity(difference) and not cue:
            return Relation("compatible", f"a predicate that holds many values ({what})")
        return Relation("update", f"the same statement with a new value: {what}")
    if multi and not cue:
        return Relation("compatible", f"a predicate that holds many values ({what})")
    if not cue and _relation_swapped(new, old, difference):
        return Relation("compatible", f"another relation stated by another verb ({what})")
    if phrasal.preposition_changed(normalize(new), normalize(old)):
        return Relation("compatible", f"another relation: the verb takes another preposition ({what})")
    foreign = holders.foreign_holders(new, old) if cue else None
    if foreign is not None:
        return Relation("compatible", f"a change cue about {foreign} ({what})")
    if cue or role or frame & _SINGLE:
        return Relation("update", f"the same attribute with a new value: {what}")
    one_name = all(t.kind == "entity" for t in (*difference.old, *difference.new))  # "Northwind Staffing"
    if (len(difference.old) == len(difference.new) == 1 or one_name) and (
        difference.kind == "entity" or len(frame) >= 2
    ):
        return Relation("possible_update", f"the same statement with another detail: {what}")
    return Relation("compatible", f"too little in common to tell ({what})")


def _relation_swapped(new: str, old: str, difference: _Difference) -> bool:
    """The replaced word is the verb of a verb and its preposition on both sides ("the job runs on Fridays" /
    "the job is hosted on Fridays"): another relation, not another value (`phrasal`)."""
    if len(difference.old) != 1 or len(difference.new) != 1:
        return False
    return phrasal.verbs_swapped(
        normalize(new), normalize(old), difference.new[0].surface, difference.old[0].surface
    )


_ANTONYM_PAIRS = (("like", "dislike"), ("enable", "disable"), ("allow", "forbid"), ("allow", "ban"))
_ANTONYMS = frozenset(
    frozenset(key for word in pair for key in (t.key for t in terms(word))) for pair in _ANTONYM_PAIRS
)


def _antonyms(difference: _Difference) -> bool:
    """One word for its opposite ("likes pineapple on pizza" → "hates pineapple on pizza"): the same
    attribute with the other polarity."""
    if len(difference.old) != 1 or len(difference.new) != 1:
        return False
    return frozenset((difference.old[0].key, difference.new[0].key)) in _ANTONYMS


def _dated(differences: list[_Difference]) -> bool:
    """The first changed value is a date or time: a dated entry of one attribute ("- 2026-03-03: weight 80 kg"),
    not an identifier with its own value ("service 1 on port 8001", "code freeze for 3.0 is June 12")."""
    first = differences[0]
    return any(is_date(t.key) for t in (*first.old, *first.new) if t.kind == "value")


def _other_topic(difference: _Difference) -> bool:
    """Two objects of several words with none in common ("python for scripting" / "rust for systems work"):
    a predicate that holds one value per topic ("prefers") speaks of two topics."""
    if all(t.kind == "entity" for t in (*difference.old, *difference.new)):
        return False  # a name of several words is one value ("Amaia Etxeberria" → "Kwabena Asante")
    old_keys = {t.key for t in difference.old}
    new_keys = {t.key for t in difference.new}
    return len(old_keys) >= 2 and len(new_keys) >= 2 and not old_keys & new_keys


def _quantity(difference: _Difference) -> bool:
    return any(t.key.startswith("n") for t in (*difference.old, *difference.new) if t.kind == "value")


def _frame_keys(old_terms: list[Term], differences: list[_Difference]) -> set[str]:
    differing = {t.key for d in differences for t in (*d.old, *d.new)}
    return {t.key for t in old_terms if t.kind == "word" and t.key not in differing}


def _events(new: str, old: str) -> bool:
    return _is_event(normalize(new)) and _is_event(normalize(old))


_COPULA_RE = lazy(r"\b(?:is|are|am|was|were|be|been|being|'s|'re|'m)\b")


def _is_event(text: str) -> bool:
    """A statement that narrates something done ("visited Rome", "bought a bike"), not a state: a past-tense
    verb and no copula ("is licensed under MIT" is a state)."""
    if _COPULA_RE.search(text):
        return False
    for word in text.split():
        word = word.strip(".,;:!?\"'")
        if word in _IRREGULAR_PAST:
            return True
        if (
            word.endswith("ed")
            and len(word) > 4
            and stem(word) not in _NOT_EVENTS
            and stem(word) not in _SINGLE
            and not cues.CHANGE_VERB_RE.fullmatch(word)  # "changed to May 4" changes a state
        ):
            return True
    return False


def same_attribute(new: str, old: str) -> Relation | None:
    """One attribute worded by different verbs: the old statement states it, the new one changes it."""
    for states, changes in _ATTRIBUTES:
        said = states.search(old) or changes.search(old)
        changed = changes.search(new)
        if said and changed and not states.search(new):
            if clash(subject(tokens(new[: changed.start()])), subject(tokens(old[: said.start()]))):
                return None  # "Maya moved to the web team" / "Leo moved to the mobile team"
            return Relation("update", f"the same attribute changed: '{quote(new, 50)}'")
        state = states.search(new)
        if said and state and cues.CHANGE_CUE_RE.search(new) and _names_another(new[state.end() :], old):
            # "works at Acme" / "left Acme and joined Globex" → "now works at Initech": a change cue on the state
            return Relation("update", f"the same attribute with a change cue: '{quote(new, 50)}'")
    return None


def _names_another(new: str, old: str) -> bool:
    """The new value names something the old statement does not (not "moved to Berlin" / "now lives in
    Berlin")."""
    return bool({t.key for t in _core(new)} - {t.key for t in _core(old)})


# --------------------------------------------------------------------------- frames the alignment cannot see

_NAME = r"[A-Z][\w.'’-]*(?:\s+[A-Z][\w.'’-]*){0,2}"
_ROLE_WORDS = r"[a-z][a-z-]*(?:\s+[a-z][a-z-]*){0,2}"
_ROLE_PATTERNS = (
    lazy(rf"(?P<holder>{_NAME})\s+(?:is|'s|’s)\s+(?:now\s+)?(?:the|our|my|their|his|her)\s+(?:new\s+)?(?P<role>{_ROLE_WORDS}?)"
         r"(?:\s+(?:for|of|at|on|in)\s+(?P<scope>(?:the\s+)?[\w-]+))?(?=\s*(?:now|again|and|[.,;!]|$))"),
    lazy(rf"\b(?:the|our|my|their|his|her)\s+(?:new\s+)?(?P<role>{_ROLE_WORDS}?)\s+(?:is|'s|’s)\s+(?:now\s+)?"
         rf"(?P<holder>{_NAME})"),
    lazy(rf"(?P<holder>{_NAME})\s+(?:took\s+over|has\s+taken\s+over|is\s+taking\s+over)\s+as\s+(?:the\s+)?"
         rf"(?P<role>{_ROLE_WORDS}?)(?=\s*(?:from|now|again|[.,;!]|$))"),
    lazy(rf"(?P<holder>{_NAME})\s+(?:is|'s)\s+(?:now\s+)?(?P<role>(?:release|engineering|product|project|team|"
         rf"tech|on-call|office|account)\s+(?:manager|lead|owner|captain))"),
    lazy(rf"(?P<holder>{_NAME})\s+(?:now\s+)?(?P<role>leads|heads|manages|chairs|coordinates|is\s+in\s+charge\s+of|"
         rf"is\s+responsible\s+for)\s+(?:now\s+)?(?P<scope>(?:the|our|their)\s+[\w-]+(?:\s+[\w-]+)?\s+"
         rf"(?:team|squad|group|department|project|unit|effort|programme|program))\b"),
)  # fmt: skip


_ROLE_VERBS = {
    "leads": "lead",
    "heads": "lead",
    "is in charge of": "lead",
    "is responsible for": "lead",
    "manages": "manager",
    "chairs": "chair",
    "coordinates": "coordinator",
}
"""A role told by its verb ("Yara leads the payments team") is the role its noun names ("the team lead")."""


def _roles(text: str) -> dict[str, str]:
    """role (its words' stems) → holder (casefolded) of the role frames in `text`."""
    found: dict[str, str] = {}
    for pattern in _ROLE_PATTERNS:
        for match in pattern.finditer(text):
            scope = match.groupdict().get("scope") or ""
            said = _ROLE_VERBS.get(" ".join(match.group("role").casefold().split()), match.group("role"))
            role = " ".join(stem(w) for w in f"{said} {scope}".casefold().split())
            holder = match.group("holder").casefold().replace("’", "'")
            if role and holder not in ("it", "this", "that", "there", "he", "she", "they", "i"):
                found.setdefault(role, holder)
    return found


def roles(new: str, old: str) -> Relation | None:
    """The same role held by someone else ("Alice is the team lead" → "Mei is the new team lead")."""
    old_roles = _roles(old)
    for role, holder in _roles(new).items():
        previous = old_roles.get(role)
        if previous is not None and previous != holder:
            return Relation("update", f"the {role} is now {holder} (was {previous})")
    return None


_KEY_VALUE_RE = lazy(
    r"^\s*(?:[-*•]\s*)?(?:\d{4}-\d\d-\d\d:?\s*)?(?P<key>(?![-*•\s]*\d{4}-\d\d-\d\d\s*:)[^:\n]{2,50}?)\s*:\s*(?P<value>\S.*)$"
)
_KEY_CHANGE_RE = lazy(
    r"^\s*(?:[-*•]\s*)?(?P<key>[^\W\d][^:\n]{1,49}?)\s+(?:changed|moved|switched|updated|set|is\s+now|now|is|are)\s+"
    r"(?:to\s+|is\s+)?(?P<value>\S.*)$"
)


_CLAUSE = 4
"""Content words from which a key's value is a statement of its own rather than one value."""


def key_value(new: str, old: str) -> Relation | None:
    """A note of the form "Key: value" and a new value for the same key ("Region: us-west-2", "Preferred
    meeting tool changed to Google Meet", "Region is us-east-1")."""
    old_match = _KEY_VALUE_RE.match(old)
    if old_match is None:
        return None
    new_match = _KEY_VALUE_RE.match(new) or _KEY_CHANGE_RE.match(new)
    if new_match is None:
        return None
    old_key, new_key = _words(old_match.group("key")), _words(new_match.group("key"))
    if not old_key or old_key != new_key:
        return None
    old_value, new_value = _words(old_match.group("value")), _words(new_match.group("value"))
    if not new_value or new_value == old_value:
        return None
    if min(len(old_value), len(new_value)) >= _CLAUSE and not old_value & new_value:
        return None  # a label for many notes ("Coding convention: …", "Decision: …"), not one attribute
    return Relation("update", f"'{quote(old_match.group('key').strip(), 30)}' has a new value")


def _words(text: str) -> frozenset[str]:
    return frozenset(
        t.key for t in terms(text) if t.key not in SOFT and not cues.CHANGE_CUE_RE.fullmatch(t.surface)
    )


_NAMED_VALUE_RE = lazy(r"\b(?P<name>[A-Za-z][\w+#-]*)\s+v?(?P<value>\d+(?:\.\d+)*)\b")


def named_versions(new: str, old: str) -> Relation | None:
    """One named thing at another number ("PostgreSQL 14" → "upgraded to PostgreSQL 16", "Pixel 6" → "Pixel
    8"): the name is written as a name, and the new statement says it changed or says nothing else new."""
    names = entities(new) & entities(old)
    old_values = {m.group("name").casefold(): m.group("value") for m in _NAMED_VALUE_RE.finditer(old)}
    for match in _NAMED_VALUE_RE.finditer(new):
        name, value = match.group("name").casefold(), match.group("value")
        if name not in names or is_date(_month_key(name)) or old_values.get(name) in (None, value):
            continue
        rest_new = _words(_NAMED_VALUE_RE.sub(" ", new))
        rest_old = _words(_NAMED_VALUE_RE.sub(" ", old))
        if cues.CHANGE_CUE_RE.search(normalize(new)) or (rest_new == rest_old and not _events(new, old)):
            return Relation("update", f"{match.group('name')} {old_values[name]} → {value}")
    return None


def _month_key(name: str) -> str:
    month = [t.key for t in terms(name.capitalize()) if t.kind == "value"]
    return month[0] if month else name


_UNITS = frozenset(
    [
        "at",
        "on",
        "in",
        "by",
        "to",
        "of",
        "for",
        "every",
        "each",
        "than",
        "and",
        "or",
        "about",
        "around",
        "version",
        "step",
        "steps",
        "page",
        "pages",
        "top",
        "the",
    ]
)


def changed_topic(new: str, old: str) -> Relation | None:
    """A change named outright ("moved to", "rescheduled to", "now runs", "left … and joined") about what the
    old statement is about: its subject (its first topic word) or most of its topic words, with something new.
    Without the old subject in common, a weaker link."""
    if not cues.STRONG_CHANGE_RE.search(normalize(new)) or not new_cue(new, old):
        return None
    old_topic, new_topic = _topic_words(old), _topic_words(new)
    shared = [key for key in old_topic if key in new_topic]
    if not shared or not set(new_topic) - set(old_topic):
        return None
    if holders.other_attribute(new, old) is not None:
        rate = holders.same_rate(new, old)
        return None if rate is None else Relation("possible_update", f"a change of one rate ({rate})")
    named = cues.CHANGE_VERB_RE.search(normalize(new)) is not None
    if (old_topic[0] in shared and (named or len(shared) >= 2)) or 2 * len(shared) >= len(old_topic):
        return Relation("update", f"a change named outright about {', '.join(shared[:3])}")
    return Relation("possible_update", f"a change named outright that mentions {', '.join(shared[:3])}")


_GENERIC = frozenset(
    stem(w) for w in ["use", "have", "do", "be", "go", "get", "make", "want", "need", "like", "prefer", "run"]
)


def _topic_words(text: str) -> list[str]:
    """Content terms in order, without soft words, change cues and generic verbs."""
    keys: list[str] = []
    for term in terms(text):
        if term.kind == "negation" or term.key in SOFT or term.surface in SOFT or term.key in _GENERIC:
            continue
        if cues.CHANGE_CUE_RE.fullmatch(term.surface) or cues.STRONG_CHANGE_RE.fullmatch(term.surface):
            continue
        if term.key not in keys:
            keys.append(term.key)
    return keys
