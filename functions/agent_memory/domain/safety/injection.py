"""Prompt-injection phrasings (English and Chinese): instruction overrides, role reassignment, forged system
prompts and role markers, chat-template tokens, jailbreak personas."""

from __future__ import annotations

import re

from . import languages
from .findings import PROMPT_INJECTION, _p, _Pattern

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
_INJECTION_PATTERNS += languages.INJECTION_PATTERNS
