"""Names the dreaming stages share: who they act as, and the metadata mark of a promoted record."""

ACTOR = "dreaming"
"""The actor of every write a sweep makes (change log, sources)."""
PROMOTED_MARK = "dreaming_promoted_on"
"""Metadata key of a record a sweep promoted (its value: the sweep day), so a forced re-run skips it."""
