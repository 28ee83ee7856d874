"""Behaviour suites that every adapter of a port must pass (local SQLite today, AWS later)."""
