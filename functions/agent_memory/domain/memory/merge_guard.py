"""The merge guard (issue 27): two statements may be merged only when merging loses nothing — the same terms
(values, names, content words, counted; `slots`), the same polarity, the same order of compared items, the
same roles and tense (`roles`) and the same speaker."""

from __future__ import annotations

from dataclasses import dataclass

from .roles import same_roles, tense_differs
from .slots import meaning, negated, negations, ordered_pairs, terms, values
from .tokens import speaker


@dataclass(frozen=True)
class MergeCheck:
    allowed: bool
    reason: str


def same_statement(new: str, old: str) -> MergeCheck:
    """Whether merging `new` into `old` loses nothing: the same terms (values, names, content words, counted),
    the same polarity and the same order of compared items. The speaker of a transcript line must match too."""
    new_speaker, _ = speaker(new)
    old_speaker, _ = speaker(old)
    if (new_speaker or old_speaker) and new_speaker != old_speaker:
        return MergeCheck(False, "said by different speakers")
    if negations(new) % 2 != negations(old) % 2:
        return MergeCheck(False, "opposite polarity")
    if tense_differs(new, old):
        return MergeCheck(False, "another tense (has / had)")
    new_values, old_values = values(new), values(old)
    if new_values != old_values:
        differing = sorted((new_values - old_values) + (old_values - new_values))
        return MergeCheck(False, f"different values or names ({', '.join(differing[:4])})")
    if ordered_pairs(new) != ordered_pairs(old) and (ordered_pairs(new) or ordered_pairs(old)):
        return MergeCheck(False, "compared items in another order")
    if negated(new) != negated(old):
        return MergeCheck(False, "a different thing negated")
    names = frozenset(t.key for t in (*terms(new), *terms(old)) if t.kind == "entity")
    if not same_roles(new, old, names):
        return MergeCheck(False, "names in other roles (who does what to whom)")
    new_meaning, old_meaning = meaning(new), meaning(old)
    if set(new_meaning) != set(old_meaning):
        differing = sorted(set(new_meaning) ^ set(old_meaning))
        return MergeCheck(False, f"different words ({', '.join(differing[:4])})")
    return MergeCheck(True, "same values, names, words and polarity")
