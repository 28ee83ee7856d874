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

import functools
import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from ..errors import ValidationFailed
from ..patterns import LazyPattern, lazy
from ..text import strip_suffixes

Kind = Literal["none", "supersedes", "uncertain"]


@dataclass(frozen=True)
class Assessment:
    kind: Kind
    reason: str


# --------------------------------------------------------------------------- normalisation and tokens

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CONTRACTIONS = (
    (lazy(r"\bwon't\b"), "will not"),
    (lazy(r"\bcan't\b"), "can not"),
    (lazy(r"\bshan't\b"), "shall not"),
    (lazy(r"\b(\w+)n't\b"), r"\1 not"),
    (lazy(r"\bcannot\b"), "can not"),
    (lazy(r"\bi'm\b"), "i am"),
    (lazy(r"\b(we|they|you)'re\b"), r"\1 are"),
    (lazy(r"\b(i|we|they|you)'ve\b"), r"\1 have"),
    (lazy(r"\b(it|that|he|she|there|what|who)'s\b"), r"\1 is"),
    (lazy(r"(\w)'s\b"), r"\1"),  # possessive: "the user's timezone" -> "the user timezone"
)
_TRAILING_RE = lazy(r"[\s.!?。！？~…]+$")


@functools.lru_cache(maxsize=65536)  # a remember assesses ~10 neighbours, each normalised again per pair
def _normalize(text: str) -> str:
    """NFKC, case folded, straight apostrophes, contractions expanded, whitespace collapsed, no final stop."""
    folded = unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'").replace("\u2018", "'")
    for pattern, replacement in _CONTRACTIONS:
        folded = pattern.sub(replacement, folded)
    return _TRAILING_RE.sub("", " ".join(folded.split()))


@dataclass(frozen=True)
class _Token:
    surface: str
    key: str
    """Comparison form: a light stem for words, the character itself for Han, a pronoun class for pronouns."""
    kind: Literal["word", "han", "sym"]
    start: int
    end: int


_TOKEN_RE = lazy(
    r"(?P<zhpron>用户|使用者|我们|咱们|他们|她们)"
    r"|(?P<zhfiller>现在|目前|当前|已经|一直|还是)"
    rf"|(?P<han>[{_HAN}])"
    r"|(?P<word>[0-9a-z\u00c0-\u024f]+(?:[@._+/#-]+[0-9a-z\u00c0-\u024f]+)*[+#]*)"
    r"|(?P<sym>[:=])"
)

_IRREGULAR = {
    "went": "go", "gone": "go", "goes": "go", "ran": "run", "drank": "drink", "drunk": "drink", "ate": "eat",
    "eaten": "eat", "chose": "choose", "chosen": "choose", "wrote": "write", "written": "write",
    "bought": "buy", "thought": "think", "made": "make", "took": "take", "taken": "take", "gave": "give",
    "given": "give", "is": "be", "are": "be", "was": "be", "were": "be", "am": "be", "been": "be",
    "has": "have", "had": "have", "does": "do", "did": "do", "done": "do", "use": "use", "uses": "use",
    "used": "use", "using": "use", "left": "leave", "spent": "spend",
}  # fmt: skip

# Pronouns and the words for "the user" map to one subject class each, so "I" and "the user" agree.
_PRONOUNS = {
    "i": "<user>", "me": "<user>", "my": "<user>", "mine": "<user>", "user": "<user>", "users": "<user>",
    "我": "<user>", "用户": "<user>", "使用者": "<user>",
    "he": "<he>", "him": "<he>", "his": "<he>", "他": "<he>",
    "she": "<she>", "her": "<she>", "hers": "<she>", "她": "<she>",
    "they": "<they>", "them": "<they>", "their": "<they>", "他们": "<they>", "她们": "<they>",
    "we": "<we>", "us": "<we>", "our": "<we>", "我们": "<we>", "咱们": "<we>",
}  # fmt: skip

