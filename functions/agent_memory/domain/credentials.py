"""Credential and payment-card detectors of the safety scan (`domain/safety.py` reports what they find as
rule `secret`, which is never stored, not even in quarantine).

Three detectors, each a stable name in `SafetyFinding.detector` (the bench reports precision and recall per
detector):

- `detect-secrets`: Yelp's maintained plugins (AWS, GitHub, GitLab, Slack, Stripe, OpenAI, npm, PyPI, JWT,
  private keys, credentials in a URL, Azure, IBM, Twilio, … and quoted high-entropy base64 strings) run line by
  line through their Python API, with the library's own false-positive filters. Imported on first use (about
  0.3-0.7 s once per process on the 2-core dev VM; `bench/safety_scan.py` measures it), so a Lambda cold
  start does not pay for it.
  Not used: `KeywordDetector` (4 ms per 2 kB line, and on free text it only fires on quoted values, which the
  scan's own assignment rule already covers), `IPPublicDetector` (an address is not a credential) and
  `HexHighEntropyString` (fires on quoted git SHAs and digests, which notes legitimately hold).
- `url credentials`: `scheme://user:password@host` (also an empty user, `redis://:pw@host`, and passwords
  with the `!$&'()*+,;=` characters detect-secrets' `BasicAuthDetector` skips); `${VAR}`, `<password>`,
  `{{…}}` and `***` placeholders are not credentials.
- `password statement`: "my password is swordfish", "the wifi password for the office is Tr0ub4dor",
  "我的密码是…": a credential stated in prose, which no assignment pattern sees.
- `payment card`: 13-19 digit card numbers (spaces or dashes allowed) that pass the Luhn check and start
  with a card network's prefix; an order or tracking number that fails Luhn is not one.

No detector ever echoes the secret value.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

from .patterns import lazy

DETECT_SECRETS = "detect-secrets"
URL_CREDENTIALS = "url credentials"
PASSWORD_STATEMENT = "password statement"
PAYMENT_CARD = "payment card"

# --------------------------------------------------------------------------- detect-secrets

_PLUGIN_CLASSES = (
    ("aws", "AWSKeyDetector"),
    ("artifactory", "ArtifactoryDetector"),
    ("azure_storage_key", "AzureStorageKeyDetector"),
    ("basic_auth", "BasicAuthDetector"),
    ("cloudant", "CloudantDetector"),
    ("discord", "DiscordBotTokenDetector"),
    ("github_token", "GitHubTokenDetector"),
    ("gitlab_token", "GitLabTokenDetector"),
    ("high_entropy_strings", "Base64HighEntropyString"),
    ("ibm_cloud_iam", "IbmCloudIamDetector"),
    ("ibm_cos_hmac", "IbmCosHmacDetector"),
    ("jwt", "JwtTokenDetector"),
    ("mailchimp", "MailchimpDetector"),
    ("npm", "NpmDetector"),
    ("openai", "OpenAIDetector"),
    ("private_key", "PrivateKeyDetector"),
    ("pypi_token", "PypiTokenDetector"),
    ("sendgrid", "SendGridDetector"),
    ("slack", "SlackDetector"),
    ("softlayer", "SoftlayerDetector"),
    ("square_oauth", "SquareOAuthDetector"),
    ("stripe", "StripeDetector"),
    ("telegram_token", "TelegramBotTokenDetector"),
    ("twilio", "TwilioKeyDetector"),
)
"""(module under detect_secrets.plugins, class): every plugin of detect-secrets 1.5 but the three the module
docstring names."""

_MAX_LINE_CHARS = 4_000
"""Lines are cut to this many characters before the plugins see them (their regexes are linear, but a 100 kB
line would cost ~50 ms); secrets sit in ordinary lines."""

_lock = threading.Lock()
_loaded: tuple[list[Any], tuple[Any, ...]] | None = None


def _detect_secrets() -> tuple[list[Any], tuple[Any, ...]]:
    """The plugin instances and the heuristic filters, built once per process."""
    global _loaded
    if _loaded is None:
        with _lock:
            if _loaded is None:
                import importlib

                from detect_secrets.filters import heuristic

                plugins = [
                    getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)()
                    for module, name in _PLUGIN_CLASSES
                ]
                _loaded = (plugins, (heuristic,))
    return _loaded


def _filtered(secret: str, line: str, plugin: Any, heuristic: Any) -> bool:
    """detect-secrets' own false-positive filters (the ones that apply to a line of text, not to a file)."""
    return bool(
        heuristic.is_sequential_string(secret)
        or heuristic.is_potential_uuid(secret)
        or heuristic.is_likely_id_string(secret, line, plugin)
        or heuristic.is_templated_secret(secret)
        or heuristic.is_prefixed_with_dollar_sign(secret)
        or heuristic.is_indirect_reference(line)
        or heuristic.is_not_alphanumeric_string(secret)
    )


