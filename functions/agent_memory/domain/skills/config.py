"""Every number of skills and the curator, with the design's defaults (DESIGN §2 "Curator": stale after 30 days
unused, archived after 90 more). Settings read `AGENT_MEMORY_SKILLS_CONFIG` / `AGENT_MEMORY_CURATOR_CONFIG`."""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field

from ..model import Model


class SkillsConfig(Model):
    model_config = ConfigDict(frozen=True, extra="forbid")

    max_body_chars: Annotated[int, Field(ge=100, le=200_000)] = 20_000
    """Cap on a SKILL.md body, in characters (front matter not counted)."""
    max_description_chars: Annotated[int, Field(ge=20, le=1024)] = 300
    """A description is one line; the snapshot lists it (cut further to the session's own limit)."""
    recent_outcomes_kept: Annotated[int, Field(ge=10, le=1000)] = 100
    """`signals.json` keeps counters plus the last N outcomes (with notes): bounded whatever the traffic."""
    max_note_chars: Annotated[int, Field(ge=0, le=2000)] = 500
    max_file_chars: Annotated[int, Field(ge=1000, le=1_000_000)] = 100_000
    """Cap on one file kept beside a SKILL.md (`references/…`, `scripts/…`), in characters."""
    max_files: Annotated[int, Field(ge=1, le=1000)] = 100
    """Files one skill keeps beside its SKILL.md."""


class CuratorConfig(Model):
    model_config = ConfigDict(frozen=True, extra="forbid")

    stale_after_days: Annotated[float, Field(gt=0, le=3650)] = 30
    """An active agent skill with no view or use for this many days becomes stale."""
    archive_after_days: Annotated[float, Field(gt=0, le=3650)] = 90
    """A stale agent skill still stale (not used again) this many days after it went stale is archived."""
    min_outcomes: Annotated[int, Field(ge=1, le=1000)] = 3
    """Bad outcomes "dominate" only with at least this many outcomes reported since the last status change …"""
    bad_share: Annotated[float, Field(gt=0, le=1)] = 0.5
    """… and when (failed + misled) / all outcomes is at least this share."""
    lock_ttl_seconds: Annotated[int, Field(ge=30, le=86_400)] = 900
    io_concurrency: Annotated[int, Field(ge=1, le=64)] = 8
    """Skills read, and status changes written, side by side (file-system latency, not CPU, is the limit)."""
    review_max_skills: Annotated[int, Field(ge=0, le=500)] = 50
    """Skills sent to the optional LLM review per namespace (0: no review even with a model)."""
    review_body_chars: Annotated[int, Field(ge=100, le=20_000)] = 1500
