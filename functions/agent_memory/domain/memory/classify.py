"""Rule-based memory type classifier (English and Chinese).

Used when a caller stores a memory without a type. Each type has a table of weighted cues (precompiled regular
expressions); a type's score is the sum of the weights of its cues found in the text, each cue counted once.
The highest score wins; ties go to the type listed first in `PRIORITY`, which ranks the types whose
consequences matter most for the write discipline (a correction supersedes, a temporary note expires).
Text with no cue at all is a declarative fact: `domain_knowledge` with a low confidence.

Confidence grows with the winning score and shrinks with the runner-up's:
`(1 - 0.5 ** best) * best / (best + runner_up)`, so a single strong cue alone gives 0.75 and two competing
cues of equal weight give half of that.

`episode` is never produced: telling a narrated event apart from a fact needs more than cue words, so
callers that log episodes name the type explicitly.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from ..errors import ValidationFailed
from ..patterns import LazyPattern, lazy
from ..records import MemoryType

PRIORITY: tuple[MemoryType, ...] = (
    MemoryType.CORRECTION,
    MemoryType.TEMPORARY,
    MemoryType.USER_PREFERENCE,
    MemoryType.PROJECT_STATE,
    MemoryType.TASK_ACTION,
    MemoryType.DOMAIN_KNOWLEDGE,
)
"""Tie-break order, most consequential first."""

DEFAULT_CONFIDENCE = 0.3
"""Confidence of the fallback `domain_knowledge` when no cue matched."""


@dataclass(frozen=True)
class Classification:
    type: MemoryType
    confidence: float
    signals: list[str] = field(default_factory=list)
    """The cues that fired, as `type:cue`, the winning type's first."""


@dataclass(frozen=True)
class _Cue:
    type: MemoryType
    name: str
    regex: LazyPattern
    weight: float


def _cue(memory_type: MemoryType, name: str, pattern: str, weight: float) -> _Cue:
    return _Cue(memory_type, name, lazy(pattern, re.IGNORECASE | re.MULTILINE), weight)


_PREF, _CORR, _PROJ = MemoryType.USER_PREFERENCE, MemoryType.CORRECTION, MemoryType.PROJECT_STATE
_TEMP, _TASK, _KNOW = MemoryType.TEMPORARY, MemoryType.TASK_ACTION, MemoryType.DOMAIN_KNOWLEDGE

# Subjects whose likes and dislikes are worth remembering; "a tool like Docker" has none of them.
_WHO = r"\b(?:i|i'm|user|users|the\s+user|they|he|she|we|you|customer|client|team)\b"