def detect_secrets_types(text: str) -> list[str]:
    """The detect-secrets secret types found in `text` (e.g. "Basic Auth Credentials"), in plugin order,
    each once. Verification (network calls to the providers) is never enabled."""
    plugins, (heuristic,) = _detect_secrets()
    found: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()[:_MAX_LINE_CHARS]
        if len(line) < 8:
            continue
        for plugin in plugins:
            if plugin.secret_type in found:
                continue
            for secret in plugin.analyze_line(filename="memory.md", line=line, line_number=number):
                value = secret.secret_value or ""
                if value and not _filtered(value, line, plugin, heuristic):
                    found.append(plugin.secret_type)
                    break
    return found


# --------------------------------------------------------------------------- credentials in a URL

_URL_CREDENTIALS_RE = lazy(
    r"\b[A-Za-z][A-Za-z0-9+.-]{1,30}://(?P<user>[^\s:/?#@\[\]]{0,256}):(?P<password>[^\s/?#@]{1,256})@"
)
_TEMPLATED_RE = lazy(
    r"^(?:\$\{[^}]*\}|\$[A-Za-z_]\w*|\{\{.*\}\}|\{[^}]*\}|<[^>]*>|%[sd]|\*+|x{3,}|\.{3,}|…)$", re.I
)


def url_credentials(text: str) -> bool:
    for match in _URL_CREDENTIALS_RE.finditer(text):
        if not _TEMPLATED_RE.match(match.group("password")):
            return True
    return False


# --------------------------------------------------------------------------- passwords stated in prose

_POSSESSIVE = r"(?:my|our|the|his|her|their|your|its)\s+(?:[\w-]+\s+){0,2}?"
_PASSWORD_NOUN = r"(?:password|passcode|passphrase|passwd|pin\s+code)"
_PASSWORD_STATEMENT_RE = lazy(
    r"\b(?:(?:" + _POSSESSIVE + r")?" + _PASSWORD_NOUN + r"|" + _POSSESSIVE + r"(?P<pin>pin))\b"
    r"(?:\s+(?:for|to|of|on|at)\s+[^\n.;:]{1,40}?)?"
    r"\s+(?:is|was|=|:)\s+(?:now\s+|still\s+|just\s+|simply\s+)?"
    r"(?P<quote>[\"'`“‘]?)(?P<value>[^\s\"'`“”‘’,;]{3,128})(?P<after>[\"'`”’]?[^\S\n]*(?:[\w(]+)?)"
    r"|\b(?:changed|set|reset|updated|changing|setting)\s+(?:my|our|the|his|her|their|your)\s+(?:[\w-]+\s+)?"
    + _PASSWORD_NOUN
    + r"\s+to\s+(?P<quote2>[\"'`“‘]?)(?P<value2>[^\s\"'`“”‘’,;]{3,128})"
    r"|(?:密码|口令|密碼)(?:是|为|為)\s*(?P<value3>[^\s，。,;；]{3,64})",
    re.IGNORECASE,
)
# Words that describe a password instead of being one ("my password is expired").
_DESCRIPTIVE_WORDS = """
a an the in at on of to for by with from via not no too very so still now just also only being been
same different changed change set reset expired expiring stored saved kept managed handled required
needed correct incorrect wrong right invalid valid weak strong long short secure insecure safe
unsafe hashed encrypted rotated missing unknown empty blank locked unlocked compromised leaked case
sensitive shared private secret confidential mine yours ours theirs here there below above attached
elsewhere somewhere something nothing anything everything whatever unchanged ok okay fine good bad
great forgotten lost gone new old default temporary temp generated random updated synced
"""
_NOT_A_PASSWORD = frozenset(_DESCRIPTIVE_WORDS.split())
_PLACEHOLDER_VALUE_RE = lazy(
    r"^(?:\$\{?[A-Za-z_]\w*\}?|\{\{.*\}\}|<[^>]*>|\*+|x{3,}|\.{3,}|…|\[[^\]]*\]|"
    r"(?:none|null|nil|redacted|hidden|masked|changeme|placeholder|example|tbd|todo|n/a|undefined))$",
    re.IGNORECASE,
)
_SYMBOL_RE = lazy(r"[!@#$%^&*+/=?~]")


def _has_entropy(value: str) -> bool:
    if any(c.isdigit() for c in value) or _SYMBOL_RE.search(value):
        return True
    tail = value[1:]
    return any(c.isupper() for c in tail) and any(c.islower() for c in tail)


