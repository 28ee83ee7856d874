"""Does a new statement negate or replace an existing one about the same subject? (English and Chinese.)

The caller has already established that the two statements are similar (same namespace and type, vector
similarity above `MemoryPolicy.contradiction_similarity`), so this module only looks at polarity and
replacement, in this order:

1. explicit replacement in the new statement: "switched from A to C", "replaced A with C", "C instead of A",
   "not A but C", 从A换成C, 用C代替A, 不是A而是C. Supersedes when the old statement mentions A;
2. negation flip: one statement negates ("no longer likes", "doesn't", "stopped using", "never", 不再, 不, 没有,
   已经不) what the other asserts. Supersedes when the negated words are the other statement's words;
   uncertain when they only partly are ("doesn't like tea" vs "likes coffee") or the subjects differ;
3. value change of one attribute: the two statements share a frame "<attribute> is <value>" and differ only in
   the value ("my email is a@x" vs "my email is b@x"; "deadline moved to March 10" is read as "deadline is
   March 10"; 截止日期推迟到…). Supersedes;
4. replacement without the old value: "migrated to C", "now uses C", 改用C, when the old statement states a
   use of something else. Supersedes;
5. anything else: `none` (same claim = a duplicate, handled elsewhere; or statements that can both hold).

Everything is deterministic string work with precompiled, bounded patterns. Known limits: no coreference
("he" is not resolved), no paraphrase ("quit caffeine" vs "drinks coffee"), and multi-valued attributes
("allergic to peanuts" / "allergic to shellfish") are reported as uncertain rather than as additions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ValidationFailed
from ..patterns import LazyPattern, lazy
from .assessment import Assessment
from .tokens import (
    Token,
    clash,
    content,
    is_content,
    is_han,
    normalize,
    quote,
    render,
    single_claim,
    speaker,
    strip_stop,
    subject,
    tokens,
)
from .value_change import assess_value

# --------------------------------------------------------------------------- normalisation and tokens


def _phrase(name: str, *, lazy: bool, zh: bool = False) -> str:
    """A named group for an object phrase inside one clause: up to 60 characters (30 for Chinese, which packs
    more into a character). The replaced side is lazy so it stops at the first "to"/换成."""
    stops = r",;!?\n，。；！？" + ("、" if zh else "")
    return rf"(?P<{name}>[^{stops}]{{1,{30 if zh else 60}}}{'?' if lazy else ''})"


_A, _C = _phrase("a", lazy=True), _phrase("c", lazy=False)
_ZA, _ZC = _phrase("a", lazy=True, zh=True), _phrase("c", lazy=False, zh=True)
# The same sides with the other laziness, for patterns where the replacement comes first ("用C代替A").
_A_GREEDY, _ZA_GREEDY, _ZC_LAZY = (
    _phrase("a", lazy=False),
    _phrase("a", lazy=False, zh=True),
    _phrase("c", lazy=True, zh=True),
)
_MOVE_VERBS = (
    r"(?:switch|switched|switches|switching|move|moved|moves|moving|migrate|migrated|migrates|migrating|change|"
    r"changed|changes|changing|go|went|goes|going|transition|transitioned|transitioning|upgrade|upgraded|"
    r"downgrade|downgraded|convert|converted|port|ported|shift|shifted|jumped|pushed|postponed|rescheduled)"
)
_ZH_CHANGE = (
    r"(?:换成|换到|换为|改成|改为|改到|改用|切换到|切换成|切换为|切到|迁移到|迁到|转到|转向|转用|升级到|升级为|"
    r"变成|变为|调整为|调整到|推迟到|提前到|延期到|替换成|替换为)"
)

# Each pattern captures A (what is replaced) and C (what replaces it) as named groups. The second element names
# the side that stands before the match instead ("C instead of A": "c"), read from the clause's last words.
_REPLACEMENTS: tuple[tuple[LazyPattern, str | None], ...] = (
    (lazy(rf"\b{_MOVE_VERBS}\s+(?:[a-z0-9'-]+\s+){{0,3}}?from\s+{_A}\s+(?:to|over\s+to|onto|into)\s+{_C}"), None),
    (lazy(rf"\breplac(?:e|ed|es|ing)\s+{_A}\s+(?:with|by)\s+{_C}"), None),
    (lazy(rf"\b(?:dropped|ditched|abandoned|dumped|deprecated|retired|removed|gave\s+up)\s+{_A}\s+"
                rf"(?:for|in\s+favou?r\s+of)\s+{_C}"), None),
    # "not on Tuesday but on Wednesday"; not "haven't done X yet, but I'm game": a new clause after "but".
    (lazy(rf"\bnot\s+(?!only\b)(?P<a>(?:[^\s,;!?.]+\s+){{0,3}}?[^\s,;!?.]+),?\s+but\s+(?:rather\s+)?"
          rf"(?!(?:i|we|you|he|she|they|it|that|this|there|the|my|our|his|her|their)\b){_C}"), None),
    (lazy(r"(?P<a>[^\s,;]{1,60})\s*(?:->|→|=>)\s*(?P<c>[^\s,;]{1,60})"), None),
    (lazy(rf"\s(?:was|were|has\s+been|have\s+been|is\s+being|got|is|are)\s+(?:being\s+)?replaced\s+(?:with|by)\s+{_C}"), "a"),
    (lazy(rf"\s(?:has\s+|have\s+|had\s+)?replaced\s+{_A_GREEDY}"), "c"),
    (lazy(rf"\s+instead\s+of\s+{_A_GREEDY}"), "c"),
    (lazy(rf"从\s*{_ZA}\s*{_ZH_CHANGE}了?\s*{_ZC}"), None),
    (lazy(rf"把\s*{_ZA}\s*{_ZH_CHANGE}了?\s*{_ZC}"), None),
    (lazy(rf"用\s*{_ZC_LAZY}\s*(?:代替|替代|替换|取代)了?\s*{_ZA_GREEDY}"), None),
    (lazy(rf"不是\s*{_ZA}\s*[,，]?\s*而是\s*{_ZC}"), None),
    (lazy(rf"不(?:再)?(?:用|使用)\s*{_ZA}\s*了\s*[,，]?\s*(?:改用|换成|换用|转用|用)\s*{_ZC}"), None),
    (lazy(rf"(?:被|已被|已经被)\s*{_ZC_LAZY}\s*(?:取代|替代|替换|代替)"), "a"),
    (lazy(rf"(?:取代|替代|替换|代替)了\s*{_ZA_GREEDY}"), "c"),
)  # fmt: skip

_CLAUSE_END_RE = lazy(
    r"\.\s|\s(?:and|but|because|since|as|so|which|who|after|when|last|yesterday|this|in\s+\d{4})\b|"
    r"[，。；、]|但是?|因为|所以|并且|而且|了$"
)
_CLAUSE_START_RE = lazy(
    r".*(?:[,;:.!?，。；：！？]|\b(?:and|but|because|so|then)\b|但是?|因为|所以)\s*", re.DOTALL
)
_LEADING_NOISE_RE = lazy(
    r"^(?:(?:the|a|an|our|my|their|its|now|we|i|they|he|she|it|use|uses|using|used|prefer|prefers|chose|"
    r"choose|picked|went\s+with|drink|drinks|run|runs|on)\s+)+"
)


def _trim_forward(phrase: str) -> str:
    cut = _CLAUSE_END_RE.search(phrase)
    return (phrase[: cut.start()] if cut else phrase).strip()


def _tail_words(text: str, max_words: int = 3) -> str:
    """The last few words of the clause that ends where `text` ends ("we now use dynamodb" -> "dynamodb")."""
    clause = text[-200:]
    start = _CLAUSE_START_RE.match(clause)
    clause = clause[start.end() :] if start else clause
    if clause and is_han(clause[-1]):
        return clause[-12:].strip()
    words = clause.split()[-max_words:]
    return _LEADING_NOISE_RE.sub("", " ".join(words) + " ").strip()


@dataclass(frozen=True)
class _Replacement:
    replaced: str
    replacement: str
    start: int


def _find_replacement(text: str) -> _Replacement | None:
    for pattern, tail in _REPLACEMENTS:
        match = pattern.search(text)
        if match is None:
            continue
        groups = match.groupdict()
        if tail == "a":
            replaced, replacement = _tail_words(text[: match.start()]), _trim_forward(groups["c"])
        elif tail == "c":
            replaced = _trim_forward(groups["a"])
            replacement = _tail_words(text[: match.start()])
        else:
            replaced, replacement = groups["a"].strip(), _trim_forward(groups["c"])
        replaced = _LEADING_NOISE_RE.sub("", replaced + " ").strip()
        if replaced and replacement and content(tokens(replaced)) and content(tokens(replacement)):
            return _Replacement(replaced, replacement, match.start())
    return None


def _mentions(haystack: set[str], phrase: str) -> bool:
    """At least half of the phrase's content words (Han characters count one by one) occur in the haystack."""
    wanted = content(tokens(phrase))
    return bool(wanted) and len(wanted & haystack) * 2 >= len(wanted)


