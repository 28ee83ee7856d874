"""Erasure: the one controlled exception to "archive, never delete" (issue 18). Plan, execute, verify a purge
of a memory (with its lineage), a namespace, a subject or a whole tenant in every store, and keep a tombstone
(who, when, why, content hashes; never the content)."""