_CUES: tuple[_Cue, ...] = (
    # ---- user preference
    _cue(_PREF, "prefer", r"\bprefer(?:s|red|ring|ence|ences)?\b|\bwould\s+rather\b", 2.0),
    _cue(
        _PREF,
        "likes",
        _WHO + r"\s+(?:really\s+|also\s+|generally\s+)?(?:like|love|enjoy)s?\b|\b(?:likes|loves|enjoys)\b",
        1.5,
    ),
    _cue(
        _PREF,
        "dislikes",
        r"\b(?:hates?|dislikes?|can't\s+stand|cannot\s+stand|does\s+not\s+like|doesn't\s+like|don't\s+like)\b",
        2.0,
    ),
    _cue(
        _PREF,
        "always/never use",
        r"\b(?:always|never)\s+(?:use|uses|want|wants|write|writes|format|formats)\b",
        1.5,
    ),
    _cue(_PREF, "favourite", r"\bfavou?rite\b", 1.5),
    _cue(
        _PREF,
        "wants",
        _WHO + r"\s+(?:wants?|would\s+like)\s+(?:to\s+|the\s+|all\s+|responses|answers|replies|code)",
        1.0,
    ),
    _cue(_PREF, "我喜欢", r"(?:我|他|她|用户|客户|我们)(?:很|也|比较|更|最)?(?:喜欢|爱用|爱喝|爱吃)", 2.0),
    _cue(_PREF, "偏好", r"偏好|偏爱|更喜欢|比较喜欢|最喜欢|最爱", 2.0),
    _cue(_PREF, "不喜欢", r"不喜欢|讨厌|受不了|反感", 2.0),
    _cue(_PREF, "习惯", r"习惯(?:于|用|了)?|总是用|一直用|总用", 1.5),
    _cue(_PREF, "喜欢", r"喜欢", 1.0),
    # ---- correction
    _cue(_CORR, "actually (leading)", r"^\s*(?:actually|correction|to\s+correct|to\s+clarify)\b", 3.0),
    _cue(_CORR, "actually", r"\bactually\b", 1.5),
    _cue(
        _CORR,
        "correction",
        r"\bcorrect(?:ion|ed|ing)\b|\bupdate\s+to\s+(?:my|the)\s+(?:earlier|previous)\b",
        2.5,
    ),
    _cue(
        _CORR,
        "no, it's",
        r"(?:^|[.!;]\s*)no,\s*(?:it|that|the|this|they|he|she)(?:'s|'re|\s+is|\s+was|\s+are)?\b",
        3.0,
    ),
    _cue(
        _CORR, "not X but Y", r"\bnot\s+(?!only\b)[^,.;\n]{1,40}?,?\s+but\s+(?!also\b)(?:rather\s+)?\S", 2.0
    ),
    _cue(
        _CORR,
        "I was wrong",
        r"\bi\s+(?:was\s+wrong|misspoke|mis-spoke|meant\s+to\s+say|made\s+a\s+mistake)\b|\bi\s+meant\b",
        2.5,
    ),
    _cue(
        _CORR,
        "that's wrong",
        r"\b(?:that|this|it)(?:'s|\s+is|\s+was)\s+(?:wrong|incorrect|not\s+right|not\s+correct|outdated)\b",
        2.5,
    ),
    _cue(
        _CORR,
        "isn't X, it's Y",
        r"\b(?:isn't|is\s+not|wasn't|was\s+not|aren't|are\s+not)\b[^.;\n]{1,40}[,;]\s*(?:it's|it\s+is|they're|they\s+are)\b",
        2.5,
    ),
    _cue(_CORR, "其实", r"其实|实际上", 2.0),
    _cue(_CORR, "更正", r"更正|纠正|订正|修正一下", 3.0),
    _cue(_CORR, "不是…而是", r"不是[^。；;\n]{1,30}?而是", 3.0),
    _cue(_CORR, "说错了", r"说错了?|搞错了?|记错了?|写错了?|弄错了?|之前(?:说|记)的不对", 2.5),
    _cue(_CORR, "应该是", r"应该是", 1.0),
    # ---- project state
    _cue(
        _PROJ,
        "we decided",
        r"\b(?:we|team|they)\s+(?:have\s+|had\s+)?(?:decided|agreed|chose|committed)\b|\bdecision\b",
        2.0,
    ),
    _cue(
        _PROJ,
        "migrating",
        r"\b(?:are|is|we're|were)\s+(?:currently\s+|now\s+)?(?:migrating|moving|switching|upgrading)\b",
        2.0,
    ),
    _cue(_PROJ, "migration", r"\bmigrat(?:e|ed|es|ion)\b", 1.0),
    _cue(_PROJ, "deadline", r"\bdeadline\b|\bdue\s+(?:date|on|by)\b|\bcode\s+freeze\b", 2.0),
    _cue(
        _PROJ,
        "release",
        r"\breleas(?:e|es|ed|ing)\b|\blaunch(?:es|ed|ing)?\b|\bship(?:s|ped|ping)\b|\bv\d+\.\d+",
        1.5,
    ),
    _cue(_PROJ, "sprint", r"\bsprint\b|\bmilestone\b|\broadmap\b|\bbacklog\b|\bepic\b", 2.0),
    _cue(
        _PROJ,
        "status",
        r"\bstatus\b|\bin\s+progress\b|\bblocked\s+(?:on|by)\b|\bon\s+track\b|\bbehind\s+schedule\b",
        1.0,
    ),
    _cue(
        _PROJ,
        "currently working on",
        r"\b(?:currently|now)\s+working\s+on\b|\bwe(?:'re|\s+are)\s+(?:building|working)\b",
        2.0,
    ),
    _cue(_PROJ, "project", r"\b(?:the|this|our)\s+project\b|\bQ[1-4]\b", 1.0),
    _cue(_PROJ, "项目", r"项目", 1.5),
    _cue(_PROJ, "上线", r"上线|发布|发版|交付", 2.0),
    _cue(_PROJ, "截止", r"截止|截至|期限|死线", 2.0),
    _cue(_PROJ, "迁移", r"迁移|切换到|升级到", 2.0),
    _cue(_PROJ, "我们决定", r"我们(?:已经)?决定|团队决定|已确定|定下来", 2.0),
    _cue(_PROJ, "进度", r"进度|里程碑|迭代|冲刺|排期|正在开发|进行中", 1.5),
    # ---- temporary
    _cue(_TEMP, "today", r"\btoday\b|\btonight\b|\bthis\s+(?:morning|afternoon|evening)\b", 2.0),
    _cue(
        _TEMP,
        "right now",
        r"\bright\s+now\b|\bat\s+the\s+moment\b",
        2.0,
    ),
    # Weaker: "we decided to keep X for now" is a project decision with a hedge, not a passing state.
    _cue(_TEMP, "for now", r"\bfor\s+now\b|\bfor\s+the\s+time\s+being\b", 1.0),
    _cue(
        _TEMP,
        "this session",
        r"\b(?:for|in|during)\s+(?:this|the\s+current)\s+(?:session|conversation|chat|task)\b",
        3.0,
    ),
    _cue(
        _TEMP,
        "temporarily",
        r"\btemporar(?:y|ily)\b|\buntil\s+(?:tomorrow|tonight|later|the\s+end\s+of\s+the\s+day)\b",
        2.5,
    ),
    _cue(
        _TEMP,
        "for the next",
        r"\bfor\s+the\s+next\s+(?:few\s+)?(?:\d+\s+)?(?:minutes?|hours?)\b|\bthis\s+week\b",
        1.5,
    ),
    _cue(_TEMP, "今天", r"今天|今晚|今早|今天下午|今天上午", 2.0),
    _cue(_TEMP, "暂时", r"暂时|临时|目前先|先这样", 2.5),
    _cue(_TEMP, "这次", r"这次|本次(?:会话|对话)?|这个会话|这轮对话", 2.0),
    _cue(_TEMP, "现在", r"现在|此刻|眼下", 1.0),
    # ---- task action
    _cue(_TASK, "run `cmd`", r"\b(?:run|execute|type|invoke|call)\s+`[^`\n]{1,200}`", 3.0),
    _cue(_TASK, "command", r"`[^`\n]{1,200}`|^\s*\$\s+\S", 1.0),
    _cue(
        _TASK,
        "to X, do Y",
        r"\bto\s+(?:deploy|build|release|test|reproduce|install|set\s+up|configure|run|fix|restart|"
        r"rotate|publish|debug|update|migrate|roll\s+back|bootstrap)\b[^.\n]{0,80}?[,:]\s*(?:first\s+)?"
        r"(?:run|use|do|execute|call|type|open|go|edit|set|add|create|push|merge|start)\b",
        3.0,
    ),
    _cue(
        _TASK,
        "imperative",
        r"^\s*(?:run|execute|install|deploy|restart|open|type|invoke|call|clone|build|"
        r"push|merge|set|export|add|create|delete|rotate)\s+\S",
        1.5,
    ),
    _cue(
        _TASK,
        "first…then",
        r"\bfirst\b[^.\n]{0,100}?\bthen\b|\bafter\s+that\b|\bstep\s+\d+\b|^\s*\d+[.)]\s+\S",
        2.0,
    ),
    _cue(_TASK, "how to", r"\bhow\s+to\b|\bin\s+order\s+to\b|\bsteps?\s+(?:to|for)\b", 1.5),
    _cue(_TASK, "步骤", r"步骤|第[一二三四五六七八九十\d]步|操作方法|流程", 2.0),
    _cue(_TASK, "先…然后", r"先[^。；;\n]{1,40}?(?:然后|再|接着|之后)", 2.5),
    _cue(_TASK, "运行", r"运行|执行|输入命令|跑一下|部署时|要部署", 1.5),
    # ---- domain knowledge
    _cue(
        _KNOW,
        "definition",
        r"\bis\s+defined\s+as\b|\brefers\s+to\b|\bstands\s+for\b|\bis\s+short\s+for\b|\bmeans\b",
        2.0,
    ),
    _cue(
        _KNOW,
        "X is a Y",
        r"^[^,.;\n]{1,60}?\b(?:is|are)\s+(?:a|an|the)\s+(?:type|kind|form|set|family|class|"
        r"library|framework|service|protocol|tool|database|language|format|standard|algorithm|unit|measure)\b",
        2.0,
    ),
    # The first clause states what its subject is ("Kubernetes is a container orchestration platform").
    _cue(_KNOW, "is a", r"^[^,.;:\n]{1,60}?\b(?:is|are)\s+(?:a|an|one\s+of\s+the)\b", 1.5),
    _cue(
        _KNOW,
        "consists of",
        r"\bconsists?\s+of\b|\bis\s+made\s+(?:up\s+)?of\b|\bsupports?\b|\bworks\s+by\b",
        1.0,
    ),
    _cue(_KNOW, "是一种", r"是一种|是一个|是指|指的是|定义为|称为|叫做|由[^。\n]{1,20}组成|属于", 2.0),
)

