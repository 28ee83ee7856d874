"""Credentials: provider key formats, `key=value` assignments, and the detectors of `domain/credentials.py`
(prose passwords, payment cards, credentials in URLs, detect-secrets)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from .. import credentials
from ..patterns import LazyPattern, lazy
from . import languages
from .findings import SECRET, SECRET_PATTERN_DETECTOR, SafetyFinding


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
    r"\b(?P<key>password|passwd|pwd|pw|passphrase|passwort|kennwort|mot[_-]?de[_-]?passe|mdp|contrase[ñn]a|senha|secret|secret[_-]?key|client[_-]?secret|api[_-]?key|apikey|"
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
    if languages.password_statement(text):
        yield SafetyFinding(
            SECRET,
            "password stated in prose ('das Passwort lautet …')",
            "block",
            credentials.PASSWORD_STATEMENT,
        )
    # Prose passwords, payment cards and detect-secrets' maintained plugins (domain/credentials.py).
    for detector, label in credentials.scan(text):
        yield SafetyFinding(SECRET, label, "block", detector)
