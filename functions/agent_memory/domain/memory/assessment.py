"""What the opposition rules answer for a pair of statements (`contradiction.assess`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["none", "supersedes", "uncertain"]


@dataclass(frozen=True)
class Assessment:
    kind: Kind
    reason: str
    basis: str = field(default="", compare=False)
    """Which rule decided, for the write path's relation layer (`relation.py`): replacement, negation,
    partial_negation, polarity_other_topic, polarity_other_subject, implicit_negative, value, value_detail,
    switch, switch_no_use, subjects_differ, none."""