def _is_password_value(value: str, quoted: bool, ends_clause: bool) -> bool:
    value = value.rstrip(".!?)")
    if len(value) < 3 or _PLACEHOLDER_VALUE_RE.match(value):
        return False
    word = value.lower()
    if word in _NOT_A_PASSWORD:
        return False
    if quoted or _has_entropy(value):
        return True
    if word.isalpha() and (word.endswith(("ed", "ing", "ly", "able", "ible")) or not word.isascii()):
        return False
    # A bare lowercase word counts only when it ends the statement: "my password is swordfish." (but not
    # "the password is something you choose").
    return ends_clause


def password_statement(text: str) -> bool:
    for match in _PASSWORD_STATEMENT_RE.finditer(text):
        if match.group("value") is not None:
            if match.group("pin") is not None and not re.fullmatch(r"\d{4,8}[.!]?", match.group("value")):
                continue  # a PIN is 4-8 digits; "the pin is 3.5mm" is hardware
            after = match.group("after") or ""
            ends = not after.strip(" \t\"'`”’") or after.strip(" \t\"'`”’").lower() in ("and", "but", "so")
            if _is_password_value(match.group("value"), bool(match.group("quote")), ends):
                return True
        elif match.group("value2") is not None:
            if _is_password_value(match.group("value2"), bool(match.group("quote2")), False):
                return True
        elif match.group("value3") is not None and _has_entropy(match.group("value3")):
            return True
    return False


# --------------------------------------------------------------------------- payment cards

_CARD_RE = lazy(r"(?<![\w+.-])(?:\d[ -]?){12,18}\d(?![\w-]|\.\d)")
_NON_CARD_CONTEXT_RE = lazy(
    r"\b(?:order|tracking|invoice|ticket|ref(?:erence)?|account\s+id|id|isbn|imei|phone|tel|fax|serial|"
    r"build|version|sku|upc|ean|#)\W{0,3}(?:n(?:o|umber)\.?|#)?\W{0,3}$",
    re.IGNORECASE,
)
_CARD_CONTEXT_RE = lazy(
    r"card|visa|master\s*card|amex|american\s+express|discover|credit|debit|\bcc\b|\bpan\b", re.IGNORECASE
)


def _luhn(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if position % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _card_network(digits: str) -> bool:
    """A length and issuer prefix some card network uses (Visa, Mastercard, Amex, Discover, JCB, Diners,
    UnionPay, Maestro)."""
    n = len(digits)
    two, four = int(digits[:2]), int(digits[:4])
    return (
        (digits[0] == "4" and n in (13, 16, 19))
        or (51 <= two <= 55 and n == 16)
        or (2221 <= four <= 2720 and n == 16)
        or (two in (34, 37) and n == 15)
        or (
            (digits.startswith("6011") or digits.startswith("65") or 644 <= int(digits[:3]) <= 649)
            and n >= 16
        )
        or (3528 <= four <= 3589 and n >= 16)
        or ((300 <= int(digits[:3]) <= 305 or two in (36, 38, 39)) and n >= 14)
        or (two == 62 and n >= 16)
        or ((two == 50 or 56 <= two <= 69) and n >= 12)
    )


def _grouped_like_a_card(raw: str) -> bool:
    """Separators, when present, split the number into the groups printed on cards (4-4-4-4, 4-6-5, …)."""
    groups = [g for g in raw.replace("-", " ").split(" ") if g]
    if len(groups) == 1:
        return True
    return all(len(g) in (4, 5, 6) for g in groups[:-1]) and 1 <= len(groups[-1]) <= 7


def payment_card(text: str) -> bool:
    for match in _CARD_RE.finditer(text):
        raw = match.group()
        digits = raw.replace(" ", "").replace("-", "")
        if not 13 <= len(digits) <= 19 or len(set(digits)) < 2:
            continue
        if not (_grouped_like_a_card(raw) and _card_network(digits) and _luhn(digits)):
            continue
        before = text[max(0, match.start() - 40) : match.start()]
        if _NON_CARD_CONTEXT_RE.search(before) and not _CARD_CONTEXT_RE.search(before):
            continue
        return True
    return False


def scan(text: str) -> Iterator[tuple[str, str]]:
    """(detector, label) for every credential or card found; labels never contain the value."""
    if url_credentials(text):
        yield URL_CREDENTIALS, "credentials in a URL (scheme://user:password@host)"
    if password_statement(text):
        yield PASSWORD_STATEMENT, "password stated in prose ('my password is …')"
    if payment_card(text):
        yield PAYMENT_CARD, "payment card number (Luhn-valid, a card network's prefix)"
    for secret_type in detect_secrets_types(text):
        yield DETECT_SECRETS, f"{secret_type} (detect-secrets)"