def _mentions_head(haystack: set[str], phrase: str) -> bool:
    """`_mentions`, and the phrase's first content word is among them: "coffee in the morning" is not named
    by "tea in the morning", nor "the mobile team" by "the web team"."""
    first = next((t.key for t in tokens(phrase) if is_content(t)), None)
    return first is not None and first in haystack and _mentions(haystack, phrase)


def _assess_replacement(new: str, old: str, old_tokens: list[Token]) -> Assessment | None:
    found = _find_replacement(new)
    if found is None:
        return None
    old_content = content(old_tokens)
    a, c = quote(found.replaced, 40), quote(found.replacement, 40)
    # In "postgres was replaced by aurora" the words before the match are the replaced thing, not a subject.
    subject_new = subject(tokens(new[: found.start])) - content(tokens(found.replaced))
    mention_index = next(
        (i for i, t in enumerate(old_tokens) if t.key in content(tokens(found.replaced))), None
    )
    subject_old = subject(old_tokens[:mention_index]) if mention_index is not None else set()
    if clash(subject_new, subject_old):
        return Assessment(
            "uncertain",
            f"replacement of '{a}' by '{c}', but the subjects differ from the old statement's",
            basis="subjects_differ",
        )
    mentions_a = _mentions(old_content, found.replaced)
    mentions_c = _mentions(old_content, found.replacement)
    if mentions_a:
        previous = _find_replacement(old)
        if (
            previous is not None
            and _same_phrase(previous.replaced, found.replaced)
            and _same_phrase(previous.replacement, found.replacement)
        ):
            return Assessment(
                "none",
                f"both statements describe the same replacement of '{a}' by '{c}'",
                basis="replacement_same",
            )
        return Assessment(
            "supersedes",
            f"replacement: new statement replaces '{a}' with '{c}', which the old one states",
            basis="replacement",
        )
    if mentions_c:
        return Assessment(
            "none",
            f"the old statement already names '{c}', the replacement the new one describes",
            basis="replacement_known",
        )
    return Assessment(
        "uncertain",
        f"replacement of '{a}' by '{c}', but the old statement mentions neither",
        basis="replacement_unmentioned",
    )


