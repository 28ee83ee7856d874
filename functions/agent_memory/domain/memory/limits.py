"""The write limits of the memory service, checked before anything is embedded or stored: namespace shape,
content length, metadata size, score and half-life ranges. Each refusal says what the limit is."""

from __future__ import annotations

from ..errors import TooLarge, ValidationFailed
from ..records import Metadata, is_valid_namespace, metadata_size
from .policy import MemoryPolicy


def check_namespace(namespace: str) -> None:
    if not is_valid_namespace(namespace):
        raise ValidationFailed(
            f"invalid namespace {namespace!r}: use a path like /projects/billing "
            "(letters, digits, '.', '_' and '-'; up to 8 segments)"
        )


def check_metadata(metadata: Metadata, policy: MemoryPolicy) -> None:
    if len(metadata) > policy.max_metadata_keys:
        raise TooLarge(
            f"metadata has {len(metadata)} keys; the limit is {policy.max_metadata_keys}",
            limit=policy.max_metadata_keys,
        )
    size = metadata_size(metadata)
    if size > policy.max_metadata_bytes:
        raise TooLarge(
            f"metadata is {size:,} bytes as JSON; the limit is {policy.max_metadata_bytes:,}",
            limit=policy.max_metadata_bytes,
            got=size,
        )


def check_memory(
    policy: MemoryPolicy,
    *,
    namespace: str,
    content: str,
    metadata: Metadata,
    score: float | None,
    half_life_hours: float | None,
) -> None:
    """Everything a new memory must satisfy before the write discipline looks at it."""
    check_namespace(namespace)
    content = content.strip()
    if not content:
        raise ValidationFailed("content must not be empty")
    if len(content) > policy.max_content_chars:
        raise TooLarge(
            f"content is {len(content):,} characters; the limit is {policy.max_content_chars:,}. "
            "Store a summary, or split it into several memories.",
            limit=policy.max_content_chars,
            got=len(content),
        )
    check_metadata(metadata, policy)
    if score is not None and not 0.0 <= score <= 1.0:
        raise ValidationFailed(f"score must be between 0 and 1; got {score}")
    if half_life_hours is not None and not 0 < half_life_hours < float("inf"):  # NaN too
        raise ValidationFailed("half_life_hours must be a positive finite number")
