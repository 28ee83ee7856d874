"""Import state (domain/interop, issue 14) as the purge sees it. An import keeps, besides counts, decisions and
ids, a few fields that hold source content: each item's memory-file entry (`ItemOutcome.file_entry`), the
recall probes' paraphrased queries (`RecallProbe.query`), the decay check's query (the expired item's own
text, `DecayCheck.query`), the rejection reasons and the run's error. A memory, namespace or subject purge
redacts those fields in place where they belong to a purged record or namespace or name the purge, and keeps
everything else (refs, record ids, decisions, counts), so the report still adds up and a rollback still undoes
what is left (a purged record is simply not found by it). The report lists the plans that redacted it
(`ImportReport.purges`). A namespace purge deletes every import into the namespace (its report holds the
source's label and paths) and forgets the namespace's imported source refs; a tenant purge deletes every
import of the tenant (report, outcomes, refs)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..interop.model import ImportReport, ItemOutcome
from .model import REDACTED, EraseScope, StoreFinding, redact_texts


class ImportRows(Protocol):
    """The `ImportStore` of domain/interop, with what a purge needs beyond it: listing a tenant's imports,
    rewriting outcomes in place, deleting an import, and the imported-ref rows of a namespace."""

    def import_ids(self, tenant: str) -> list[str]: ...

    def get(self, tenant: str, import_id: str) -> ImportReport | None: ...

    def rewrite(self, report: ImportReport) -> None:
        """Store the redacted report in place of the stored one (leaving no copy of the old text behind)."""
        ...

    def outcomes(self, tenant: str, import_id: str) -> list[ItemOutcome]: ...

    def replace_outcomes(self, tenant: str, import_id: str, outcomes: Sequence[ItemOutcome]) -> None:
        """Store these outcomes in place of the import's outcomes with the same `ref`."""
        ...

    def delete_import(self, tenant: str, import_id: str) -> None:
        """The report and every outcome of the import."""
        ...

    def ref_namespaces(self, tenant: str) -> list[str]:
        """Namespaces the tenant has imported-ref rows in (at least: those of its imports)."""
        ...

    def count_refs(self, tenant: str, namespace: str) -> int: ...

    def forget_namespace(self, tenant: str, namespace: str) -> int:
        """Delete every imported-ref row of the namespace; return how many."""
        ...


def _short(ref: str) -> str:
    return hashlib.sha256(ref.encode("utf-8")).hexdigest()[:16]


@dataclass
class _Hits:
    """What one import holds of a purge (references only, never the content)."""

    import_id: str
    outcomes: list[ItemOutcome] = field(default_factory=list)
    probes: list[int] = field(default_factory=list)
    decay: bool = False
    rejected: list[int] = field(default_factory=list)
    error: bool = False
    other: int = 0
    """Other texts of the report that name the purge (its source label: the uploaded archive's name, ...)."""

    def refs(self) -> list[str]:
        base = f"import:{self.import_id}"
        return (
            [f"{base}:outcome:{_short(o.ref)}" for o in self.outcomes]
            + [f"{base}:probe:{n}" for n in self.probes]
            + ([f"{base}:decay"] if self.decay else [])
            + [f"{base}:rejected:{n}" for n in self.rejected]
            + ([f"{base}:error"] if self.error else [])
            + [f"{base}:text:{n}" for n in range(self.other)]
        )

    @property
    def report_changed(self) -> bool:
        return bool(self.probes or self.decay or self.rejected or self.error or self.other)


def _text(value: str | None) -> bool:
    return bool(value) and value != REDACTED


