"""Encoded payloads: base64 runs that decode to text are scanned again, and what they hide blocks."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterator

from ..patterns import lazy
from .findings import BASE64_DETECTOR, SafetyFinding

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


Rescan = Callable[[str, int], list[SafetyFinding]]
"""The whole scan of a decoded text at a given depth (the package's `_scan_text` on its visible form)."""


def _scan_encoded(text: str, depth: int, rescan: Rescan) -> Iterator[SafetyFinding]:
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
        for finding in rescan(decoded, depth + 1):
            yield SafetyFinding(finding.rule, f"in base64: {finding.detail}", "block", BASE64_DETECTOR)