def _same_phrase(first: str, second: str) -> bool:
    return content(tokens(first)) == content(tokens(second))


# --------------------------------------------------------------------------- 2. negation flip

_NEGATION_RE = lazy(
    r"\b(?:(?:does|do|did|is|are|was|were|will|would|can|could|should|has|have|had|am)\s+)?"
    r"(?:no\s+longer(?!\s+than\b)|not\s+any\s*more|never\s+again|never|not(?!\s+only\b)|no\s+more(?!\s+than\b)|stopped|quit|quitted|"
    r"gave\s+up(?:\s+on)?|ceased\s+to)\b"
    r"|(?:已经|现在|早就|早已)?(?:再也不|不再|不会再|没有再|停止了?|放弃了?|戒掉了?|戒了|没有|没(?!错)|"
    r"(?<![差对了])不(?!错|过|同|少|仅|但|断|久|管|论|然|如|止|得不|光|只|好意思))"
)
_SCOPE_END_RE = lazy(
    r"[,;.!?，。；！？]|\s(?:but|however|because|since|although|though|while|whereas)\b|但是?|不过|因为|而且|可是"
)
_ZH_VERB_RE = lazy(
    r"^(?:喜欢|爱用|爱喝|爱吃|爱|使用|采用|用|喝|吃|抽|玩|看|听|穿|开|住|需要|想要|想|要|支持|偏好|相信|做|去|参加|吸|养)"
)
# Negative meaning without a negation cue: "emoji-free", "without", "no emoji", 无, 免.
_IMPLICIT_NEGATIVE_RE = lazy(
    r"\w-free\b|\bwithout\b|\bno\s+(?!longer\b|more\b)\w+|\bnone\b|\bnothing\b|无|免"
)
_BE_NEGATION_RE = lazy(r"(?:is|are|was|were|am)\s")
_COORDINATION_RE = lazy(r"\b(?:and|or)\b|&|[,、]|和|与|以及|还有|及")