_STOP_WORDS = """
    a an the this that these those it its you your be do have will would can could should shall may might must
    to of for in on at by with and or but so as also really very just still now currently again anymore any
    each every
    more longer please too actually already then there here some all about into from over than ever
    的 了 吧 呢 吗 啊 呀 也 都 很 就 还 是 们 把 被 个 这 那 过 着 再 在 现在 目前 当前 已经 一直 还是
"""
_STOP = frozenset(_STOP_WORDS.split())


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """A light English stemmer: enough for "likes/liked/liking/like" and "stopped/stop" to agree."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= 3 or not word.isalpha():
        return word
    return strip_suffixes(word)


def _tokens(text: str, offset: int = 0) -> list[_Token]:
    """The text's tokens (a fresh list; the tokens are immutable and cached: one remember assesses its text
    against up to ~10 neighbours and tokenises each side several times, ~14 ms per remember uncached)."""
    return list(_cached_tokens(text, offset))


@functools.lru_cache(maxsize=4096)
def _cached_tokens(text: str, offset: int) -> tuple[_Token, ...]:
    return tuple(_tokenize(text, offset))


def _tokenize(text: str, offset: int) -> list[_Token]:
    tokens: list[_Token] = []
    for match in _TOKEN_RE.finditer(text):
        surface = match.group()
        start, end = match.start() + offset, match.end() + offset
        if match.group("word") is not None:
            key = _PRONOUNS.get(surface) or _stem(surface)
            tokens.append(_Token(surface, key, "word", start, end))
        elif match.group("sym") is not None:
            tokens.append(_Token(surface, surface, "sym", start, end))
        else:
            tokens.append(_Token(surface, _PRONOUNS.get(surface, surface), "han", start, end))
    return tokens


def _is_content(token: _Token) -> bool:
    return token.kind != "sym" and token.surface not in _STOP and not token.key.startswith("<")


def _content(tokens: list[_Token]) -> set[str]:
    return {t.key for t in tokens if _is_content(t)}


def _subject(tokens: list[_Token]) -> set[str]:
    """Who a clause is about: its content words plus pronoun classes."""
    return {t.key for t in tokens if _is_content(t) or t.key.startswith("<")}


def _render(tokens: list[_Token]) -> str:
    out = ""
    for token in tokens:
        if out and token.kind == "word" and ((out[-1].isalnum() and not _is_han(out[-1])) or out[-1] == ":"):
            out += " "
        out += token.surface
    return out


_HAN_RE = lazy(f"[{_HAN}]")


def _is_han(char: str) -> bool:
    return bool(_HAN_RE.match(char))


def _strip_stop(tokens: list[_Token]) -> list[_Token]:
    start, end = 0, len(tokens)
    while start < end and not _is_content(tokens[start]):
        start += 1
    while end > start and not _is_content(tokens[end - 1]):
        end -= 1
    return tokens[start:end]


_COLLECTIVES = frozenset({"<we>", "<they>"})


def _clash(first: set[str], second: set[str]) -> bool:
    """Both name a subject and they share nothing: the statements are about different things. "We" and
    "they" are too vague to tell subjects apart ("we moved from ECS" is about "the API runs on ECS")."""
    first, second = first - _COLLECTIVES, second - _COLLECTIVES
    return bool(first) and bool(second) and not (first & second)


def _quote(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --------------------------------------------------------------------------- 1. explicit replacement


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
    if clause and _is_han(clause[-1]):
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
        if replaced and replacement and _content(_tokens(replaced)) and _content(_tokens(replacement)):
            return _Replacement(replaced, replacement, match.start())
    return None


def _mentions(haystack: set[str], phrase: str) -> bool:
    """At least half of the phrase's content words (Han characters count one by one) occur in the haystack."""
    wanted = _content(_tokens(phrase))
    return bool(wanted) and len(wanted & haystack) * 2 >= len(wanted)


