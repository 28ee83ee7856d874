"""The instruction-override, role, concealment, exfiltration, standing-order and credential phrasings in German,
French, Spanish, Italian and Portuguese (English and Chinese are in `injection` and `directives`).

Each rule is anchored on the override verb and on the thing overridden ("ignoriere alle vorherigen
Anweisungen", "ignorez les instructions précédentes"): the verb alone ("ignoriere den Fehler") is ordinary
prose. Labels end in the language code, so an audit record says which phrasing fired. Repetition is bounded,
so each pattern stays linear in the text length.
"""

from __future__ import annotations

import re

from ..patterns import lazy
from .findings import AGENT_DIRECTIVE, PROMPT_INJECTION, _p, _Pattern

_W = r"[^\W\d_]"  # one letter of any script (accents included)
_FILLER = r"(?:" + _W + r"{1,14}\s+){0,3}?"  # up to three short words: articles, "alle", "toutes les", …

_DE_EARLIER = (
    r"(?:vorherige|vorige|bisherige|obige|frühere|vorangegangene|ursprüngliche|alte|erste|system)[nmrs]?"
)
_DE_RULES = (
    r"(?:anweisungen|anweisung|instruktionen|befehle|regeln|vorgaben|anordnungen|richtlinien|"
    r"system-?anweisungen|system-?prompts?|prompts?)"
)
_FR_RULES = r"(?:instructions?|consignes?|directives?|règles|ordres|commandes|prompts?|invites?)"
_FR_EARLIER = r"(?:précédentes?|précédents|antérieures?|ci-dessus|initiales?|d'origine|originales?|du\s+système|système)"
_ES_RULES = r"(?:instrucciones|instrucción|indicaciones|órdenes|reglas|directrices|directivas|prompts?)"
_ES_EARLIER = r"(?:anteriores|previas|precedentes|iniciales|originales|del\s+sistema|de\s+arriba)"
_IT_RULES = r"(?:istruzioni|indicazioni|regole|direttive|ordini|comandi|prompt)"
_IT_EARLIER = r"(?:precedenti|anteriori|iniziali|originali|di\s+sistema|del\s+sistema|sopra)"
_PT_RULES = r"(?:instruções|instrucoes|orientações|orientacoes|regras|diretrizes|ordens|comandos|prompts?)"
_PT_EARLIER = r"(?:anteriores|prévias|previas|iniciais|originais|do\s+sistema|acima)"

_OVERRIDES: tuple[_Pattern, ...] = (
    _p(
        PROMPT_INJECTION,
        "instruction override (de)",
        r"\b(?:ignorier(?:e|en|t)?|vergiss|vergesst|vergessen\s+sie|missachte(?:n|t)?|übergeh(?:e|en)|verwirf)\s+"
        r"(?:sie\s+)?"
        + _FILLER
        + r"(?:"
        + _DE_EARLIER
        + r"\s+"
        + _FILLER
        + _DE_RULES
        + r"|system-?(?:anweisungen|prompts?|regeln|vorgaben))\b"
        r"|\b(?:vergiss|vergessen\s+sie|ignoriere|ignorieren\s+sie)\s+alles,?\s+(?:was\s+(?:dir|ihnen|du)\b|"
        r"(?:oben|vorher|bisher|davor)\b)",
    ),
    _p(
        PROMPT_INJECTION,
        "instruction override (fr)",
        r"\b(?:ignore[rsz]?|oublie[rsz]?|néglige[rz]?|ne\s+(?:tiens|tenez)\s+(?:pas|plus)\s+compte)\s+"
        r"(?:d(?:es|e)\s+|d')?"
        + _FILLER
        + _FR_RULES
        + r"\s+"
        + _FR_EARLIER
        + r"|\b(?:ignore[rsz]?|oublie[rsz]?)\s+"
        r"(?:toutes?\s+|tous\s+)?(?:les|vos|tes)\s+(?:précédentes|anciennes|premières)\s+" + _FR_RULES + r"\b"
        r"|\boublie[rsz]?\s+tout\s+(?:ce\s+qu(?:i\s+précède|'on\s+(?:t'|vous\s+)a\s+dit|e\s+(?:tu\s+sais|je\s+t'ai\s+dit)))",
    ),
    _p(
        PROMPT_INJECTION,
        "instruction override (es)",
        r"\b(?:ignora[rd]?|ignore[ns]?|olvida[rd]?|olvide[ns]?|descarta[rd]?|omite|haz\s+caso\s+omiso\s+de)\s+"
        + _FILLER
        + _ES_RULES
        + r"\s+"
        + _ES_EARLIER
        + r"|\b(?:olvida|olvide|ignora|ignore)\s+todo\s+lo\s+(?:anterior|que\s+te\s+(?:han|hayan)\s+dicho)\b",
    ),
    _p(
        PROMPT_INJECTION,
        "instruction override (it)",
        r"\b(?:ignora(?:re|te)?|dimentica(?:re|te)?|trascura|non\s+considerare)\s+"
        + _FILLER
        + _IT_RULES
        + r"\s+"
        + _IT_EARLIER
        + r"|\b(?:dimentica|ignora)\s+tutto\s+(?:quello|ciò|cio)\s+che\s+(?:ti\s+è\s+stato|ti\s+hanno)\b",
    ),
    _p(
        PROMPT_INJECTION,
        "instruction override (pt)",
        r"\b(?:ignor[ae](?:r|m)?|esque[çc]a(?:m)?|desconsider[ae](?:r)?|descart[ae](?:r)?)\s+"
        + _FILLER
        + _PT_RULES
        + r"\s+"
        + _PT_EARLIER
        + r"|\b(?:esque[çc]a|ignore)\s+tudo\s+(?:o\s+que\s+(?:foi|te\s+foi|lhe\s+foi)\s+dito|acima)\b",
    ),
)