@dataclass(frozen=True)
class _Negation:
    cue: str
    start: int
    end: int


def _negation(text: str) -> _Negation | None:
    match = _NEGATION_RE.search(text)
    return _Negation(match.group(), match.start(), match.end()) if match else None


def _without_negations(text: str) -> str:
    return _NEGATION_RE.sub(" ", text)


def _assess_negation(new: str, old: str) -> Assessment | None:
    neg_new, neg_old = _negation(new), _negation(old)
    if neg_new is not None and neg_old is None:
        new_is_negated, negated, positive, cue = True, new, old, neg_new
    elif neg_old is not None and neg_new is None:
        new_is_negated, negated, positive, cue = False, old, new, neg_old
    else:
        return None  # same polarity
    scope_end = _SCOPE_END_RE.search(negated, cue.end)
    scope_text = negated[cue.end : scope_end.start() if scope_end else len(negated)]
    scope_tokens = tokens(scope_text, cue.end)
    positive_tokens = tokens(positive)
    positive_content = content(positive_tokens)
    scope = content(scope_tokens) or content(tokens(negated[: cue.start]))
    shared = scope & positive_content
    if not shared:
        # "likes coffee but not decaf" vs "likes coffee": the negation is about something the other statement
        # never said, so both can hold.
        return None
    if len(shared) * 2 < len(scope):
        # "never give up on the things I care about" vs "giving back": one shared word of four negated ones.
        return None

    # "is not a morning person": the negated predicate is the copula itself, not the next content word.
    verb = None if _BE_NEGATION_RE.match(cue.cue) else _verb(scope_text, scope_tokens)
    verb_index = next((i for i, t in enumerate(positive_tokens) if verb and t.key == verb.key), None)
    if clash(
        subject(tokens(negated[: cue.start])), subject(positive_tokens[:verb_index] if verb_index else [])
    ):
        return Assessment(
            "uncertain",
            "opposite polarity, but the two statements are about different subjects",
            basis="polarity_other_subject",
        )

    negated_phrase = quote(
        negated[cue.start : verb.end if verb and verb_index is not None else cue.end].strip()
    )
    if verb is not None and verb_index is not None:
        positive_phrase = (
            verb.surface
            if verb.kind == "han" and verb.surface in positive
            else positive_tokens[verb_index].surface
        )
        about_tokens = strip_stop([t for t in scope_tokens if t.start >= verb.end])
        about = render(about_tokens) or render(
            [t for t in positive_tokens[verb_index + 1 :] if is_content(t)]
        )
    else:
        positive_phrase = quote(positive)
        about = render([t for t in scope_tokens if t.key in shared])
    new_phrase, old_phrase = (
        (negated_phrase, positive_phrase) if new_is_negated else (positive_phrase, negated_phrase)
    )
    about = quote(about or "the same thing", 40)

    phrases = _Phrases(new_phrase, old_phrase, about, new_is_negated)
    return _negation_verdict(negated, positive, scope, shared, positive_content, phrases)


@dataclass(frozen=True)
class _Phrases:
    new: str
    old: str
    about: str
    new_is_negated: bool


