"""Orders aimed at the agent (concealment, remote scripts, exfiltration, external images, standing orders) and
the pattern runner every text rule goes through."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..patterns import lazy
from . import languages
from .findings import (
    AGENT_DIRECTIVE,
    MARKDOWN_IMAGE_DETECTOR,
    SafetyFinding,
    _p,
    _Pattern,
    _snippet,
)

# Things that must never leave the user's machine, named in an exfiltration order.
_SENSITIVE = lazy(
    r"secrets?|credentials?|passwords?|passwd|tokens?|api[\s_-]?keys?|private\s+keys?|\.env\b|"
    r"env(?:ironment)?\s+variables|ssh\s+keys?|id_rsa|cookies?|session|conversation|chat\s+(?:history|log)|"
    r"memor(?:y|ies)|user\s+data|personal\s+data|~/\.aws|\.ssh|密码|密钥|令牌|凭证|凭据|聊天记录|对话记录|记忆|个人信息|"
    + languages.SENSITIVE_WORDS,
    re.IGNORECASE,
)

# An external address as a browser reads it: a scheme followed by any mix of slashes and backslashes
# ("https:/\\evil.example" is https://evil.example), percent-encoded or not, or a scheme-relative "//" or "\\\\".
_EXTERNAL = r"(?:(?:https?|ftp)(?::|%3a)\s*(?:[/\\]|%2f|%5c){0,3}|(?:[/\\]|%2f|%5c){2})"
# A link or image whose address carries a placeholder for what the agent knows ("?d={conversation}",
# "?q=[SECRET]", "$HISTORY"): the agent fills it in when it writes the link, and a click (or a preview) sends it.
_DATA_PLACEHOLDER = (
    r"(?:\{\{?|\$\{?|<|\[|%7b)\s{0,2}[\w ]{0,30}?(?:conversation|chat|history|memor(?:y|ies)|secrets?|"
    r"passwords?|tokens?|api[_ ]?keys?|credentials?|user[_ ]?data|personal|summary|context|messages?|"
    r"prompt|email|address|session)"
)

_DIRECTIVE_PATTERNS: tuple[_Pattern, ...] = (
    _p(
        AGENT_DIRECTIVE,
        "concealment from the user",
        r"\b(?:do\s+not|don't|dont|never|must\s+not|mustn't|should\s+not|shouldn't)\s+"
        r"(?:tell|inform|notify|alert|warn)\s+(?:the\s+)?(?:user|human|operator|owner)\b"
        r"|\b(?:do\s+not|don't|dont|never)\s+let\s+(?:the\s+)?(?:user|human|operator|owner)\s+(?:know|find\s+out|see)\b"
        r"|\b(?:do\s+not|don't|dont|never)\s+(?:mention|reveal|disclose|show|report)\s+(?:this|it|that|anything)\s+"
        r"to\s+(?:the\s+)?(?:user|human|operator)\b"
        r"|\b(?:hide|conceal|keep)\s+(?:this|it|that|these|the\s+\w+)\s+(?:secret\s+|hidden\s+)?from\s+"
        r"(?:the\s+)?(?:user|human|operator)\b",
    ),
    _p(
        AGENT_DIRECTIVE,
        "remote script piped into a shell",
        r"\b(?:curl|wget)\b[^\n|]{0,300}\|\s*(?:sudo\s+)?(?:ba|z|da|k|fi)?sh\b"
        r"|\b(?:ba|z)?sh\s+<\(\s*(?:curl|wget)\b"
        r"|\b(?:iex|invoke-expression)\b[^\n]{0,40}?\b(?:iwr|irm|invoke-webrequest|invoke-restmethod|downloadstring)\b"
        r"|\bbase64\s+(?:-d|--decode)\b[^\n|]{0,100}\|\s*(?:ba|z)?sh\b",
    ),
    _p(
        AGENT_DIRECTIVE,
        "send data to a URL",
        r"\b(?:send|post|upload|forward|transmit|leak|copy|exfiltrate|pipe)\b[^\n]{0,120}?\b(?:to|into)\s+"
        r"(?:https?|ftp)://",
        severity="quarantine",
    ),
    _p(AGENT_DIRECTIVE, "exfiltration", r"\bexfiltrat(?:e|es|ed|ing|ion)\b", severity="quarantine"),
    # An image the agent renders is fetched at once, with whatever the URL carries (`?q=<the chat>`): a
    # zero-click exfiltration channel. Links (no "!") need a click and are ordinary notes.
    _p(
        AGENT_DIRECTIVE,
        "markdown image from an external URL",
        r"!\[[^\]\n]{0,500}\]\(\s*(?:<\s*)?"
        + _EXTERNAL
        + r"|<img\b[^>]{0,500}?\bsrc\s*=\s*(?:[\"']\s*)?"
        + _EXTERNAL,
        flags=re.MULTILINE,
        detector=MARKDOWN_IMAGE_DETECTOR,
    ),
    _p(
        AGENT_DIRECTIVE,
        "markdown link carrying data out",
        r"\]\(\s*(?:<\s*)?"
        + _EXTERNAL
        + r"[^\s)]{1,300}?[?&#=/]"
        + _DATA_PLACEHOLDER
        + r"|\b(?:https?|ftp)://[^\s)\]]{1,300}?[?&#]\w{1,30}="
        + _DATA_PLACEHOLDER,
        detector=MARKDOWN_IMAGE_DETECTOR,
    ),
    _p(
        AGENT_DIRECTIVE,
        "standing order to the agent",
        r"\b(?:always|only|must)\s+(?:respond|reply|answer|say|output|begin\s+(?:your\s+)?(?:responses?|replies?|answers?)"
        r"|start\s+(?:your\s+)?(?:responses?|replies?|answers?))\s+with\b",
        severity="quarantine",
    ),
    _p(
        AGENT_DIRECTIVE,
        "standing order to the agent",
        r"\b(?:from\s+now\s+on|going\s+forward|henceforth|in\s+all\s+future\s+(?:sessions|conversations|replies)),?\s+"
        r"you\s+(?:must|will|shall|should|are\s+to|have\s+to|need\s+to)\b",
        severity="quarantine",
    ),
    _p(
        AGENT_DIRECTIVE,
        "concealment from the user (zh)",
        r"(?:不要|别|不许|不准|不能|切勿|千万别|绝不要?)(?:告诉|通知|提醒|透露给|让)(?:给)?(?:用户|使用者|主人)"
        r"|瞒着(?:用户|使用者|主人)|对(?:用户|使用者|主人)(?:保密|隐瞒)",
    ),
    _p(
        AGENT_DIRECTIVE,
        "send data to a URL (zh)",
        r"(?:发送|上传|转发|发|传|提交)(?:到|给|至)\s*(?:https?|ftp)://",
        severity="quarantine",
    ),
    _p(
        AGENT_DIRECTIVE,
        "standing order to the agent (zh)",
        r"(?:以后|今后|从现在(?:起|开始)|从今(?:以后|往后)|之后)[，,]?\s*你(?:都|就)?(?:必须|一定要|只能|应该|要|得|需要)",
        severity="quarantine",
    ),
)

_DIRECTIVE_PATTERNS += languages.DIRECTIVE_PATTERNS


def _scan_patterns(
    text: str, patterns: tuple[_Pattern, ...], *, label_suffix: str = "", detector: str = ""
) -> Iterator[SafetyFinding]:
    reported: set[tuple[str, str]] = set()
    for pattern in patterns:
        if (pattern.rule, pattern.label) in reported:
            continue
        match = pattern.regex.search(text)
        if match is None:
            continue
        severity = pattern.severity
        # Sending data to a URL is an exfiltration order (not an ordinary webhook note) when what is sent is a
        # credential, the conversation or the memory itself, or when the text first overrides what came before.
        # (Chinese puts the object before the verb: there the 40 characters before the match count too.)
        start = max(0, match.start() - 40) if pattern.label.endswith("(zh)") else match.start()
        if pattern.label.startswith("send data to a URL") and (
            _SENSITIVE.search(text, start, match.end()) or _OVERRIDE_RE.search(text)
        ):
            severity = "block"
        reported.add((pattern.rule, pattern.label))
        detail = f"{pattern.label}{label_suffix}: '{_snippet(match.group())}'"
        yield SafetyFinding(pattern.rule, detail, severity, detector or pattern.detector)
    if (
        patterns is _DIRECTIVE_PATTERNS
        and (AGENT_DIRECTIVE, "markdown image from an external URL") not in reported
    ):
        reference = _reference_image(text)
        if reference:
            yield SafetyFinding(
                AGENT_DIRECTIVE,
                f"markdown image from an external URL{label_suffix}: '{_snippet(reference)}'",
                "block",
                detector or MARKDOWN_IMAGE_DETECTOR,
            )


_OVERRIDE_RE = lazy(
    r"\b(?:ignore|disregard|forget)\s+(?:all\s+of\s+|all\s+)?(?:the\s+|everything\s+)?"
    r"(?:above|previous|prior|preceding|foregoing|before)\b",
    re.IGNORECASE,
)
_REFERENCE_IMAGE_RE = lazy(r"!\[[^\]\n]{0,500}\]\s?\[([^\]\n]{0,100})\]")
_REFERENCE_DEFINITION_RE = lazy(
    r"^[ \t]{0,3}\[([^\]\n]{1,100})\]:[ \t]*(?:<[ \t]*)?" + _EXTERNAL, re.MULTILINE | re.IGNORECASE
)


def _reference_image(text: str) -> str | None:
    """A reference-style image (`![x][ref]` … `[ref]: https://…`) whose definition points outside."""
    if "![" not in text:
        return None
    external = {m.group(1).strip().lower() for m in _REFERENCE_DEFINITION_RE.finditer(text)}
    if not external:
        return None
    for match in _REFERENCE_IMAGE_RE.finditer(text):
        # `![alt][]` uses the alt text as its reference
        label = (match.group(1) or match.group()[2 : match.group().index("]")]).strip().lower()
        if label in external:
            return match.group()
    return None
