"""The words that tell how a new statement relates to an older one: a change ("now", "moved to", "left"), an
addition ("also", "another"), the past ("used to", "back in 2019"), a role frame ("is the team lead")."""

from __future__ import annotations

import re

from ..patterns import lazy

CHANGE_CUE_RE = lazy(
    r"\b(?:now|no\s+longer(?!\s+than\b)|any\s*more|moved|moving|relocated|transferred|reassigned|switched|switching|changed|changing|upgraded|"
    r"downgraded|migrated|rewritten|re-?written|left|leaving|joined|became|become|becomes|instead|replaced|"
    r"replacing|from\s+now\s+on|as\s+of|these\s+days|nowadays|again|back\s+to|is\s+back|are\s+back|starting|"
    r"effective|new|newly|renamed|rescheduled|bumped|raised|lowered|increased|decreased|reduced|extended|"
    r"shortened|promoted|stepped\s+down|took\s+over|taken\s+over|handed\s+over|updated|turned|after\s+all|"
    r"anymore|not\s+anymore|latest|currently|pushed|postponed|delayed|slipped|got|back|before|after|again|"
    r"brought\s+forward|took\s+over|instead|quit|stopped|dropped|sold|traded|gave\s+up|ditched|gone|"
    r"standardi[sz]ing|standardi[sz]ed|moving\s+to|going\s+forward|from\s+now)\b"
    r"|现在|改|换|搬|已经|不再|jetzt|nun|wieder|erneut|maintenant|désormais|ahora|ya\s+no"
)
ADDITIVE_CUE_RE = lazy(
    r"\b(?:also|too|as\s+well|another|additionally|in\s+addition|besides|plus|both|except|"
    r"exception|unless|only\s+for|but\s+for|when|if)\b|也|还|auch|aussi|también"
)
PAST_RE = lazy(
    r"\b(?:used\s+to|formerly|previously|back\s+in\s+(?:19|20)\d\d|back\s+in\s+the\s+day|as\s+a\s+kid|"
    r"as\s+a\s+child|growing\s+up|grew\s+up|years\s+ago|in\s+the\s+past|when\s+i\s+was)\b"
)
NOW_RE = lazy(r"\b(?:now|nowadays|these\s+days|from\s+now\s+on|currently|today)\b")
YEAR_RE = lazy(r"\b(19\d\d|20\d\d)\b")
ROLE_FRAME_RE = lazy(
    r"\b(?:is|are|was|'s)\s+(?:now\s+)?(?:the|our|my|their|his|her|its)\s+(?:new\s+)?\w+"
    r"|\b(?:leads|owns|manages|runs|heads|maintains|chairs)\s+(?:the|our)\b"
)

STRONG_CHANGE_RE = lazy(
    r"\b(?:moved|moving|relocated|transferred|reassigned|switched|switching|changed|upgraded|downgraded|migrated|rewritten|left|joined|"
    r"replaced|now|no\s+longer(?!\s+than\b)|anymore|any\s+more|instead|rescheduled|postponed|pushed|delayed|stepped\s+down|"
    r"took\s+over|quit|stopped|dropped|sold|traded|gave\s+up|from\s+now\s+on|starting|standardi[sz]ing|renamed|"
    r"bumped|raised|lowered|increased|decreased|reduced|extended|shortened|promoted|became|volvió|umgezogen|"
    r"jetzt|ahora|maintenant|désormais)\b|现在|改成|换成|搬到|不再"
)
"""The change cues that name a change by themselves (not "new", "again" or "back", which need a frame)."""

CHANGE_VERB_RE = lazy(
    r"\b(?:moved|relocated|transferred|reassigned|switched|changed|upgraded|downgraded|migrated|rewritten|left|joined|replaced|"
    r"rescheduled|postponed|pushed|delayed|stepped\s+down|took\s+over|quit|stopped|dropped|sold|traded|"
    r"gave\s+up|renamed|bumped|raised|lowered|increased|decreased|reduced|extended|shortened|promoted|became|"
    r"no\s+longer(?!\s+than\b)|anymore|instead)\b"
)
"""A change verb: stronger than "now" alone, which may only date a statement."""

RETURN_RE = lazy(
    r"\b(?:(?:go|goes|going|went|gone|switch|switched|switching|change|changed|changing|move|moved|moving)\s+)?"
    r"back\s+to\b|\b(?:is|are|was|were)\s+back\b|\breturn(?:s|ed|ing)?\s+to\b|\bonce\s+more\b|\bagain\b|"
    r"\bwieder\b|\bde\s+nuevo\b|\bde\s+nouveau\b",
    re.IGNORECASE,
)
"""The words that tell a return to an earlier value ("go back to", "is back", "returned to", "again"): left out
when a new statement is compared with the value it returns to (`decide`)."""
