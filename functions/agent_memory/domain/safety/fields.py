"""One decision for every text field of a write.

A write carries more text than its `content`: a memory's `context`, its `metadata` values and `source.ref`, the
`reason` of a correction or an archive, a snapshot's `note`, a skill's description. Each of them comes back in
recall, exports, the change log or a session's prompt, so each is a way in for a secret or an injection unless
it is scanned like the content. `scan_fields` scans them all and names the field that tripped; `decide` turns
that into the write's decision, the same for every route:

- `reject`: a blocking finding in any field (a credential, an instruction override, hidden characters): the
  write is refused (422 `unsafe_content`), nothing is stored;
- `quarantine`: only quarantine findings ("always respond with …"): a memory is kept for review but never
  recalled; a write that has no quarantine state (a memory-file entry, a reason, a note) is refused instead
  (`require_clean`), because what is quarantined as a memory must not reach a snapshot by another door;
- `accept`: nothing found.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

from ..errors import UnsafeContent
from .findings import SafetyFinding

Decision = Literal["accept", "quarantine", "reject"]
Fields = Mapping[str, object]
"""Field name → value: a string, or a mapping / list of them (metadata) walked with dotted names; numbers,
booleans and None carry no text and are skipped."""

Scanner = Callable[[str], list[SafetyFinding]]


@dataclass(frozen=True)
class FieldFinding:
    field: str
    """Where the text was: `content`, `context`, `metadata.note`, `source.ref`, `reason`, `items[3].content`."""
    finding: SafetyFinding


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    findings: tuple[FieldFinding, ...] = ()

    @property
    def first(self) -> FieldFinding | None:
        """The finding that decided: the first blocking one, else the first quarantine one."""
        blocking = [f for f in self.findings if f.finding.severity == "block"]
        ordered = blocking or list(self.findings)
        return ordered[0] if ordered else None

    def message(self, what: str) -> str:
        first = self.first
        if first is None:
            return ""
        return (
            f"{what} refused by the safety scan: field '{first.field}' (rule '{first.finding.rule}'): "
            f"{first.finding.detail}. Remove it from that field, or rephrase it as a plain note"
        )


def memory_write_fields(
    *,
    content: str,
    context: str | None = None,
    metadata: Mapping[str, object] | None = None,
    source_ref: str | None = None,
    reason: str | None = None,
    note: str | None = None,
) -> dict[str, object]:
    """The text fields of a memory write, named as the API names them, for `decide` / `require_clean`:
    remember / remember_batch (content, context, metadata, source.ref), correct (content, reason), archive /
    restore / resolve (reason), PATCH (metadata)."""
    fields: dict[str, object] = {"content": content}
    for name, value in (
        ("context", context),
        ("metadata", metadata),
        ("source.ref", source_ref),
        ("reason", reason),
        ("note", note),
    ):
        if value:
            fields[name] = value
    return fields


def _texts(name: str, value: object) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        if value:
            yield name, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            # a key is text that comes back too ({"ignore previous instructions": 1})
            yield from _texts(f"{name}.keys", str(key))
            yield from _texts(f"{name}.{key}", item)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _texts(f"{name}[{index}]", item)


def scan_fields(fields: Fields, scan: Scanner | None = None) -> list[FieldFinding]:
    """Every finding in every text of `fields`, in field order, each naming its field."""
    if scan is None:
        from . import scan as default_scan

        scan = default_scan
    found: list[FieldFinding] = []
    for name, value in fields.items():
        for where, text in _texts(name, value):
            found.extend(FieldFinding(where, finding) for finding in scan(text))
    return found


def decide(fields: Fields, scan: Scanner | None = None) -> Verdict:
    """The write's decision over all of its text fields (module docstring)."""
    findings = tuple(scan_fields(fields, scan))
    if any(f.finding.severity == "block" for f in findings):
        return Verdict("reject", findings)
    if findings:
        return Verdict("quarantine", findings)
    return Verdict("accept")


def require_clean(fields: Fields, what: str, scan: Scanner | None = None) -> None:
    """Raise `UnsafeContent` (422) if any text field has any finding, quarantine ones included: for writes that
    have no quarantine state (memory-file entries, daily-log lines, reasons, notes, PATCH metadata)."""
    verdict = decide(fields, scan)
    first = verdict.first
    if first is not None:
        raise UnsafeContent(verdict.message(what), rule=first.finding.rule, field=first.field)