def _negation_verdict(
    negated: str,
    positive: str,
    scope: set[str],
    shared: set[str],
    positive_content: set[str],
    phrases: _Phrases,
) -> Assessment:
    """How strongly a polarity flip about shared words contradicts: fully (supersedes), or only in part."""
    new_phrase, old_phrase, about, new_is_negated = (
        phrases.new,
        phrases.old,
        phrases.about,
        phrases.new_is_negated,
    )
    implicit = _IMPLICIT_NEGATIVE_RE.search(positive)
    if implicit is not None:
        # "does not want emoji" vs "wants emoji-free messages": both negative, one without a negation cue.
        return Assessment(
            "uncertain",
            f"'{new_phrase}' vs '{old_phrase}': the other statement is phrased negatively too "
            f"('{implicit.group()}'), so the polarity is unclear",
            basis="implicit_negative",
        )
    scope_coverage = len(shared) / len(scope)
    rest = content(tokens(_without_negations(negated)))
    positive_coverage = len(positive_content & rest) / len(positive_content) if positive_content else 0.0
    # "don't page for warnings" vs "page for outages": each side has a detail the other lacks.
    differing_detail = bool(scope - shared) and bool(positive_content - rest)
    if scope_coverage < 0.75 or positive_coverage < 0.5 or differing_detail:
        return Assessment(
            "uncertain",
            f"opposite polarity ('{new_phrase}' vs '{old_phrase}') but the statements differ in what they are about",
            basis="polarity_other_topic",
        )
    if positive_content - rest and _COORDINATION_RE.search(positive):
        return Assessment(
            "uncertain",
            f"'{new_phrase}' contradicts only part of '{quote(positive)}'"
            if new_is_negated
            else f"'{new_phrase}' restores only part of what '{quote(negated)}' negated",
            basis="partial_negation",
        )
    return Assessment(
        "supersedes", f"negation: '{new_phrase}' contradicts '{old_phrase}' about '{about}'", basis="negation"
    )


def _verb(scope_text: str, scope_tokens: list[Token]) -> Token | None:
    """The negated predicate: the first content word of the scope when something follows it ("like" in "not
    like coffee"), or a known Chinese verb at the start of the scope (不再[喜欢]咖啡)."""
    stripped = scope_text.lstrip()
    zh = _ZH_VERB_RE.match(stripped)
    if zh is not None:
        first = next((t for t in scope_tokens if t.kind == "han"), None)
        if first is not None:
            return Token(zh.group(), zh.group()[0], "han", first.start, first.start + len(zh.group()))
    content = [t for t in scope_tokens if is_content(t)]
    if len(content) >= 2 and content[0].kind == "word":
        return content[0]
    return None


# --------------------------------------------------------------------------- 4. replacement without the old value

_SWITCH_TO_RE = lazy(
    r"\b(?:switched|switching|migrated|migrating|moved|moving|transitioned|changed|upgraded)\s+"
    r"(?:[a-z0-9'-]+\s+){0,3}?(?:over\s+)?to\s+" + _C
    + r"|\bnow\s+(?:use|uses|using|on|runs\s+on|running\s+on|prefer|prefers|drink|drinks)\s+" + _phrase("c2", lazy=False)
    + r"|\b(?:started|starting)\s+(?:to\s+use|using)\s+" + _phrase("c3", lazy=False)
    + r"|(?:改用|换成|换用|转用|改成|切换到|迁移到|迁到|换到|开始用|开始使用|现在用|现在使用)了?\s*"
    + _phrase("c4", lazy=False, zh=True)
)  # fmt: skip
_USAGE_RE = lazy(
    r"\b(?:use|uses|using|used|on|runs?\s+on|running|hosted|deployed|with|via|prefers?|drinks?|stores?|"
    r"backed\s+by|built\s+(?:on|with)|written\s+in)\b|用|使用|采用|基于|跑在|部署在|托管在|喝|偏好"
)


_NUMBER_RE = lazy(r"\d+(?:\.\d+)*")


def _new_number(target: str, old: str) -> bool:
    """The switch's target carries a number or version the old statement lacks ("upgraded to Node.js 22"
    after "runs on Node.js 20"): the old statement names the thing, not the new value."""
    return bool(set(_NUMBER_RE.findall(target)) - set(_NUMBER_RE.findall(old)))


def _assess_switch(new: str, old: str, old_tokens: list[Token]) -> Assessment | None:
    match = _SWITCH_TO_RE.search(new)
    if match is None:
        return None
    target = next(g for g in (match.group("c"), match.group("c2"), match.group("c3"), match.group("c4")) if g)
    target = _LEADING_NOISE_RE.sub("", _trim_forward(target) + " ").strip()
    if not content(tokens(target)):
        return None
    c = quote(target, 40)
    if clash(subject(tokens(new[: match.start()])), subject(old_tokens[: _predicate_index(old_tokens)])):
        return Assessment(
            "uncertain",
            f"replacement by '{c}', but the subjects differ from the old statement's",
            basis="subjects_differ",
        )
    if _mentions_head(content(old_tokens), target) and not _new_number(target, old):
        return Assessment(
            "uncertain",
            f"both statements name '{c}'; unclear whether the new one replaces the old",
            basis="switch_known",
        )
    if _USAGE_RE.search(old):
        return Assessment(
            "supersedes",
            f"replacement: new statement switches to '{c}'; the old one states '{quote(old)}'",
            basis="switch",
        )
    return Assessment(
        "uncertain",
        f"the new statement switches to '{c}', but the old one states no use to replace",
        basis="switch_no_use",
    )


