"""Pure text utilities shared by keyword search, de-duplication and recall logs.

`tokenize` is the single definition of a "term" in the service: the keyword index stores the tokens it
produces (joined by spaces), and queries go through the same function, so both sides always agree. Scripts
without spaces between words (Chinese, Japanese, Korean) are split into overlapping character bigrams, the
usual dictionary-free way to make BM25 work on them.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence

from .memo import memo
from .patterns import lazy

# Han (incl. extension A and compatibility ideographs), Hiragana, Katakana (+ phonetic extensions and the
# prolonged sound mark), Hangul syllables and jamo. Kept as one character class so a mixed run such as
# "東京タワー" becomes one run of bigrams.
_CJK_RANGES = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana
    "\u3130-\u318f"  # Hangul Compatibility Jamo
    "\u31f0-\u31ff"  # Katakana Phonetic Extensions
    "\u3400-\u4dbf"  # CJK Unified Ideographs Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\ua960-\ua97f"  # Hangul Jamo Extended-A
    "\uac00-\ud7af"  # Hangul Syllables
    "\ud7b0-\ud7ff"  # Hangul Jamo Extended-B
    "\uf900-\ufaff"  # CJK Compatibility Ideographs
    "\U00020000-\U0002fa1f"  # CJK Unified Ideographs Extensions B-F + Compatibility Supplement
)

# Either a run of CJK characters, or a run of word characters that are neither CJK nor "_" (so "v2",
# "postgres", "café" stay whole and snake_case splits into its parts).
_TOKEN_RE = lazy(rf"(?P<cjk>[{_CJK_RANGES}]+)|(?P<word>[^\W_{_CJK_RANGES}]+)")  # ~4 ms to compile

# A deliberately small list: only words that carry no meaning in a memory ("the", "is"), never domain words.
# Negations ("not", "no", "never") are kept on purpose: they matter for contradiction detection.
_STOPWORD_TEXT = """
a an and are as at be been but by can could did do does for from had has have he her his i if in into is it its
me my of on or our she so than that the their them then there these they this those to was we were what when
where which who will with would you your
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())


def tokenize(text: str) -> list[str]:
    """Terms of `text`, in order, duplicates kept (BM25 needs term frequencies).

    NFKC-normalised and case-folded; Latin/digit words split on anything that is not a letter or digit, with
    English stopwords dropped; each CJK run becomes its overlapping character bigrams (a lone CJK character
    stays a unigram)."""
    normalized = unicodedata.normalize("NFKC", text).casefold()
    tokens: list[str] = []
    for match in _TOKEN_RE.finditer(normalized):
        run = match.group("cjk")
        if run is not None:
            if len(run) == 1:
                tokens.append(run)
            else:
                tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
            continue
        word = match.group("word")
        if word not in STOPWORDS:
            tokens.append(word)
    return tokens


# Irregular English verb forms the suffix rules cannot reach ("went" and "go" are one keyword term).
_IRREGULAR = {
    "went": "go", "gone": "go", "goes": "go", "ran": "run", "drank": "drink", "drunk": "drink", "ate": "eat",
    "eaten": "eat", "chose": "choose", "chosen": "choose", "wrote": "write", "written": "write",
    "bought": "buy", "thought": "think", "made": "make", "took": "take", "taken": "take", "gave": "give",
    "given": "give", "left": "leave", "spent": "spend", "saw": "see", "seen": "see", "met": "meet",
    "felt": "feel", "found": "find", "got": "get", "gotten": "get", "told": "tell", "said": "say",
    "began": "begin", "begun": "begin", "brought": "bring", "taught": "teach", "won": "win", "lost": "lose",
}  # fmt: skip


@memo(maxsize=65536)
def stem(word: str) -> str:
    """A light English stemmer for keyword search: "painted/painting/paints" -> "paint", "stopped" -> "stop",
    "adopted" -> "adopt", a few irregular verbs; other words (digits, CJK bigrams, short words) unchanged.
    Deliberately conservative (no derivational suffixes) so that unrelated words rarely collide."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= 3 or not word.isalpha() or not word.isascii():
        return word
    return strip_suffixes(word)


def strip_suffixes(word: str) -> str:
    """The suffix rules of the light stemmers (`stem`; the contradiction detector's own): -ing, -ed, -es, -s
    with a doubled final consonant undone, then a final -e, so that every form of a verb meets."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 2:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                break
            word = word[: -len(suffix)]
            if len(word) >= 3 and word[-1] == word[-2] and word[-1] not in "lsaeiou":
                word = word[:-1]  # stopped -> stopp -> stop
            break
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


def index_terms(text: str) -> list[str]:
    """The keyword-index terms of a document: `tokenize`, each word stemmed (both runtimes' search indexes
    store these, and `index_query_terms` matches them)."""
    return [stem(token) for token in tokenize(text)]


def index_query_terms(text: str) -> list[str]:
    """A keyword query's distinct terms: each word's stem, then its unstemmed form when it differs, so
    documents indexed before stemming (until `reindex`) still match on the words as written."""
    terms: dict[str, None] = {}
    for token in tokenize(text):
        terms[stem(token)] = None
    for token in tokenize(text):
        terms.setdefault(token, None)
    return list(terms)


def query_terms(text: str) -> list[str]:
    """The distinct terms of a query, in first-seen order (what the recall log keeps instead of the text)."""
    return list(dict.fromkeys(tokenize(text)))


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two equal-length vectors; 0.0 when either is all zeros."""
    if len(a) != len(b):
        raise ValueError(f"cannot compare vectors of different lengths ({len(a)} and {len(b)})")
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    norm_a = math.sqrt(math.fsum(x * x for x in a))
    norm_b = math.sqrt(math.fsum(y * y for y in b))
    if norm_a == 0.0 or norm_b == 0.0:
        return 0.0
    # Rounding can push the ratio a hair outside [-1, 1]; callers compare it against thresholds.
    return max(-1.0, min(1.0, dot / (norm_a * norm_b)))