_PRIORITY_RANK = {memory_type: rank for rank, memory_type in enumerate(PRIORITY)}


def classify(text: str) -> Classification:
    """Best-guess memory type of `text` with a confidence in [0, 1] and the cues that decided it."""
    if not text or not text.strip():
        raise ValidationFailed("cannot classify empty text: pass the memory's content")
    normalized = unicodedata.normalize("NFKC", text)
    scores: dict[MemoryType, float] = {}
    fired: dict[MemoryType, list[str]] = {}
    for cue in _CUES:
        if cue.regex.search(normalized):
            scores[cue.type] = scores.get(cue.type, 0.0) + cue.weight
            fired.setdefault(cue.type, []).append(f"{cue.type.value}:{cue.name}")
    if not scores:
        return Classification(MemoryType.DOMAIN_KNOWLEDGE, DEFAULT_CONFIDENCE, ["domain_knowledge:default"])
    ranked = sorted(scores, key=lambda t: (-scores[t], _PRIORITY_RANK[t]))
    best = scores[ranked[0]]
    runner_up = scores[ranked[1]] if len(ranked) > 1 else 0.0
    confidence = (1.0 - 0.5**best) * best / (best + runner_up)
    signals = [signal for memory_type in ranked for signal in fired[memory_type]]
    return Classification(ranked[0], round(min(1.0, max(0.0, confidence)), 3), signals)