def _assess_replacement(new: str, old: str, old_tokens: list[_Token]) -> Assessment | None:
    found = _find_replacement(new)
    if found is None:
        return None
    old_content = _content(old_tokens)
    a, c = _quote(found.replaced, 40), _quote(found.replacement, 40)
    # In "postgres was replaced by aurora" the words before the match are the replaced thing, not a subject.
    subject_new = _subject(_tokens(new[: found.start])) - _content(_tokens(found.replaced))
    mention_index = next(
        (i for i, t in enumerate(old_tokens) if t.key in _content(_tokens(found.replaced))), None
    )
    subject_old = _subject(old_tokens[:mention_index]) if mention_index is not None else set()
    if _clash(subject_new, subject_old):
        return Assessment(
            "uncertain", f"replacement of '{a}' by '{c}', but the subjects differ from the old statement's"
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
            return Assessment("none", f"both statements describe the same replacement of '{a}' by '{c}'")
        return Assessment(
            "supersedes", f"replacement: new statement replaces '{a}' with '{c}', which the old one states"
        )
    if mentions_c:
        return Assessment(
            "none", f"the old statement already names '{c}', the replacement the new one describes"
        )
    return Assessment("uncertain", f"replacement of '{a}' by '{c}', but the old statement mentions neither")


def _same_phrase(first: str, second: str) -> bool:
    return _content(_tokens(first)) == _content(_tokens(second))


# --------------------------------------------------------------------------- 2. negation flip

_NEGATION_RE = lazy(
    r"\b(?:(?:does|do|did|is|are|was|were|will|would|can|could|should|has|have|had|am)\s+)?"
    r"(?:no\s+longer|not\s+any\s*more|never\s+again|never|not(?!\s+only\b)|no\s+more|stopped|quit|quitted|"
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
    scope_tokens = _tokens(scope_text, cue.end)
    positive_tokens = _tokens(positive)
    positive_content = _content(positive_tokens)
    scope = _content(scope_tokens) or _content(_tokens(negated[: cue.start]))
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
    if _clash(
        _subject(_tokens(negated[: cue.start])), _subject(positive_tokens[:verb_index] if verb_index else [])
    ):
        return Assessment(
            "uncertain", "opposite polarity, but the two statements are about different subjects"
        )

    negated_phrase = _quote(
        negated[cue.start : verb.end if verb and verb_index is not None else cue.end].strip()
    )
    if verb is not None and verb_index is not None:
        positive_phrase = (
            verb.surface
            if verb.kind == "han" and verb.surface in positive
            else positive_tokens[verb_index].surface
        )
        about_tokens = _strip_stop([t for t in scope_tokens if t.start >= verb.end])
        about = _render(about_tokens) or _render(
            [t for t in positive_tokens[verb_index + 1 :] if _is_content(t)]
        )
    else:
        positive_phrase = _quote(positive)
        about = _render([t for t in scope_tokens if t.key in shared])
    new_phrase, old_phrase = (
        (negated_phrase, positive_phrase) if new_is_negated else (positive_phrase, negated_phrase)
    )
    about = _quote(about or "the same thing", 40)

    implicit = _IMPLICIT_NEGATIVE_RE.search(positive)
    if implicit is not None:
        # "does not want emoji" vs "wants emoji-free messages": both negative, one without a negation cue.
        return Assessment(
            "uncertain",
            f"'{new_phrase}' vs '{old_phrase}': the other statement is phrased negatively too "
            f"('{implicit.group()}'), so the polarity is unclear",
        )
    scope_coverage = len(shared) / len(scope)
    rest = _content(_tokens(_without_negations(negated)))
    positive_coverage = len(positive_content & rest) / len(positive_content) if positive_content else 0.0
    # "don't page for warnings" vs "page for outages": each side has a detail the other lacks.
    differing_detail = bool(scope - shared) and bool(positive_content - rest)
    if scope_coverage < 0.75 or positive_coverage < 0.5 or differing_detail:
        return Assessment(
            "uncertain",
            f"opposite polarity ('{new_phrase}' vs '{old_phrase}') but the statements differ in what they are about",
        )
    if positive_content - rest and _COORDINATION_RE.search(positive):
        return Assessment(
            "uncertain",
            f"'{new_phrase}' contradicts only part of '{_quote(positive)}'"
            if new_is_negated
            else f"'{new_phrase}' restores only part of what '{_quote(negated)}' negated",
        )
    return Assessment("supersedes", f"negation: '{new_phrase}' contradicts '{old_phrase}' about '{about}'")


def _verb(scope_text: str, scope_tokens: list[_Token]) -> _Token | None:
    """The negated predicate: the first content word of the scope when something follows it ("like" in "not
    like coffee"), or a known Chinese verb at the start of the scope (不再[喜欢]咖啡)."""
    stripped = scope_text.lstrip()
    zh = _ZH_VERB_RE.match(stripped)
    if zh is not None:
        first = next((t for t in scope_tokens if t.kind == "han"), None)
        if first is not None:
            return _Token(zh.group(), zh.group()[0], "han", first.start, first.start + len(zh.group()))
    content = [t for t in scope_tokens if _is_content(t)]
    if len(content) >= 2 and content[0].kind == "word":
        return content[0]
    return None


# --------------------------------------------------------------------------- 3. value change

_EN_CHANGE_RE = lazy(
    r"\b(?:has\s+been\s+|have\s+been\s+|was\s+|were\s+|got\s+|is\s+being\s+|just\s+|been\s+)?"
    r"(?:moved|changed|pushed(?:\s+back)?|postponed|updated|shifted|rescheduled|bumped|slipped|extended|delayed|"
    r"brought\s+forward|reset|set|renamed|upgraded|downgraded|switched|increased|decreased|raised|lowered|"
    r"reduced|cut)\s+to\b"
    r"|\b(?:is|are)\s+(?:now|actually)\b|\bnow\s+(?:is|are)\b"
)
_ZH_CHANGE_RE = lazy(
    r"(?:已经|已|被)?(?:改到|改为|改成|改在|推迟到|推迟至|推迟为|提前到|提前至|延期到|延期至|延后到|调整为|调整到|"
    r"调到|变成|变为|更新为|更改为|换成|换为|现在是|已改为|升级到|升级为|降到|涨到|提高到)"
)
_COPULAS = frozenset({"is", "are", "was", "were", "am", ":", "=", "equals", "是", "为", "叫", "在"})
# Verbs whose object holds one value at a time, like a copula: one preferred style, one home town, one name.
_SINGLE_VALUED_VERBS = frozenset({"prefer", "liv", "bas", "locat", "nam", "call"})
_TIME_WORDS = frozenset(
    {"now", "currently", "actually", "already", "still", "了", "现在", "目前", "当前", "已经"}
)


def _as_value_tokens(text: str) -> list[_Token]:
    canonical = _ZH_CHANGE_RE.sub("是", _EN_CHANGE_RE.sub(" is ", text))
    tokens = _tokens(canonical)
    return [t for t in tokens if t.surface not in _TIME_WORDS and t.surface not in ("the", "a", "an")]


def _cost(tokens: list[_Token]) -> float:
    """How much text a token run is: a word counts 1, a Han character 0.5 (two characters ≈ one word)."""
    return sum(0.5 if t.kind == "han" else 1.0 for t in tokens)


def _assess_value(new: str, old: str) -> Assessment | None:
    new_tokens, old_tokens = _as_value_tokens(new), _as_value_tokens(old)
    prefix = 0
    limit = min(len(new_tokens), len(old_tokens))
    while prefix < limit and new_tokens[prefix].key == old_tokens[prefix].key:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and new_tokens[-1 - suffix].key == old_tokens[-1 - suffix].key:
        suffix += 1
    new_mid = new_tokens[prefix : len(new_tokens) - suffix]
    old_mid = old_tokens[prefix : len(old_tokens) - suffix]
    if not new_mid or not old_mid or _cost(new_mid) > 6 or _cost(old_mid) > 6 or prefix + suffix < 2:
        return None
    if not (_content(new_mid) and _content(old_mid)) or _content(new_mid) == _content(old_mid):
        return None  # only function words differ ("each month" / "every month"): a paraphrase
    copula = next((i for i in range(prefix - 1, -1, -1) if _is_copula(new_tokens[i])), None)
    if copula is None or not _subject(new_tokens[:copula]):
        return None
    if copula and new_tokens[copula - 1].surface in _DEMONSTRATIVES:
        return None  # "wow, that is awesome" / "that is great": a reaction to something unnamed, no attribute
    if any(_is_copula(t) or t.surface in _CLAUSE_WORDS for t in (*new_mid, *old_mid)):
        return None  # "my job is stressful, but i am coping" vs "my job is great and my team is …": clauses
    if _cost(new_tokens[copula + 1 :]) > 6 or _cost(old_tokens[copula + 1 :]) > 6:
        return (
            None  # a long predicate, not an attribute value: one differing word is more likely a paraphrase
        )
    if new_tokens[copula].key in _SINGLE_VALUED_VERBS and _different_topics(
        new_tokens[copula + 1 :], old_tokens[copula + 1 :]
    ):
        return None  # "prefers British spelling in docs" / "prefers short commit messages": two preferences
    # "user prefers" / "i live" name the attribute with the verb; "deadline" (is) does not need it.
    holder = (
        new_tokens[: copula + 1] if new_tokens[copula].key in _SINGLE_VALUED_VERBS else new_tokens[:copula]
    )
    attribute = _render(holder)
    old_value = _render(old_tokens[copula + 1 :])
    new_value = _render(new_tokens[copula + 1 :])
    if _cost(new_tokens[copula + 1 : prefix]) > 1.5:
        frame = _render(new_tokens[:prefix])
        return Assessment(
            "uncertain",
            f"same statement frame '{_quote(frame, 40)}' with a different detail ('{_quote(_render(old_mid), 30)}' "
            f"vs '{_quote(_render(new_mid), 30)}'); it may be an additional fact rather than a replacement",
        )
    return Assessment(
        "supersedes",
        f"value change: '{_quote(attribute, 40)}' was '{_quote(old_value, 40)}', now '{_quote(new_value, 40)}'",
    )


_SHORT_VALUE_WORDS = 2


def _different_topics(new_value: list[_Token], old_value: list[_Token]) -> bool:
    """A verb like "prefers" holds one value per topic, not one value in all: "tabs" → "spaces" and "dark mode"
    → "light mode" replace a value, but two longer objects with no content word in common ("British English
    spelling in documentation", "short commit messages") are preferences about different things."""
    new_content, old_content = _content(new_value), _content(old_value)
    if new_content & old_content:
        return False
    return max(len(new_content), len(old_content)) > _SHORT_VALUE_WORDS


_CLAUSE_WORDS = frozenset({"and", "but", "because", "so", "or", "while", "though", "although"})
_DEMONSTRATIVES = frozenset({"that", "this", "it", "these", "those", "there", "which", "what"})


def _is_copula(token: _Token) -> bool:
    return token.surface in _COPULAS or token.key in _SINGLE_VALUED_VERBS


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


def _assess_switch(new: str, old: str, old_tokens: list[_Token]) -> Assessment | None:
    match = _SWITCH_TO_RE.search(new)
    if match is None:
        return None
    target = next(g for g in (match.group("c"), match.group("c2"), match.group("c3"), match.group("c4")) if g)
    target = _LEADING_NOISE_RE.sub("", _trim_forward(target) + " ").strip()
    if not _content(_tokens(target)):
        return None
    c = _quote(target, 40)
    if _clash(_subject(_tokens(new[: match.start()])), _subject(old_tokens[: _predicate_index(old_tokens)])):
        return Assessment(
            "uncertain", f"replacement by '{c}', but the subjects differ from the old statement's"
        )
    if _mentions(_content(old_tokens), target):
        return Assessment(
            "uncertain", f"both statements name '{c}'; unclear whether the new one replaces the old"
        )
    if _USAGE_RE.search(old):
        return Assessment(
            "supersedes", f"replacement: new statement switches to '{c}'; the old one states '{_quote(old)}'"
        )
    return Assessment(
        "uncertain", f"the new statement switches to '{c}', but the old one states no use to replace"
    )


def _predicate_index(tokens: list[_Token]) -> int:
    """Index of the first verb-like token (use, be, run, 用, 是 …): everything before it is the subject."""
    for index, token in enumerate(tokens):
        if token.key in ("use", "be", "run", "prefer", "have") or token.surface in ("用", "使", "是", "在"):
            return index
    return 0


# --------------------------------------------------------------------------- public API


# --------------------------------------------------------------------------- speakers and claims

_SPEAKER_RE = lazy(
    r"^\s*(?P<name>[^\W\d_][\w'.-]{0,30}(?:\s+[^\W\d_][\w'.-]{0,30}){0,2})\s*:\s+(?P<body>\S.*)$", re.DOTALL
)
_BRACKET_SPEAKER_RE = lazy(r"^\s*\[(?P<name>[^\]\n]{1,60})\]\s*:?\s*(?P<body>\S.*)$", re.DOTALL)
# A short body is still an utterance when it is addressed or exclaimed ("Maria: Sure thing, John!"), unlike a
# field value ("Deadline: March 3").
_UTTERANCE_CUE_RE = lazy(
    r"[!?]|\b(?:i|i'm|i've|me|my|you|you're|your|we|we're|our|us|thanks?|thank|wow|sure|yeah|yes|yep|no|"
    r"ok|okay|oh|hey|hi|hello|agree|glad|sounds|looks|love|lol|haha|cool|nice|great|awesome|totally)\b",
    re.IGNORECASE,
)
_MIN_UTTERANCE_WORDS = 4
_SENTENCE_BREAK_RE = lazy(r"[.!?。！？]+\s+\S|[。！？]\S")
MAX_CLAIM_WORDS = 12
"""A statement with more content words than this (or more than one sentence) is a passage, not one claim."""


def speaker(text: str) -> tuple[str | None, str]:
    """(speaker, utterance) of a transcript line "Name: utterance" (every word of the name capitalised, at least
    four words said, or fewer that are addressed or exclaimed) or "[Name] utterance", else (None, text).
    "Release date: June 5" and "Deadline: March 3" are not utterances."""
    bracket = _BRACKET_SPEAKER_RE.match(text)
    if bracket is not None:
        return bracket.group("name").strip().casefold(), bracket.group("body")
    match = _SPEAKER_RE.match(text)
    if match is None:
        return None, text
    name, body = match.group("name"), match.group("body")
    if not all(word[0].isupper() for word in name.split()):
        return None, text
    if len(body.split()) < _MIN_UTTERANCE_WORDS and not _UTTERANCE_CUE_RE.search(body):
        return None, text
    return name.casefold(), body


def _single_claim(normalized: str) -> bool:
    """One sentence of at most MAX_CLAIM_WORDS content words: the statements the cue rules are written for.
    Chat turns and passages share polarity cues and frames with each other by chance far too often."""
    body = normalized.strip()
    return not _SENTENCE_BREAK_RE.search(body) and len(_content(_tokens(body))) <= MAX_CLAIM_WORDS


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
                "none", f"said by different speakers ('{new_speaker}' and '{old_speaker}'): both can hold"
            )
        new, old = new_body, old_body
    new_norm, old_norm = _normalize(new), _normalize(old)
    if new_norm == old_norm:
        return Assessment("none", "same statement (a duplicate, not a contradiction)")
    old_tokens = _tokens(old_norm)
    # One speaker's chat lines share polarity cues and frames by chance as passages do: strong evidence only.
    claims = not transcript and _single_claim(new_norm) and _single_claim(old_norm)
    for step in (
        lambda: _assess_replacement(new_norm, old_norm, old_tokens),
        lambda: _assess_negation(new_norm, old_norm),
        lambda: _assess_value(new_norm, old_norm),
        lambda: _assess_switch(new_norm, old_norm, old_tokens) if claims else None,
    ):
        assessment = step()
        if assessment is not None:
            if assessment.kind == "uncertain" and not claims:
                return Assessment(
                    "none", f"weak evidence between passages, not a conflict ({assessment.reason})"
                )
            return assessment
    new_content = _content(_tokens(_without_negations(new_norm)))
    old_content = _content(_tokens(_without_negations(old_norm)))
    if new_content and new_content == old_content:
        return Assessment("none", "same claim with the same polarity (a duplicate, not a contradiction)")
    return Assessment("none", "no negation, replacement or value change between the two statements")


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
    first = _content(_tokens(_normalize(new)))
    second = _content(_tokens(_normalize(old)))
    if not first or not second:
        return _normalize(new) == _normalize(old)
    return len(first & second) >= RESTATEMENT_OVERLAP * len(first | second)