_UNRESTRICTED = (
    r"(?:uneingeschränkt|ungefiltert|unzensiert|ohne\s+(?:einschränkungen|regeln|grenzen|filter)|"
    r"sans\s+(?:restrictions?|limites?|filtres?|censure|règles)|sin\s+(?:restricciones|límites|filtros|censura|reglas)|"
    r"senza\s+(?:restrizioni|limiti|filtri|censura|regole)|sem\s+(?:restrições|restricoes|limites|filtros|censura|regras)|"
    r"\bdan\b|jailbreak|entwicklermodus|mode\s+développeur|modo\s+desarrollador|modalità\s+sviluppatore|"
    r"modo\s+desenvolvedor)"
)
_NOW_YOU_ARE = (
    r"(?:du\s+bist\s+(?:jetzt|nun|ab\s+sofort)|ab\s+(?:jetzt|sofort)\s+bist\s+du|"
    r"(?:tu\s+es|vous\s+êtes)\s+(?:maintenant|désormais|dorénavant)|à\s+partir\s+de\s+maintenant,?\s+tu\s+es|"
    r"(?:ahora|a\s+partir\s+de\s+ahora)\s+(?:eres|serás)|(?:ora|adesso|d'ora\s+in\s+poi)\s+sei|"
    r"(?:agora|a\s+partir\s+de\s+agora)\s+(?:você\s+é|voce\s+e|tu\s+és|és))"
)
_SYSTEM_PROMPT = (
    r"(?:system-?prompt|systemanweisung(?:en)?|systemnachricht|prompt\s+(?:du\s+)?système|instructions?\s+"
    r"(?:du\s+)?système|prompt\s+del\s+sistema|instrucciones\s+del\s+sistema|prompt\s+di\s+sistema|"
    r"istruzioni\s+di\s+sistema|prompt\s+do\s+sistema|instruções\s+do\s+sistema)"
)

_ROLES: tuple[_Pattern, ...] = (
    _p(
        PROMPT_INJECTION,
        "role reassignment (eu)",
        r"\b" + _NOW_YOU_ARE + r"\b[^\n.]{0,60}?" + _UNRESTRICTED,
    ),
    _p(
        PROMPT_INJECTION,
        "system prompt replacement (eu)",
        r"\b(?:neue[rns]?|aktualisierte[rns]?|nouvel(?:le)?s?|nouveaux?|nuev[oa]s?|nuov[oie]|nov[oa]s?)\s+"
        + _SYSTEM_PROMPT
        + r"|^[ \t>#*]*(?:neue\s+anweisungen|nouvelles\s+instructions|nuevas\s+instrucciones|nuove\s+istruzioni|"
        r"novas\s+instruções)\s*:",
        flags=re.MULTILINE,
    ),
    _p(
        PROMPT_INJECTION,
        "system prompt extraction (eu)",
        r"\b(?:zeige?|gib|verrate|nenne|révèle|affiche|montre|donne|muestra|revela|dime|mostra|rivela|dimmi|mostre|"
        r"revele|diga)\s+(?:mir\s+|moi\s+|me\s+|mi\s+)?(?:deinen?|ihren?|den|ton|votre|le|tu|su|el|il\s+tuo|tuo|il|"
        r"seu|o)\s+(?:vollständigen?\s+|complet\s+|completo\s+)?" + _SYSTEM_PROMPT,
    ),
)

