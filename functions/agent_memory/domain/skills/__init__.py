"""Skills: agent-written procedures (`skills/<name>/SKILL.md`) with provenance, versions and usage signals, and
the curator that governs the agent-written ones (active → stale → archived, never deleted)."""