class ImportContent:
    name = "imports"

    def __init__(self, rows: ImportRows) -> None:
        self._rows = rows

    def _hits(self, scope: EraseScope, report: ImportReport, outcomes: list[ItemOutcome]) -> _Hits:
        purged = set(scope.record_ids)
        hits = _Hits(report.id)
        namespace_of = {o.ref: o.namespace for o in outcomes}
        # Items whose record (or the record they superseded) is purged, or in a purged namespace: their refs
        # tie the report's probes and decay check to them.
        tied = {
            o.ref
            for o in outcomes
            if (o.record_id and o.record_id in purged)
            or (o.superseded and o.superseded in purged)
            or scope.in_scope_namespace(o.namespace)
        }
        hits.outcomes = [
            o for o in outcomes if _text(o.file_entry) and (o.ref in tied or scope.names(o.file_entry or ""))
        ]
        hits.probes = [
            n
            for n, probe in enumerate(report.preference_recall.probes)
            if _text(probe.query) and (probe.ref in tied or scope.names(probe.query))
        ]
        decay = report.decay
        hits.decay = _text(decay.query) and (
            (decay.ref is not None and decay.ref in tied)
            or scope.in_scope_namespace(namespace_of.get(decay.ref or "", report.namespace))
            or scope.names(decay.query or "")
        )
        hits.rejected = [
            n for n, item in enumerate(report.rejected) if _text(item.reason) and scope.names(item.reason)
        ]
        hits.error = _text(report.error) and scope.names(report.error or "")
        hits.other = redact_texts(_free_texts(report), scope)[1]
        return hits

    def _walk(self, scope: EraseScope) -> list[tuple[ImportReport, list[ItemOutcome], _Hits]]:
        found = []
        for import_id in self._rows.import_ids(scope.tenant):
            report = self._rows.get(scope.tenant, import_id)
            if report is None:
                continue
            outcomes = self._rows.outcomes(scope.tenant, import_id)
            found.append((report, outcomes, self._hits(scope, report, outcomes)))
        return found

    def _ref_namespaces(self, scope: EraseScope) -> list[str]:
        present = self._rows.ref_namespaces(scope.tenant)
        if scope.whole_tenant:
            return present
        return [ns for ns in scope.whole_namespaces if ns in present]

    def find(self, scope: EraseScope) -> StoreFinding:
        refs: list[str] = []
        items = 0
        if scope.whole_tenant:
            ids = self._rows.import_ids(scope.tenant)
            refs.extend(f"import:{i}" for i in ids)
            items += len(ids)
        else:
            for report, _outcomes, hits in self._walk(scope):
                if scope.in_scope_namespace(report.namespace):
                    refs.append(f"import:{report.id}")  # an import into a purged namespace: deleted whole
                    items += 1
                    continue
                found = hits.refs()
                refs.extend(found)
                items += len(found)
        for namespace in self._ref_namespaces(scope):
            count = self._rows.count_refs(scope.tenant, namespace)
            if count:
                refs.append(f"import-refs:{namespace}:{count}")
                items += count
        return StoreFinding(store=self.name, items=items, refs=refs)

    def erase(self, scope: EraseScope, *, actor: str, reason: str, plan_id: str) -> int:
        erased = 0
        t = scope.tenant
        # The refs first: in AWS their namespaces are found through the imports a tenant purge deletes.
        for namespace in self._ref_namespaces(scope):
            erased += self._rows.forget_namespace(t, namespace)
        if scope.whole_tenant:
            for import_id in self._rows.import_ids(t):
                self._rows.delete_import(t, import_id)
                erased += 1
        else:
            for report, _outcomes, hits in self._walk(scope):
                if scope.in_scope_namespace(report.namespace):
                    self._rows.delete_import(t, report.id)
                    erased += 1
                    continue
                if hits.outcomes:
                    self._rows.replace_outcomes(
                        t, report.id, [o.model_copy(update={"file_entry": None}) for o in hits.outcomes]
                    )
                if hits.outcomes or hits.report_changed:
                    self._redact(report, hits, plan_id)
                    self._rows.rewrite(_redacted_texts(report, scope))
                erased += len(hits.refs())
        return erased

    @staticmethod
    def _redact(report: ImportReport, hits: _Hits, plan_id: str) -> None:
        for n in hits.probes:
            report.preference_recall.probes[n].query = REDACTED
        if hits.decay:
            report.decay.query = REDACTED
        for n in hits.rejected:
            report.rejected[n].reason = REDACTED
        if hits.error:
            report.error = REDACTED
        if plan_id not in report.purges:
            report.purges.append(plan_id)


_KEPT_FIELDS = ("id", "tenant", "namespace", "format", "state", "actor", "purges")


def _free_texts(report: ImportReport) -> dict[str, object]:
    """The report's texts not handled field by field above (its source label, inventory, file outcomes)."""
    data = report.model_dump(mode="json", exclude={"preference_recall", "decay", "rejected", "error"})
    return {k: v for k, v in data.items() if k not in _KEPT_FIELDS}


def _redacted_texts(report: ImportReport, scope: EraseScope) -> ImportReport:
    redacted, count = redact_texts(_free_texts(report), scope)
    if not count:
        return report
    return ImportReport.model_validate(report.model_dump(mode="json") | redacted)
