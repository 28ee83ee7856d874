"""Opposition rule 3, a value change of one attribute: "<attribute> is <value>" with another value ("my email is
a@x" → "b@x"; "the deadline moved to March 10" is read as "the deadline is March 10"; 截止日期推迟到…)."""

from __future__ import annotations

from ..patterns import lazy
from .assessment import Assessment
from .tokens import Token, content, quote, render, subject, tokens

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


def _as_value_tokens(text: str) -> list[Token]:
    canonical = _ZH_CHANGE_RE.sub("是", _EN_CHANGE_RE.sub(" is ", text))
    found = tokens(canonical)
    return [t for t in found if t.surface not in _TIME_WORDS and t.surface not in ("the", "a", "an")]


def _cost(tokens: list[Token]) -> float:
    """How much text a token run is: a word counts 1, a Han character 0.5 (two characters ≈ one word)."""
    return sum(0.5 if t.kind == "han" else 1.0 for t in tokens)


def assess_value(new: str, old: str) -> Assessment | None:
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
    if not (content(new_mid) and content(old_mid)) or content(new_mid) == content(old_mid):
        return None  # only function words differ ("each month" / "every month"): a paraphrase
    copula = next((i for i in range(prefix - 1, -1, -1) if _is_copula(new_tokens[i])), None)
    if copula is None or not subject(new_tokens[:copula]):
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
    attribute = render(holder)
    old_value = render(old_tokens[copula + 1 :])
    new_value = render(new_tokens[copula + 1 :])
    if _cost(new_tokens[copula + 1 : prefix]) > 1.5:
        frame = render(new_tokens[:prefix])
        return Assessment(
            "uncertain",
            f"same statement frame '{quote(frame, 40)}' with a different detail ('{quote(render(old_mid), 30)}' "
            f"vs '{quote(render(new_mid), 30)}'); it may be an additional fact rather than a replacement",
            basis="value_detail",
        )
    return Assessment(
        "supersedes",
        f"value change: '{quote(attribute, 40)}' was '{quote(old_value, 40)}', now '{quote(new_value, 40)}'",
        basis="value",
    )


_SHORT_VALUE_WORDS = 2


def _different_topics(new_value: list[Token], old_value: list[Token]) -> bool:
    """A verb like "prefers" holds one value per topic, not one value in all: "tabs" → "spaces" and "dark mode"
    → "light mode" replace a value, but two longer objects with no content word in common ("British English
    spelling in documentation", "short commit messages") are preferences about different things."""
    new_content, old_content = content(new_value), content(old_value)
    if new_content & old_content:
        return False
    return max(len(new_content), len(old_content)) > _SHORT_VALUE_WORDS


_CLAUSE_WORDS = frozenset({"and", "but", "because", "so", "or", "while", "though", "although"})
_DEMONSTRATIVES = frozenset({"that", "this", "it", "these", "those", "there", "which", "what"})


def _is_copula(token: Token) -> bool:
    return token.surface in _COPULAS or token.key in _SINGLE_VALUED_VERBS