_USER = r"(?:benutzer|nutzer|anwender|utilisateur|utilisatrice|usuario|usuaria|utente|usuário|usuario)"

_DIRECTIVES: tuple[_Pattern, ...] = (
    _p(
        AGENT_DIRECTIVE,
        "concealment from the user (eu)",
        r"\b(?:sag|sage|erzähl|erzähle|verrate)\s+(?:es\s+|das\s+)?dem\s+" + _USER + r"\s+(?:nicht|nichts)\b"
        r"|\bohne\s+dass\s+(?:der|die)\s+" + _USER + r"\b[^\n.]{0,20}?\b(?:merkt|erfährt|weiß)"
        r"|\bne\s+(?:le\s+|lui\s+|rien\s+)?(?:dis|dites|révèle|mentionne)\s+(?:rien\s+|pas\s+|jamais\s+)?(?:ça\s+|cela\s+)?"
        r"à\s+l'" + _USER + r"|\bsans\s+que\s+l'" + _USER + r"\s+(?:le\s+)?(?:sache|remarque)"
        r"|\bno\s+(?:se\s+lo\s+|le\s+)?(?:digas|diga|cuentes|menciones)\s+(?:nada\s+)?al\s+"
        + _USER
        + r"|\bsin\s+que\s+el\s+"
        + _USER
        + r"\s+(?:lo\s+)?(?:sepa|note)"
        r"|\bnon\s+(?:dire|dirlo|dirgli|rivelare|menzionare)\s+(?:niente\s+|nulla\s+)?all'"
        + _USER
        + r"|\bsenza\s+che\s+l'"
        + _USER
        + r"\s+(?:lo\s+)?(?:sappia|noti)"
        r"|\bnão\s+(?:conte|diga|informe|revele|mencione)\s+(?:nada\s+)?(?:ao|à)\s+"
        + _USER
        + r"|\bsem\s+que\s+o\s+"
        + _USER
        + r"\s+(?:saiba|perceba)",
    ),
    _p(
        AGENT_DIRECTIVE,
        "send data to a URL (eu)",
        r"\b(?:sende|schicke|schick|übermittle|lade|envoie|envoyez|transmets|envía|envia|manda|invia|inviare|"
        r"envie|enviar|transmita)\b[^\n]{0,120}?\b(?:an|à|a|para|al|alla|auf|hoch\s+auf|vers)\s+(?:https?|ftp)://",
        severity="quarantine",
    ),
    _p(
        AGENT_DIRECTIVE,
        "standing order to the agent (eu)",
        r"\b(?:antworte|antworten\s+sie)\s+(?:immer|nur|stets|ab\s+jetzt)\s+mit\b"
        r"|\b(?:von\s+nun\s+an|ab\s+jetzt|ab\s+sofort),?\s+(?:musst|sollst|wirst)\s+du\b"
        r"|\b(?:réponds|répondez)\s+(?:toujours|uniquement|seulement)\s+(?:par|avec)\b"
        r"|\b(?:à\s+partir\s+de\s+maintenant|désormais|dorénavant),?\s+tu\s+(?:dois|devras)\b"
        r"|\b(?:responde|responda)\s+(?:siempre|solo|solamente|sempre|apenas|só)\s+(?:con|com)\b"
        r"|\b(?:a\s+partir\s+de\s+ahora|de\s+ahora\s+en\s+adelante),?\s+(?:debes|tienes\s+que)\b"
        r"|\brispondi\s+(?:sempre|solo|soltanto)\s+con\b|\bd'ora\s+in\s+poi,?\s+(?:devi|dovrai)\b"
        r"|\ba\s+partir\s+de\s+agora,?\s+(?:você\s+deve|voce\s+deve|deves|tem\s+que)\b",
        severity="quarantine",
    ),
)

INJECTION_PATTERNS: tuple[_Pattern, ...] = _OVERRIDES + _ROLES
DIRECTIVE_PATTERNS: tuple[_Pattern, ...] = _DIRECTIVES

SENSITIVE_WORDS = (
    r"passwort|passwörter|kennwort|zugangsdaten|schlüssel|gespräch|verlauf|mot\s+de\s+passe|identifiants|"
    r"conversation|historique|contraseña|credenciales|conversación|historial|credenziali|conversazione|"
    r"cronologia|senha|credenciais|conversa|histórico"
)
"""What an exfiltration order names in these languages (joined into the English list in `directives`)."""

# --------------------------------------------------------------------------- credentials stated in prose

