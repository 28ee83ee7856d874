"""Content safety scan for text that will later be injected into an agent's prompt (records, memory files).

Memory is a persistence channel for prompt injection: a line written today is replayed into every future
session. The scan therefore looks for five things, each a stable rule name that appears in errors, audit
records and metrics:

- `invisible_unicode`: zero-width, word-joiner, invisible-operator, BOM, tag and variation-selector characters
  used to hide text from the human reviewing a memory while the model still reads it;
- `bidi_control`: bidirectional embedding/override/isolate controls ("Trojan Source" reordering);
- `prompt_injection`: attempts to replace the agent's instructions or forge chat-template role markers;
- `agent_directive`: orders aimed at the agent instead of facts about the world (conceal from the user,
  pipe remote scripts into a shell, send data to a URL, "from now on you must");
- `secret`: credentials that must never be persisted in memory.

Severity `block` means the content must not be stored as-is; `quarantine` means it is plausible but
suspicious (e.g. "always respond with …" can be a genuine preference), so it may be kept for human review but
never recalled. The caller decides what to do with each severity.

Every pattern is precompiled, anchored on literal words and uses only bounded repetition, so a scan is linear
in the text length (no catastrophic backtracking) — important because content comes from untrusted agents.
English and Chinese phrasings are covered. Known limits: homoglyph substitution (Cyrillic "о" for Latin "o")
and paraphrased injections are not detected; this is a tripwire, not a guarantee.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal, Protocol

from . import credentials
from .patterns import LazyPattern, lazy

Severity = Literal["block", "quarantine"]

INVISIBLE_UNICODE = "invisible_unicode"
BIDI_CONTROL = "bidi_control"
PROMPT_INJECTION = "prompt_injection"
AGENT_DIRECTIVE = "agent_directive"
SECRET = "secret"

RULES: tuple[str, ...] = (INVISIBLE_UNICODE, BIDI_CONTROL, PROMPT_INJECTION, AGENT_DIRECTIVE, SECRET)
"""Every rule name the scan can report, in the order findings are returned."""


@dataclass(frozen=True)
class SafetyFinding:
    rule: str
    detail: str
    severity: Severity
    detector: str = field(default="", compare=False)
    """Which detector found it (`DETECTORS`): what `bench/safety_scan.py` reports precision and recall by."""


UNICODE_DETECTOR = "unicode"
PATTERN_DETECTOR = "patterns"
OBFUSCATION_DETECTOR = "obfuscation"
BASE64_DETECTOR = "base64"
MARKDOWN_IMAGE_DETECTOR = "markdown image"
SECRET_PATTERN_DETECTOR = "secret patterns"
DETECTORS: tuple[str, ...] = (
    UNICODE_DETECTOR,
    PATTERN_DETECTOR,
    OBFUSCATION_DETECTOR,
    BASE64_DETECTOR,
    MARKDOWN_IMAGE_DETECTOR,
    SECRET_PATTERN_DETECTOR,
    credentials.DETECT_SECRETS,
    credentials.URL_CREDENTIALS,
    credentials.PASSWORD_STATEMENT,
    credentials.PAYMENT_CARD,
)


# --------------------------------------------------------------------------- invisible characters

_ZWNJ, _ZWJ, _LRM, _RLM, _BOM = "\u200c", "\u200d", "\u200e", "\u200f", "\ufeff"

_INVISIBLE_RE = lazy(
    "[\u200b-\u200f\u2060-\u2064\ufeff\U000e0000-\U000e007f\ufe00-\ufe0f\U000e0100-\U000e01ef]"
)
_VARIATION_SELECTOR_RE = lazy("[\ufe00-\ufe0f\U000e0100-\U000e01ef]")
# The only legitimate use of tag characters: emoji subdivision flags (🏴 + lowercase tag letters + CANCEL TAG).
_TAG_FLAG_RE = lazy("\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{1,8}\U000e007f")
_BIDI_RE = lazy("[\u202a-\u202e\u2066-\u2069]")
# Right-to-left letters: LRM/RLM are ordinary punctuation-like marks in Hebrew and Arabic text.
_RTL_LETTER_RE = lazy("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")
# Everything the text rules should not be fooled by ("ig\u200bnore previous instructions").
_STRIP_RE = lazy(
    "[\u00ad\u200b-\u200f\u2060-\u2064\ufeff\u202a-\u202e\u2066-\u2069"
    "\U000e0000-\U000e007f\ufe00-\ufe0f\U000e0100-\U000e01ef]"
)


def _is_emoji(char: str) -> bool:
    code = ord(char)
    return code >= 0x1F000 or 0x2600 <= code <= 0x27BF or 0x2190 <= code <= 0x21FF or 0x2B00 <= code <= 0x2BFF


def _is_joining_script_letter(char: str) -> bool:
    """Letters/marks of scripts where ZWJ/ZWNJ shape words (Arabic, Persian, Indic, …): not Latin, not CJK."""
    code = ord(char)
    if code < 0x0370 or 0x2E80 <= code <= 0x9FFF or 0xAC00 <= code <= 0xD7AF:
        return False
    return unicodedata.category(char)[0] in ("L", "M")


def _allowed_invisible(text: str, index: int, flag_tags: set[int], has_rtl: bool) -> bool:
    """Whether the invisible character at `index` has its ordinary typographic use there."""
    char = text[index]
    before = text[index - 1] if index > 0 else ""
    after = text[index + 1] if index + 1 < len(text) else ""
    if char == _BOM:
        return index == 0
    if char == _ZWJ:
        if (
            before
            and after
            and (_is_emoji(before) or _VARIATION_SELECTOR_RE.match(before))
            and _is_emoji(after)
        ):
            return True
        return bool(
            before and after and _is_joining_script_letter(before) and _is_joining_script_letter(after)
        )
    if char == _ZWNJ:
        return bool(
            before and after and _is_joining_script_letter(before) and _is_joining_script_letter(after)
        )
    if char in (_LRM, _RLM):
        return has_rtl
    if index in flag_tags:
        return True
    if _VARIATION_SELECTOR_RE.match(char):
        # One selector right after a visible base character picks a glyph (emoji vs text style, CJK variants).
        # A run of selectors, or one with no base, is the "variation selector smuggling" encoding; so is one
        # selector after each of many Latin letters (each carries a hidden byte), hence the base check.
        return (
            bool(before)
            and not before.isspace()
            and not _VARIATION_SELECTOR_RE.match(before)
            and not (after and _VARIATION_SELECTOR_RE.match(after))
            and _selector_fits_base(char, before)
        )
    return False


def _selector_fits_base(selector: str, base: str) -> bool:
    """Whether Unicode defines variation sequences of this kind for this base: VS15/VS16 (text/emoji style)
    after symbols, emoji and digits; VS1-VS14 after CJK ideographs, Mongolian, Myanmar, Phags-pa and math
    symbols; the supplementary selectors (ideographic variation sequences) after CJK ideographs only."""
    code, base_code = ord(selector), ord(base)
    cjk = 0x3400 <= base_code <= 0x9FFF or 0xF900 <= base_code <= 0xFAFF or 0x20000 <= base_code <= 0x3FFFF
    if code >= 0xE0100:
        return cjk
    if code in (0xFE0E, 0xFE0F):
        return not base.isalpha() or cjk
    return (
        cjk
        or 0x1000 <= base_code <= 0x109F
        or 0x1800 <= base_code <= 0x18AF
        or 0xA840 <= base_code <= 0xA877
        or unicodedata.category(base) == "Sm"
    )


def _char_label(char: str) -> str:
    return f"U+{ord(char):04X} {unicodedata.name(char, 'UNNAMED')}"


def _scan_invisible(text: str) -> Iterator[SafetyFinding]:
    if not _INVISIBLE_RE.search(text):
        return
    flag_tags = {i for m in _TAG_FLAG_RE.finditer(text) for i in range(m.start() + 1, m.end())}
    has_rtl = bool(_RTL_LETTER_RE.search(text))
    hidden: dict[str, int] = {}
    first = -1
    for match in _INVISIBLE_RE.finditer(text):
        index = match.start()
        if _allowed_invisible(text, index, flag_tags, has_rtl):
            continue
        if first < 0:
            first = index
        hidden[text[index]] = hidden.get(text[index], 0) + 1
    if hidden:
        yield SafetyFinding(
            INVISIBLE_UNICODE, _summarise("invisible", hidden, first), "block", UNICODE_DETECTOR
        )


def _scan_bidi(text: str) -> Iterator[SafetyFinding]:
    found: dict[str, int] = {}
    first = -1
    for match in _BIDI_RE.finditer(text):
        if first < 0:
            first = match.start()
        found[match.group()] = found.get(match.group(), 0) + 1
    if found:
        yield SafetyFinding(
            BIDI_CONTROL, _summarise("bidirectional control", found, first), "block", UNICODE_DETECTOR
        )


def _summarise(what: str, counts: dict[str, int], first: int) -> str:
    total = sum(counts.values())
    kinds = ", ".join(_char_label(c) for c in list(counts)[:4]) + (", …" if len(counts) > 4 else "")
    return f"{total} {what} character(s) ({kinds}), first at offset {first}"


# --------------------------------------------------------------------------- text rules


@dataclass(frozen=True)
class _Pattern:
    rule: str
    label: str
    regex: LazyPattern
    severity: Severity
    detector: str = PATTERN_DETECTOR


def _p(
    rule: str,
    label: str,
    pattern: str,
    severity: Severity = "block",
    flags: int = 0,
    detector: str = PATTERN_DETECTOR,
) -> _Pattern:
    return _Pattern(rule, label, lazy(pattern, re.IGNORECASE | flags), severity, detector)


# Words that make "instructions" the object of an override ("ignore all previous instructions").
_INSTRUCTION_NOUN = (
    r"(?:instructions?|prompts?|directions?|directives?|rules|guidelines|guardrails|context|commands|"
    r"constraints|polic(?:y|ies)|system\s+prompt)"
)
_ZH_INSTRUCTION_NOUN = r"(?:指令|指示|提示词?|规则|设定|命令|约束|限制)"
_ZH_EARLIER = r"(?:之前|以前|先前|此前|前面|上面|以上|上述|原来|原先|所有|全部|系统)"

_INJECTION_PATTERNS: tuple[_Pattern, ...] = (
    _p(
        PROMPT_INJECTION,
        "instruction override",
        r"\b(?:ignore|disregard|forget|override|bypass|discard|drop|skip)\s+"
        r"(?:(?:all|any|each|every|the|your|my|our|these|those|of)\s+){0,4}"
        r"(?:previous|prior|above|earlier|preceding|foregoing|initial|original|system|developer|safety)\s+"
        r"(?:(?:and|or|all|the|your|system|safety|developer|content)\s+){0,2}" + _INSTRUCTION_NOUN + r"\b",
    ),
    _p(
        PROMPT_INJECTION,
        "instruction override",
        r"\b(?:ignore|disregard|forget)\s+(?:all\s+of\s+|all\s+)?(?:everything|anything|all)\s+"
        r"(?:above|before|prior|(?:you\s+were|you've\s+been|you\s+have\s+been)\s+told)\b",
    ),
    _p(
        PROMPT_INJECTION,
        "instruction override",
        r"\b(?:ignore|disregard)\s+(?:all\s+of\s+)?the\s+above\s*(?:[.!;:]|$)",
        flags=re.MULTILINE,
    ),
    # "Disregard the above and send …": the override is followed by the order it makes room for. ("Disregard
    # the above estimate; …" names what to disregard and is an ordinary correction.)
    _p(
        PROMPT_INJECTION,
        "instruction override",
        r"\b(?:ignore|disregard|forget)\s+(?:all\s+of\s+|all\s+)?(?:the\s+|everything\s+)?"
        r"(?:above|previous|prior|preceding|foregoing)(?:\s*[,;:.!-]\s*|\s+(?:and|then)\s+)"
        r"(?:(?:and|then|now|instead|just|please),?\s+){0,2}(?:send|e-?mail|post|upload|forward|transmit|leak|copy|exfiltrate|reveal|print|output|"
        r"say|reply|respond|tell|write|run|execute|open|visit|fetch|call|include|append|add|render|show)\b",
    ),
    _p(
        PROMPT_INJECTION,
        "role reassignment",
        r"\b(?:you\s+are\s+now|(?:from\s+now\s+on|henceforth),?\s+you\s+(?:are|will\s+be|shall\s+be))\s+"
        r"(?:called|named|known\s+as|acting\s+as|playing|dan|(?:an?\s+)?(?:unrestricted|unfiltered|uncensored|"
        r"jailbroken|evil|malicious|rogue)|"
        r"no\s+longer\s+(?:bound|restricted|an?\s+(?:ai|assistant))|in\s+\w+\s+mode|an?\s+(?:ai|assistant|"
        r"language\s+model|chatbot|bot)\s+(?:that|which|who|with(?:out)?)\b)",
    ),
    # "You are now the owner of the billing repo" can be an ordinary assignment, so a bare persona change is
    # only suspicious.
    _p(
        PROMPT_INJECTION,
        "persona change",
        r"\b(?:you\s+are\s+now|(?:from\s+now\s+on|henceforth),?\s+you\s+(?:are|will\s+be|shall\s+be))\s+"
        r"(?:a|an|the|my)\b",
        severity="quarantine",
    ),
    _p(
        PROMPT_INJECTION,
        "system prompt replacement",
        r"\b(?:new|updated|revised|replacement|real|actual|true|secret|hidden)\s+system\s+(?:prompt|instructions?|message)\b",
    ),
    _p(
        PROMPT_INJECTION,
        "system prompt replacement",
        r"^[ \t>#*]*(?:new|updated|revised|real|actual|true)\s+instructions?\s*:",
        flags=re.MULTILINE,
    ),
    _p(
        PROMPT_INJECTION,
        "system prompt extraction",
        r"\b(?:reveal|print|show|repeat|output|leak|dump|display)\s+(?:me\s+)?(?:your|the)\s+"
        r"(?:full\s+|entire\s+|original\s+|hidden\s+)?(?:system\s+prompt|hidden\s+instructions|initial\s+instructions)\b",
    ),
    # A "system:" line only counts when it goes on to address or instruct the model; "System: Ubuntu 22.04" is
    # an ordinary fact.
    _p(
        PROMPT_INJECTION,
        "forged role header",
        r"^[ \t>#*\[]*system(?:\s+prompt)?\s*(?:\]\s*:?|:)\s*"
        r"(?:you\b|your\b|ignore\b|disregard\b|forget\b|from\s+now\b|always\b|never\b|do\s+not\b|don't\b|"
        r"new\b|override\b|act\s+as\b|respond\b|reply\b|answer\b|the\s+assistant\b|assistant\s+must\b)",
        flags=re.MULTILINE,
    ),
    _p(
        PROMPT_INJECTION,
        "chat template token",
        r"<\|\s*(?:im_start|im_end|im_sep|system|user|assistant|endoftext|start_header_id|end_header_id|eot_id|"
        r"begin_of_text)\s*\|>|\[/?INST\]|<<\s*/?SYS\s*>>|</?system>|<(?:start|end)_of_turn>",
    ),
    # The session snapshot's own wrapper (domain/sessions/sessions.py): content that closes it would put the
    # rest of the text outside the "notes, not instructions" block. The renderer escapes it anyway.
    _p(PROMPT_INJECTION, "snapshot wrapper tag", r"<\s*(?:/\s*)?memory-snapshot\b"),
    # Anthropic's legacy "\n\nHuman: … \n\nAssistant:" turn markers forge a conversation inside a note.
    # "Human resources", "Assistant manager: Bob" are not role lines (no colon right after the word).
    _p(
        PROMPT_INJECTION,
        "forged role line",
        r"^[ \t>*_\[]*(?:human|assistant)\s*(?:\]\s*)?:",
        flags=re.MULTILINE,
    ),
    _p(
        PROMPT_INJECTION,
        "jailbreak persona",
        r"\bdo\s+anything\s+now\b|\bDAN\s+mode\b|\bjailbreak(?:ed)?\s+mode\b",
    ),
    # "Enable developer mode on the phone" is an everyday fact; the jailbreak addresses the model.
    _p(
        PROMPT_INJECTION,
        "jailbreak persona",
        r"\b(?:you\s+are|you're|act\s+as|acting\s+as|pretend|simulate|emulate)\b[^\n.]{0,60}?\bdeveloper\s+mode\b"
        r"|\bdeveloper\s+mode\s+(?:output|response|enabled\s+chatgpt)\b|\bchatgpt\s+with\s+developer\s+mode\b",
    ),
    _p(
        PROMPT_INJECTION,
        "instruction override (zh)",
        r"(?:忽略|无视|忽视|不要理会|别理会|忘记|忘掉|抛弃|丢弃|覆盖|绕过)(?:掉)?(?:你|我)?(?:的)?"
        + _ZH_EARLIER
        + r"(?:的)?(?:所有|全部|一切)?(?:的)?"
        + _ZH_INSTRUCTION_NOUN
        + r"|(?:忽略|无视|忽视)(?:掉)?(?:以上|上面|上述|前面)(?:的)?(?:所有|全部)?(?:的)?内容",
    ),
    _p(
        PROMPT_INJECTION,
        "role reassignment (zh)",
        r"(?:你现在|从现在(?:起|开始)[,，]?\s*你)(?:就)?(?:是|扮演|变成了?)\s*(?:一个|一名|一位|个|名)?\s*"
        r"(?:dan|不受(?:任何)?限制|没有(?:任何)?限制|无限制|越狱|邪恶|开发者模式)",
    ),
    _p(
        PROMPT_INJECTION,
        "persona change (zh)",
        r"(?:你现在|从现在(?:起|开始)[,，]?\s*你)(?:就)?(?:是|扮演|变成了?)\s*(?:一个|一名|一位|我的)",
        severity="quarantine",
    ),
    _p(
        PROMPT_INJECTION,
        "system prompt replacement (zh)",
        r"(?:新的?|更新(?:后)?的?|覆盖|替换|修改|真正的?)系统(?:提示词?|指令|消息)"
        r"|^[ \t>#*\[]*系统(?:提示词?)?\s*(?:\]\s*:?|:)\s*(?:你|忽略|从现在|总是|永远|不要)",
        flags=re.MULTILINE,
    ),
    _p(
        PROMPT_INJECTION,
        "system prompt extraction (zh)",
        r"(?:输出|打印|显示|泄露|告诉我|重复)(?:你的|出你的|一下你的)?(?:完整的?|全部的?)?(?:系统提示词?|初始指令|隐藏指令)",
    ),
    _p(PROMPT_INJECTION, "jailbreak persona (zh)", r"越狱模式|你(?:现在)?(?:处于|进入了?)开发者模式"),
)

# Things that must never leave the user's machine, named in an exfiltration order.
_SENSITIVE = lazy(
    r"secrets?|credentials?|passwords?|passwd|tokens?|api[\s_-]?keys?|private\s+keys?|\.env\b|"
    r"env(?:ironment)?\s+variables|ssh\s+keys?|id_rsa|cookies?|session|conversation|chat\s+(?:history|log)|"
    r"memor(?:y|ies)|user\s+data|personal\s+data|~/\.aws|\.ssh|密码|密钥|令牌|凭证|凭据|聊天记录|对话记录|记忆|个人信息",
    re.IGNORECASE,
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
        r"!\[[^\]\n]{0,500}\]\(\s*(?:<\s*)?(?:(?:https?|ftp):)?//"
        r"|<img\b[^>]{0,500}?\bsrc\s*=\s*(?:[\"']\s*)?(?:(?:https?|ftp):)?//",
        flags=re.MULTILINE,
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
    r"^[ \t]{0,3}\[([^\]\n]{1,100})\]:[ \t]*(?:<[ \t]*)?(?:(?:https?|ftp):)?//", re.MULTILINE | re.IGNORECASE
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


def _snippet(matched: str, limit: int = 60) -> str:
    flat = " ".join(matched.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# --------------------------------------------------------------------------- secrets


@dataclass(frozen=True)
class _SecretPattern:
    label: str
    regex: LazyPattern


# Secret values are never echoed in a finding: details are logged and returned to callers.
_SECRET_PATTERNS: tuple[_SecretPattern, ...] = (
    _SecretPattern("AWS access key id (AKIA…/ASIA…)", lazy(r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b")),
    _SecretPattern(
        "private key (PEM header)",
        lazy(r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"),
    ),
    _SecretPattern("GitHub token (ghp_…/gho_…/ghs_…)", lazy(r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b")),
    _SecretPattern("GitHub fine-grained token (github_pat_…)", lazy(r"\bgithub_pat_[A-Za-z0-9_]{22,255}")),
    _SecretPattern("Slack token (xox…-)", lazy(r"\bxox[abprs]-[A-Za-z0-9][A-Za-z0-9-]{9,250}")),
    _SecretPattern("Anthropic API key (sk-ant-…)", lazy(r"\bsk-ant-[A-Za-z0-9_-]{20,300}")),
    _SecretPattern(
        "Stripe secret key (sk_live_…/rk_live_…)",
        lazy(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,250}"),
    ),
    _SecretPattern("Google API key (AIza…)", lazy(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    _SecretPattern(
        "JSON Web Token (eyJ….eyJ….)",
        lazy(r"\beyJ[A-Za-z0-9_-]{5,4096}\.eyJ[A-Za-z0-9_-]{5,8192}\.[A-Za-z0-9_-]{0,4096}"),
    ),
)

# "sk-learn-is-a-python-library" must not look like an OpenAI key: the body is checked for randomness below.
_OPENAI_KEY_RE = lazy(r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?([A-Za-z0-9_-]{20,300})")
_AWS_SECRET_RE = lazy(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_SECRET_WORD_RE = lazy(r"secret|私钥|密钥", re.IGNORECASE)
_ASSIGNMENT_RE = lazy(
    r"\b(?P<key>password|passwd|pwd|passphrase|secret|secret[_-]?key|client[_-]?secret|api[_-]?key|apikey|"
    r"access[_-]?key|access[_-]?token|auth[_-]?token|bearer[_-]?token|private[_-]?key|token)"
    r"[\"']?\s*[:=]\s*[\"']?(?P<value>[^\s\"'`,;]{4,200})"
    r"|(?P<zhkey>密码|口令|密钥|私钥|令牌)\s*[:：=]\s*(?P<zhvalue>[^\s\"'`,;，；。]{4,200})",
    re.IGNORECASE,
)
# Assignments whose value is a reference or a placeholder, not a secret.
_PLACEHOLDER_RE = lazy(
    r"^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{.*\}\}|<[^>]*>|\*+|x{3,}|\.{3,}|…|"
    r"(?:none|null|nil|redacted|hidden|masked|changeme|placeholder|example|tbd|todo|n/a|undefined|"
    r"required|optional|string|secret|password)|"
    r"(?:os\.environ|process\.env|env\.|secrets\.|vault:|ssm:|arn:aws:secretsmanager:|\{\{\s*secrets\.).*)$",
    re.IGNORECASE,
)
_SYMBOL_RE = lazy(r"[!@#$%^&*+/=?~]")


def _looks_random(token: str) -> bool:
    """A key body, not words: has letters and digits and one long unbroken alphanumeric stretch."""
    if not any(c.isdigit() for c in token) or not any(c.isalpha() for c in token):
        return False
    return max(len(part) for part in re.split(r"[_-]", token)) >= 16


def _looks_like_password(value: str) -> bool:
    """Values that carry entropy. Plain lowercase words ("Password: must be 12 characters") do not count;
    the cost is missing all-lowercase passphrases, which the other patterns cannot see either."""
    if _PLACEHOLDER_RE.match(value):
        return False
    if any(c.isdigit() for c in value) or _SYMBOL_RE.search(value):
        return True
    tail = value[1:]
    return any(c.isupper() for c in tail) and any(c.islower() for c in tail)


def _scan_secrets(text: str) -> Iterator[SafetyFinding]:
    own = SECRET_PATTERN_DETECTOR
    for pattern in _SECRET_PATTERNS:
        if pattern.regex.search(text):
            yield SafetyFinding(SECRET, pattern.label, "block", own)
    for match in _OPENAI_KEY_RE.finditer(text):
        if _looks_random(match.group(1)):
            yield SafetyFinding(SECRET, "OpenAI-style API key (sk-…)", "block", own)
            break
    for match in _AWS_SECRET_RE.finditer(text):
        token = match.group()
        mixed_case = any(c.isupper() for c in token) and any(c.islower() for c in token)
        # Mixed case rules out hex digests (git SHAs); the nearby word rules out random base64 blobs.
        if mixed_case and _SECRET_WORD_RE.search(text, max(0, match.start() - 60), match.start()):
            yield SafetyFinding(
                SECRET, "AWS secret access key (40 characters next to 'secret')", "block", own
            )
            break
    for match in _ASSIGNMENT_RE.finditer(text):
        key = match.group("key") or match.group("zhkey")
        value = match.group("value") or match.group("zhvalue")
        if _looks_like_password(value):
            yield SafetyFinding(SECRET, f"credential assignment ({key}=…)", "block", own)
            break
    # Prose passwords, payment cards and detect-secrets' maintained plugins (domain/credentials.py).
    for detector, label in credentials.scan(text):
        yield SafetyFinding(SECRET, label, "block", detector)


# --------------------------------------------------------------------------- obfuscation

# Text that spells words out ("i g n o r e", "i.g.n.o.r.e") or swaps letters for look-alike digits and
# symbols ("1gn0re pr3vious"). Only such text gets the extra views below, and a match in the letters-only
# view counts only where the original is itself obfuscated, so ordinary prose is never re-read.
_SPACED_RUN_RE = lazy(r"(?<![^\W_])(?:[^\W_][ \t._*~·•-]){2,}[^\W_](?![^\W_])")
# Bounded runs and anchored starts keep both linear (an unbounded `[0-9]+[A-Za-z]` is quadratic on digits).
_LEET_WORD_RE = lazy(
    r"[A-Za-z][0-9@$!|]{1,3}[A-Za-z]|(?<![0-9@$|])[0-9@$|]{1,3}[A-Za-z]{2}|[A-Za-z]{2}[0-9@$|]{1,3}(?![0-9])"
)
_LEET_TOKEN_RE = lazy(r"(?<![A-Za-z0-9@$!|])[A-Za-z0-9@$!|]+")
_LEET_I = str.maketrans("013457@$!|8", "oieastasilb")
_LEET_L = str.maketrans("013457@$!|8", "oleastasllb")
_SQUASHED_RE = lazy(
    r"(?:ignore|disregard|forget|override|bypass)(?:all|any|the|your|my|of|these|those|every){0,4}"
    r"(?:previous|prior|above|earlier|preceding|initial|original|system|developer)"
    r"(?:and|or|all|the|your|system|safety){0,2}"
    r"(?:instructions?|prompts?|directions|directives?|rules|guidelines|guardrails|context|commands)"
    r"|(?:ignore|disregard)(?:allof)?theabove|(?:reveal|print|show|leak|dump)(?:me)?(?:your|the)systemprompt"
    r"|newsystem(?:prompt|instructions?)|youarenow(?:dan|unrestricted|unfiltered|uncensored|jailbroken|evil)"
    r"|(?:donot|dont|never)(?:tell|inform|alert)(?:the)?user|jailbreakmode|doanythingnow"
)


def _obfuscated(text: str) -> bool:
    return bool(_SPACED_RUN_RE.search(text) or _LEET_WORD_RE.search(text))


def _despaced(text: str, leet: dict[int, int]) -> str:
    """Spelled-out runs joined ("i g n o r e" → "ignore"), look-alike characters inside words mapped back."""
    joined = _SPACED_RUN_RE.sub(lambda m: re.sub(r"[ \t._*~·•-]", "", m.group()), text)
    return _LEET_TOKEN_RE.sub(
        lambda m: (
            m.group().translate(leet)
            if len(m.group()) <= 64 and _LEET_WORD_RE.search(m.group())
            else m.group()
        ),
        joined,
    )


def _squashed(text: str, leet: dict[int, int]) -> tuple[str, list[int]]:
    """Letters only, lower case, look-alikes mapped; with the original offset of every kept letter."""
    letters: list[str] = []
    offsets: list[int] = []
    for index, char in enumerate(text.lower().translate(leet)):
        if "a" <= char <= "z":
            letters.append(char)
            offsets.append(index)
    return "".join(letters), offsets


def _scan_obfuscated(text: str) -> Iterator[SafetyFinding]:
    if not _obfuscated(text):
        return
    maps = (_LEET_I, _LEET_L) if "1" in text or "|" in text else (_LEET_I,)
    seen: set[str] = set()
    found_injection = False
    for leet in maps:
        view = _despaced(text, leet)
        if view != text:
            for patterns in (_INJECTION_PATTERNS, _DIRECTIVE_PATTERNS):
                for finding in _scan_patterns(
                    view, patterns, label_suffix=" (obfuscated)", detector=OBFUSCATION_DETECTOR
                ):
                    if finding.detail not in seen:
                        seen.add(finding.detail)
                        found_injection = found_injection or finding.rule == PROMPT_INJECTION
                        yield finding
        if found_injection:
            continue
        squashed, offsets = _squashed(text, leet)
        for match in _SQUASHED_RE.finditer(squashed):
            original = text[offsets[match.start()] : offsets[match.end() - 1] + 1]
            if _obfuscated(original):
                detail = f"instruction override (obfuscated): '{_snippet(original)}'"
                if detail not in seen:
                    seen.add(detail)
                    yield SafetyFinding(PROMPT_INJECTION, detail, "block", OBFUSCATION_DETECTOR)
                break


# --------------------------------------------------------------------------- encoded payloads

_BASE64_RUN_RE = lazy(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{20,}={0,2}(?![A-Za-z0-9+/_=-])")
_MAX_DECODED_RUNS = 16
_MAX_DECODED_CHARS = 64_000
_MAX_DEPTH = 2


def _decoded_text(run: str) -> str | None:
    """The text a plausible base64 (or base64url) run encodes, or None: binary data (an image, a key) and
    words that merely look like base64 decode to something unprintable."""
    body = run.rstrip("=")
    if len(body) % 4 == 1 or not (any(c.islower() for c in body) and any(c.isupper() for c in body)):
        return None
    alphabet = b"-_" if ("-" in body or "_" in body) else None
    if alphabet is not None and ("+" in body or "/" in body):
        return None
    try:
        raw = base64.b64decode(body + "=" * (-len(body) % 4), altchars=alphabet, validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    if len(decoded) < 8:
        return None
    printable = sum(1 for c in decoded if c.isprintable() or c in "\n\r\t")
    return decoded if printable >= 0.95 * len(decoded) else None


def _scan_encoded(text: str, depth: int) -> Iterator[SafetyFinding]:
    if depth >= _MAX_DEPTH:
        return
    budget = _MAX_DECODED_CHARS
    for count, match in enumerate(_BASE64_RUN_RE.finditer(text)):
        if count >= _MAX_DECODED_RUNS or budget <= 0:
            return
        decoded = _decoded_text(match.group()[: budget * 2])
        if decoded is None:
            continue
        budget -= len(decoded)
        # Hiding it is the tell: what would only be suspicious in plain text blocks when base64-wrapped.
        for finding in _scan_text(_visible(decoded), depth + 1):
            yield SafetyFinding(finding.rule, f"in base64: {finding.detail}", "block", BASE64_DETECTOR)


# --------------------------------------------------------------------------- public API


def _visible(text: str) -> str:
    """What a reader sees: compatibility forms folded (full-width letters), hidden characters removed."""
    return _STRIP_RE.sub("", unicodedata.normalize("NFKC", text))


def _scan_text(visible: str, depth: int) -> list[SafetyFinding]:
    """The text rules on what a reader sees, then on the obfuscated and encoded forms it may hide, each only
    for rules the plain text does not already block."""
    findings = [
        *_scan_patterns(visible, _INJECTION_PATTERNS),
        *_scan_patterns(visible, _DIRECTIVE_PATTERNS),
        *_scan_secrets(visible),
    ]
    for extra in (_scan_obfuscated(visible), _scan_encoded(visible, depth)):
        blocking = {f.rule for f in findings if f.severity == "block"}
        findings.extend(f for f in extra if f.rule not in blocking)
    return findings


def scan(text: str) -> list[SafetyFinding]:
    """All findings for `text`, grouped by rule in `RULES` order. An empty list means nothing was found."""
    if not text:
        return []
    findings: list[SafetyFinding] = [*_scan_invisible(text), *_scan_bidi(text)]
    findings.extend(_scan_text(_visible(text), 0))
    findings.sort(key=lambda finding: RULES.index(finding.rule))
    # A weaker pattern of a rule that already blocks adds nothing but noise to the audit record.
    blocking = {finding.rule for finding in findings if finding.severity == "block"}
    return [f for f in findings if f.severity == "block" or f.rule not in blocking]


def normalise(text: str) -> str:
    """`text` as it should be stored: without leading byte-order marks (an editor's encoding marker, invisible
    and meaningless inside a note). Everything else invisible is left for `scan` to refuse: tag characters,
    zero-width characters inside words and runs of variation selectors carry hidden text."""
    return text.lstrip(_BOM)


def first_rule(text: str) -> str | None:
    """Name of the first rule that blocks `text`, or None. Findings of severity `quarantine` do not count:
    memory files have no quarantine, and those phrasings ("always respond with …") are legitimate notes there."""
    for finding in scan(text):
        if finding.severity == "block":
            return finding.rule
    return None


# --------------------------------------------------------------------------- an optional second opinion


class ContentScreen(Protocol):
    """A managed classifier consulted after the scan on text that reaches memory files, and through them every
    later session's snapshot: in AWS, opt-in, Amazon Bedrock Guardrails (`adapters/aws/guardrails.py`).

    `screen` returns a blocking finding (rule `prompt_injection` for a prompt attack, `secret` for sensitive
    information) or None. When it cannot answer it raises `UpstreamUnavailable`: the write is refused with a
    503 and may be retried, never let through unscreened."""

    def screen(self, text: str) -> SafetyFinding | None: ...


def first_rule_with(screen: ContentScreen | None) -> Callable[[str], str | None]:
    """`first_rule`, then (only for text the scan lets through) the screen's verdict."""
    if screen is None:
        return first_rule

    def scan_then_screen(text: str) -> str | None:
        rule = first_rule(text)
        if rule is not None:
            return rule
        finding = screen.screen(text)
        return finding.rule if finding is not None and finding.severity == "block" else None

    return scan_then_screen
