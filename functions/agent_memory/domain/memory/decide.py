"""The write discipline's decision for one new memory among its neighbours (issue 27). Pure: no ports.

Order of precedence, so that nothing a user gave is destroyed:

1. **Update** — a current neighbour states the same subject and attribute with another value (`relation`):
   the new memory supersedes every such neighbour (one atomic commit), or, when the new statement is older in
   the world than all of them (`valid_from` earlier: an old note imported late), it is stored as history,
   already superseded by the newest. Equal `valid_from` on both sides is the one irreconcilable case: both
   are held for review. An update told in another wording of one relation ("cycles to work" → "commutes by
   car now") is read with both statements in one wording (`relation_frames.one_wording`).
2. **Merge** — a neighbour says the same thing: a vector neighbour, the same values, names, polarity and
   order of compared items, and the same words up to word families and frame words (`paraphrase.same_meaning`),
   with no update between them (a change cue or another verb between two statements the guard finds the
   same — "moved to Toronto" / "relocated to Toronto", "runs nightly at 6 am" / "starts nightly at 6 am" —
   is no update). The newer wording and both sides' provenance stay
   reachable (`write_ops.merge`).
3. **Link** — weaker evidence of an update (`possible_update`): both stay current, linked newest first.
4. **Add** — anything else, compatible facts included: nothing existing is touched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from ..records import MemoryRecord, MemoryType, Status
from . import copula, cues, possession, relation_frames
from .opposites import opposite_word
from .paraphrase import same_meaning
from .policy import SimilarityProfile
from .ports import Lexicon
from .relation import Relation, rationale_only, relate

Action = Literal["add", "merge", "supersede", "outdated", "conflict", "link", "archive"]


@dataclass(frozen=True)
class Plan:
    action: Action
    reason: str
    targets: list[MemoryRecord] = field(default_factory=list)


def _current(record: MemoryRecord) -> bool:
    return record.status in (Status.ACTIVE, Status.PENDING) and not record.superseded_by


def decide(
    content: str,
    valid_from: datetime,
    memory_type: MemoryType,
    neighbours: Sequence[tuple[MemoryRecord, float]],
    thresholds: SimilarityProfile,
    *,
    dated: bool = False,
    lexicon: Lexicon | None = None,
) -> Plan:
    """What to do with a new memory of `content`, given its neighbours (record, embedding similarity) sorted
    by similarity, most similar first. `dated`: the caller gave `valid_from` explicitly. `lexicon`: what words
    mean, for the merge guard (`paraphrase.same_meaning`); without one, only its own tables fold words."""
    if memory_type is MemoryType.EPISODE:
        return Plan("add", "new memory (an event: only an exact repeat is merged)")
    relations = [
        (record, similarity, _relation(content, record.content, lexicon)) for record, similarity in neighbours
    ]
    updated = [
        (r, rel)
        for r, _, rel in relations
        if rel.kind == "update" and _current(r) and not same_meaning(content, r.content, lexicon).allowed
    ]
    updated += [
        found
        for found in _returns(content, relations, lexicon)
        if found[0].id not in {r.id for r, _ in updated}
    ]
    if updated:
        # An earlier copy of the new value ("A" in A → B → A) retires with B: one value stays current.
        same = [
            (r, rel)
            for r, _, rel in relations
            if r.status is Status.ACTIVE
            and r.id not in {u.id for u, _ in updated}
            and (rel.kind == "same" or same_meaning(content, r.content, lexicon).allowed)
        ]
        return _update(valid_from, updated + same, dated)
    for record, similarity, rel in relations:
        if _same_kind(record.type, memory_type) and (
            check := _mergeable(record, similarity, rel, content, thresholds, lexicon)
        ):
            return Plan("merge", f"same statement (similarity {similarity:.2f}; {check})", [record])
    linked = [
        (r, rel) for r, _, rel in relations if rel.kind == "possible_update" and r.status is Status.ACTIVE
    ]
    if linked:
        record, rel = linked[0]
        return Plan("link", f"possibly supersedes {record.id}: {rel.reason}", [record])
    return Plan("add", "new memory")


def _relation(content: str, existing: str, lexicon: Lexicon | None) -> Relation:
    """`relation.relate`, and where it sees no update, an opposite word the lexicon knows ("fast" → "slow")."""
    rel = relate(content, existing)
    if rationale_only(content, existing):
        return rel  # a rule and its rationale: no opposite word nor other wording ties them
    if rel.kind in ("compatible", "possible_update"):
        found = opposite_word(content, existing, lexicon) or _framed_update(content, existing) or rel
        changed = found.kind in ("update", "possible_update")
        wordings = relation_frames.one_wording(content, existing) if changed else None
        return possession.one_holder(content, existing, found, wordings)  # nested holders: both hold
    return rel


def _framed_update(content: str, existing: str) -> Relation | None:
    """An update told in two wordings of one relation (`relation_frames`: "cycles to work" → "commutes by car
    now"): `relate` on both statements in one wording, kept only when it finds an update."""
    rewritten = relation_frames.one_wording(content, existing)
    if rewritten is None:
        return None
    rel = relate(*rewritten)
    return Relation("update", f"one relation in two wordings; {rel.reason}") if rel.kind == "update" else None


def _returns(
    content: str, relations: list[tuple[MemoryRecord, float, Relation]], lexicon: Lexicon | None
) -> list[tuple[MemoryRecord, Relation]]:
    """A return to an earlier value (A → B → A): the new statement says what a superseded neighbour said, so
    the current record at the end of that neighbour's chain of successors (a neighbour too) is updated."""
    by_id = {record.id: record for record, _, _ in relations}
    found: list[tuple[MemoryRecord, Relation]] = []
    for record, _, rel in relations:
        if not record.superseded_by:
            continue
        if rel.kind != "same" and not _says_again(content, record.content, lexicon):
            continue
        successor, seen = by_id.get(record.superseded_by), {record.id}
        while successor is not None and successor.superseded_by and successor.id not in seen:
            seen.add(successor.id)
            successor = by_id.get(successor.superseded_by)
        if (
            successor is not None
            and _current(successor)
            and successor.id not in {f.id for f, _ in found}
            and not same_meaning(content, successor.content, lexicon).allowed
        ):
            reason = f"back to an earlier value: '{record.content[:60]}' (superseded by {successor.id})"
            found.append((successor, Relation("update", reason)))
    return found


def _says_again(content: str, earlier: str, lexicon: Lexicon | None) -> bool:
    """Whether `content` says what `earlier` said, its words of return aside ("Go back to addressing the user
    as Dr. Lindqvist" / "Address the user as Dr. Lindqvist")."""
    if same_meaning(content, earlier, lexicon).allowed:
        return True
    plain = " ".join(cues.RETURN_RE.sub(" ", content).split())
    return plain != content and bool(plain) and same_meaning(plain, earlier, lexicon).allowed


def _update(valid_from: datetime, updated: list[tuple[MemoryRecord, Relation]], dated: bool) -> Plan:
    targets = [record for record, _ in updated]
    reason = updated[0][1].reason
    if all(valid_from < record.valid_from for record in targets):
        newest = max(targets, key=lambda r: (r.valid_from, r.id))
        return Plan(
            "outdated",
            f"an older value: {newest.id} holds a newer one (valid from {newest.valid_from.date()}): {reason}",
            [newest],
        )
    same_moment = [record for record in targets if record.valid_from == valid_from]
    if dated and same_moment and len(same_moment) == len(targets):
        return Plan("conflict", f"two values claimed for the same moment: {reason}", same_moment[:1])
    return Plan("supersede", reason, [record for record in targets if record.valid_from <= valid_from])


_STATEMENTS = (MemoryType.USER_PREFERENCE, MemoryType.DOMAIN_KNOWLEDGE, MemoryType.PROJECT_STATE)


def _same_kind(existing: MemoryType, new: MemoryType) -> bool:
    """Whether a merge may join the two types: the same type, or two statements of a fact or preference that
    the classifier read differently from other words ("Prefers dark mode" / "Wants every app in dark mode").
    Tasks, corrections, temporary notes and events keep their own records."""
    return existing == new or (existing in _STATEMENTS and new in _STATEMENTS)


def _mergeable(
    record: MemoryRecord,
    similarity: float,
    rel: Relation,
    content: str,
    thresholds: SimilarityProfile,
    lexicon: Lexicon | None,
) -> str | None:
    """Why merging `content` into `record` loses nothing, or None when it would (or cannot) merge. The guard
    is the statements' values, names, polarity and words (`paraphrase.same_meaning`); the embedder only has to
    hold them as neighbours (`SimilarityProfile.merge`, by default the relation threshold): a small embedder
    scores updates as high as paraphrases, so its similarity cannot tell them apart."""
    if record.superseded_by or record.status not in (Status.ACTIVE, Status.PENDING, Status.ARCHIVED):
        return None
    floor = thresholds.merge if thresholds.merge is not None else thresholds.contradiction
    if record.type is MemoryType.EPISODE or similarity < floor:
        return None
    if rel.kind == "same":
        return rel.reason
    if copula.folds_a_value(content, record.content) is not None:
        return None  # one role, two values: words a lexicon calls one thing ("main" / "trunk") stay apart
    check = same_meaning(content, record.content, lexicon)
    return check.reason if check.allowed else None  # an "update" the guard finds the same is none (`decide`)
