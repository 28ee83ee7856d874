"""Tokens of a statement for the write discipline: normalisation, light stemming, content words, subjects,
and transcript speakers. Shared by the opposition rules (`contradiction`) and the value slots (`slots`)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from ..memo import memo
from ..patterns import lazy
from ..text import strip_suffixes

HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
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


@memo(maxsize=65536)  # a remember assesses ~10 neighbours, each normalised again per pair
def normalize(text: str) -> str:
    """NFKC, case folded, straight apostrophes, contractions expanded, whitespace collapsed, no final stop."""
    folded = unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'").replace("\u2018", "'")
    for pattern, replacement in _CONTRACTIONS:
        folded = pattern.sub(replacement, folded)
    return _TRAILING_RE.sub("", " ".join(folded.split()))


@dataclass(frozen=True)
class Token:
    surface: str
    key: str
    """Comparison form: a light stem for words, the character itself for Han, a pronoun class for pronouns."""
    kind: Literal["word", "han", "sym"]
    start: int
    end: int


_TOKEN_RE = lazy(
    r"(?P<zhpron>用户|使用者|我们|咱们|他们|她们)"
    r"|(?P<zhfiller>现在|目前|当前|已经|一直|还是)"
    rf"|(?P<han>[{HAN}])"
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
PRONOUNS = {
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
STOP = frozenset(_STOP_WORDS.split())


@memo(maxsize=65536)
def stem(word: str) -> str:
    """A light English stemmer: enough for "likes/liked/liking/like" and "stopped/stop" to agree."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= 3 or not word.isalpha():
        return word
    return strip_suffixes(word)


def tokens(text: str, offset: int = 0) -> list[Token]:
    """The text's tokens (a fresh list; the tokens are immutable and cached: one remember assesses its text
    against up to ~10 neighbours and tokenises each side several times, ~14 ms per remember uncached)."""
    return list(_cached_tokens(text, offset))


@memo(maxsize=4096)
def _cached_tokens(text: str, offset: int) -> tuple[Token, ...]:
    return tuple(_tokenize(text, offset))


def _tokenize(text: str, offset: int) -> list[Token]:
    tokens: list[Token] = []
    for match in _TOKEN_RE.finditer(text):
        surface = match.group()
        start, end = match.start() + offset, match.end() + offset
        if match.group("word") is not None:
            key = PRONOUNS.get(surface) or stem(surface)
            tokens.append(Token(surface, key, "word", start, end))
        elif match.group("sym") is not None:
            tokens.append(Token(surface, surface, "sym", start, end))
        else:
            tokens.append(Token(surface, PRONOUNS.get(surface, surface), "han", start, end))
    return tokens


def is_content(token: Token) -> bool:
    return token.kind != "sym" and token.surface not in STOP and not token.key.startswith("<")


def content(tokens: list[Token]) -> set[str]:
    return {t.key for t in tokens if is_content(t)}


def subject(tokens: list[Token]) -> set[str]:
    """Who a clause is about: its content words plus pronoun classes."""
    return {t.key for t in tokens if is_content(t) or t.key.startswith("<")}


def render(tokens: list[Token]) -> str:
    out = ""
    for token in tokens:
        if out and token.kind == "word" and ((out[-1].isalnum() and not is_han(out[-1])) or out[-1] == ":"):
            out += " "
        out += token.surface
    return out


HAN_RE = lazy(f"[{HAN}]")


def is_han(char: str) -> bool:
    return bool(HAN_RE.match(char))


def strip_stop(tokens: list[Token]) -> list[Token]:
    start, end = 0, len(tokens)
    while start < end and not is_content(tokens[start]):
        start += 1
    while end > start and not is_content(tokens[end - 1]):
        end -= 1
    return tokens[start:end]


_COLLECTIVES = frozenset({"<we>", "<they>"})


def clash(first: set[str], second: set[str]) -> bool:
    """Both name a subject and they share nothing: the statements are about different things. "We" and
    "they" are too vague to tell subjects apart ("we moved from ECS" is about "the API runs on ECS")."""
    first, second = first - _COLLECTIVES, second - _COLLECTIVES
    return bool(first) and bool(second) and not (first & second)


def quote(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --------------------------------------------------------------------------- 1. explicit replacement


# --------------------------------------------------------------------------- speakers and claims

_SPEAKER_RE = lazy(
    r"^\s*(?P<name>[^\W\d_][\w'.-]{0,30}(?:\s+[^\W\d_][\w'.-]{0,30}){0,2})\s*:\s+(?P<body>\S.*)$", re.DOTALL
)
_BRACKET_SPEAKER_RE = lazy(r"^\s*\[(?P<name>[^\]\n]{1,60})\]\s*:?\s*(?P<body>\S.*)$", re.DOTALL)
# A short body is still an utterance when it is addressed or exclaimed ("Maria: Sure thing, John!"), unlike a
# field value ("Deadline: March 3", "Region: us-east-1": a cue word inside a hyphenated value is no cue).
_UTTERANCE_CUE_RE = lazy(
    r"[!?]|\b(?:i|i'm|i've|me|my|you|you're|your|we|we're|our|us|thanks?|thank|wow|sure|yeah|yes|yep|no|"
    r"ok|okay|oh|hey|hi|hello|agree|glad|sounds|looks|love|lol|haha|cool|nice|great|awesome|totally)(?![\w-])",
    re.IGNORECASE,
)
_MIN_UTTERANCE_WORDS = 4
_SENTENCE_BREAK_RE = lazy(r"[.!?。！？]+\s+\S|[。！？]\S")
MAX_CLAIM_WORDS = 12
"""A statement with more content words than this (or more than one sentence) is a passage, not one claim."""


def speaker(text: str) -> tuple[str | None, str]:
    """(speaker, utterance) of a transcript line "Name: utterance" (every word of the name capitalised, or one
    word in lower case as typed in a chat, "jon: ..."; at least four words said, or fewer that are addressed or
    exclaimed) or "[Name] utterance", else (None, text). "Release date: June 5" and "Deadline: March 3" are
    not utterances."""
    bracket = _BRACKET_SPEAKER_RE.match(text)
    if bracket is not None:
        return bracket.group("name").strip().casefold(), bracket.group("body")
    match = _SPEAKER_RE.match(text)
    if match is None:
        return None, text
    name, body = match.group("name"), match.group("body")
    if not all(word[0].isupper() for word in name.split()) and not (" " not in name and name.islower()):
        return None, text  # "Release date: June 5"; a one-word name may be written in lower case ("jon: ...")
    if len(body.split()) < _MIN_UTTERANCE_WORDS and not _UTTERANCE_CUE_RE.search(body):
        return None, text
    return name.casefold(), body


def single_claim(normalized: str) -> bool:
    """One sentence of at most MAX_CLAIM_WORDS content words: the statements the cue rules are written for.
    Chat turns and passages share polarity cues and frames with each other by chance far too often."""
    body = normalized.strip()
    return not _SENTENCE_BREAK_RE.search(body) and len(content(tokens(body))) <= MAX_CLAIM_WORDS