_PASSWORD_STATEMENT_RE = lazy(
    r"\b(?:(?:mein|meine|unser|unsere|das|dein|sein|ihr)\s+(?:[\w-]+\s+){0,2}?)?"
    r"(?:passwort|kennwort|zugangscode|pin-?code)\b(?:\s+(?:für|zu|vom|von|des)\s+[^\n.;:]{1,40}?)?"
    r"\s+(?:lautet|ist|war|heißt|=|:)\s+(?P<de>\S{3,128})"
    r"|\b(?:mon|notre|le|ton|son|votre)\s+(?:code\s+pin|mot\s+de\s+passe|code\s+d'accès)"
    r"(?:\s+(?:de|du|des|pour)\s+[^\n.;:]{1,40}?|\s+[\w-]{2,20})?\s+(?:est|était|=|:)\s+(?P<fr>\S{3,128})"
    r"|\b(?:mi|nuestra|la|tu|su)\s+(?:contraseña|clave)(?:\s+(?:de|del|para)\s+[^\n.;:]{1,40}?)?"
    r"\s+(?:es|era|=|:)\s+(?P<es>\S{3,128})"
    r"|\b(?:la\s+mia|la\s+nostra|la|la\s+tua)\s+password(?:\s+(?:di|del|della|per)\s+[^\n.;:]{1,40}?)?"
    r"\s+(?:è|e'|era|=|:)\s+(?P<it>\S{3,128})"
    r"|\b(?:minha|nossa|a|sua|tua)\s+senha(?:\s+(?:do|da|de|para)\s+[^\n.;:]{1,40}?)?"
    r"\s+(?:é|e|era|=|:)\s+(?P<pt>\S{3,128})",
    re.IGNORECASE,
)
_DESCRIPTIVE = frozenset(
    [
        "abgelaufen",
        "falsch",
        "richtig",
        "sicher",
        "unsicher",
        "geheim",
        "neu",
        "alt",
        "leer",
        "gesperrt",
        "geändert",
        "gespeichert",
        "stark",
        "schwach",
        "lang",
        "kurz",
        "korrekt",
        "vergessen",
        "unbekannt",
        "zu",
        "nicht",
        "noch",
        "jetzt",
        "bereits",
        "hier",
        "dort",
        "gleich",
        "anders",
        "privat",
        "expiré",
        "expirée",
        "incorrect",
        "correct",
        "sûr",
        "faible",
        "fort",
        "nouveau",
        "ancien",
        "vide",
        "bloqué",
        "changé",
        "oublié",
        "inconnu",
        "trop",
        "pas",
        "encore",
        "déjà",
        "ici",
        "privé",
        "secret",
        "long",
        "court",
        "caducada",
        "incorrecta",
        "correcta",
        "segura",
        "débil",
        "fuerte",
        "nueva",
        "vieja",
        "vacía",
        "bloqueada",
        "cambiada",
        "olvidada",
        "desconocida",
        "demasiado",
        "muy",
        "todavía",
        "aquí",
        "privada",
        "secreta",
        "larga",
        "corta",
        "scaduta",
        "sbagliata",
        "giusta",
        "sicura",
        "debole",
        "forte",
        "nuova",
        "vecchia",
        "vuota",
        "bloccata",
        "cambiata",
        "dimenticata",
        "sconosciuta",
        "troppo",
        "ancora",
        "qui",
        "privata",
        "segreta",
        "lunga",
        "corta",
        "expirou",
        "expirada",
        "errada",
        "certa",
        "fraca",
        "forte",
        "velha",
        "vazia",
        "bloqueada",
        "alterada",
        "esquecida",
        "desconhecida",
        "muito",
        "ainda",
        "aqui",
        "privada",
        "secreta",
        "longa",
        "curta",
    ]
)
_SYMBOL_RE = lazy(r"[!@#$%^&*+/=?~]")


def _credential_value(value: str) -> bool:
    """A stated value that is a credential: quoted, or with digits, symbols or mixed case, or one bare word
    that ends the sentence and is no describing word ("das Passwort ist abgelaufen")."""
    stripped = value.strip("\"'`«»“”‘’")
    quoted = stripped != value
    word = stripped.rstrip(".!?),")
    if len(word) < 3 or word.lower() in _DESCRIPTIVE:
        return False
    if quoted or any(c.isdigit() for c in word) or _SYMBOL_RE.search(word):
        return True
    tail = word[1:]
    return any(c.isupper() for c in tail) and any(c.islower() for c in tail)


def password_statement(text: str) -> bool:
    """A password, PIN or passphrase stated in prose in one of these languages ("das Passwort lautet …",
    "le mot de passe est …", "la contraseña es …", "la password è …", "a senha é …")."""
    for match in _PASSWORD_STATEMENT_RE.finditer(text):
        value = next(v for v in match.groups() if v is not None)
        if _credential_value(value):
            return True
    return False