def _predicate_index(tokens: list[Token]) -> int:
    """Index of the first verb-like token (use, be, run, 用, 是 …): everything before it is the subject."""
    for index, token in enumerate(tokens):
        if token.key in ("use", "be", "run", "prefer", "have") or token.surface in ("用", "使", "是", "在"):
            return index
    return 0


# --------------------------------------------------------------------------- public API


def assess(new: str, old: str) -> Assessment:
    """Whether `new` supersedes `old`, might contradict it (`uncertain`), or neither (`none`).

    Transcript lines of two different speakers never contradict (each speaks for themselves); lines of one
    speaker are compared without the name. Between passages (more than one sentence or more than
    MAX_CLAIM_WORDS content words) and between one speaker's transcript lines only strong evidence counts: an
    explicit replacement of something the other statement says, a negation of most of what it says, or a
    changed value in an otherwise equal sentence; the weak outcomes (`uncertain`, a switch without the old value) become `none`."""
    if not new or not new.strip() or not old or not old.strip():
        raise ValidationFailed("cannot compare an empty statement: pass both the new and the old content")
    new_speaker, new_body = speaker(new)
    old_speaker, old_body = speaker(old)
    transcript = bool(new_speaker and old_speaker)
    if new_speaker and old_speaker:
        if new_speaker != old_speaker:
            return Assessment(
                "none",
                f"said by different speakers ('{new_speaker}' and '{old_speaker}'): both can hold",
                basis="speakers_differ",
            )
        new, old = new_body, old_body
    new_norm, old_norm = normalize(new), normalize(old)
    if new_norm == old_norm:
        return Assessment("none", "same statement (a duplicate, not a contradiction)", basis="same")
    old_tokens = tokens(old_norm)
    # One speaker's chat lines share polarity cues and frames by chance as passages do: strong evidence only.
    claims = not transcript and single_claim(new_norm) and single_claim(old_norm)
    for step in (
        lambda: _assess_replacement(new_norm, old_norm, old_tokens),
        lambda: _assess_negation(new_norm, old_norm),
        lambda: assess_value(new_norm, old_norm),
        lambda: _assess_switch(new_norm, old_norm, old_tokens) if claims else None,
    ):
        assessment = step()
        if assessment is not None:
            if assessment.kind == "uncertain" and not claims:
                return Assessment(
                    "none",
                    f"weak evidence between passages, not a conflict ({assessment.reason})",
                    basis="weak_passage",
                )
            return assessment
    new_content = content(tokens(_without_negations(new_norm)))
    old_content = content(tokens(_without_negations(old_norm)))
    if new_content and new_content == old_content:
        return Assessment(
            "none", "same claim with the same polarity (a duplicate, not a contradiction)", basis="same_claim"
        )
    return Assessment(
        "none", "no negation, replacement or value change between the two statements", basis="none"
    )


RESTATEMENT_OVERLAP = 0.6
"""Least share of content words two statements must have in common (|A∩B| / |A∪B|) to be merged as one fact."""


def restates(new: str, old: str) -> bool:
    """Whether `new` says the same as `old` in nearly the same words: at least RESTATEMENT_OVERLAP of their
    content words (stemmed, pronouns and function words left out) shared, and the same speaker for transcript
    lines. The lexical check a near-duplicate merge needs besides embedding similarity: a small embedder
    scores any two thank-you turns of one conversation 0.97, and a merge folds the new text away."""
    new_speaker, new_body = speaker(new)
    old_speaker, old_body = speaker(old)
    if new_speaker and old_speaker:
        if new_speaker != old_speaker:
            return False
        new, old = new_body, old_body
    first = content(tokens(normalize(new)))
    second = content(tokens(normalize(old)))
    if not first or not second:
        return normalize(new) == normalize(old)
    return len(first & second) >= RESTATEMENT_OVERLAP * len(first | second)


def negation_cue(text: str) -> bool:
    """Whether the statement carries a negation cue ("not", "never", "no longer", 不再 …)."""
    return _negation(normalize(text)) is not None
