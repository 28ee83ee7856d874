"""Versioning: export and bundle import, named snapshots, diff, restore, and references (issue 14)."""
