"""Dreaming's state between and across sweeps of one namespace, all of it in the memory-file store under
`.dreams/`: the day's intermediate files and audit (`.dreams/<day>/`), the promotion ledger
(`promoted.json`), the ingested-lines ledger (`ingested.json`) and the lease (`lock.json`, taken and released
with the file store's locked read-modify-write; it expires after `lock_ttl_seconds` if a sweep dies).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..errors import Conflict, DomainError, NotFound, ValidationFailed
from ..files.memory_files import DREAMS_DIR, MemoryFilesService
from ..ports import Clock
from .config import DreamingConfig
from .report import DreamReport, render_report
from .scoring import Candidate, LightState, Workload

LEDGER_PATH = f"{DREAMS_DIR}/promoted.json"
SUMMARY_NAME = "summary.json"
"""What an older sweep day keeps of its audit once retention compacts it (with `done.json`)."""
_DAY_DIR_RE = re.compile(r"^\.dreams/(\d{4}-\d{2}-\d{2})/([^/]+)$")
LOCK_PATH = f"{DREAMS_DIR}/lock.json"
INGESTED_PATH = f"{DREAMS_DIR}/ingested.json"


class SweepInProgress(Conflict):
    """Another sweep holds this namespace's lease (409; the Step Functions error name for a skipped item)."""

    code = "sweep_in_progress"


@dataclass(frozen=True)
class SweepHandle:
    """What the Step Functions tasks pass to each other (small): the rest lives in `.dreams/<day>/`."""

    tenant: str
    namespace: str
    day: str
    run_id: str
    as_of: str
    skip: bool = False
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "namespace": self.namespace,
            "day": self.day,
            "run_id": self.run_id,
            "as_of": self.as_of,
            "skip": self.skip,
            "reason": self.reason,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SweepHandle:
        try:
            return cls(
                tenant=str(data["tenant"]),
                namespace=str(data["namespace"]),
                day=str(data["day"]),
                run_id=str(data["run_id"]),
                as_of=str(data["as_of"]),
                skip=bool(data.get("skip", False)),
                reason=str(data.get("reason", "")),
            )
        except KeyError as missing:
            raise ValidationFailed(f"sweep handle lacks {missing}; pass the previous task's output") from None


def day_path(day: str, name: str) -> str:
    return f"{DREAMS_DIR}/{day}/{name}"


def sweep_days(files: MemoryFilesService, tenant: str, namespace: str) -> dict[str, list[str]]:
    """The file names under each `.dreams/<day>/` folder of a namespace, by day."""
    days: dict[str, list[str]] = {}
    for path in files.list_files(tenant, namespace, f"{DREAMS_DIR}/"):
        match = _DAY_DIR_RE.match(path)
        if match is not None:
            days.setdefault(match.group(1), []).append(match.group(2))
    return days


def recent_runs(files: MemoryFilesService, tenant: str, namespace: str, limit: int) -> list[dict[str, Any]]:
    """The audits of the newest `limit` sweep days of a namespace, newest first: a day kept in full gives its
    run.json (every explained candidate with its signals and gates), a compacted day its summary.json
    (`compacted`: true, no candidates). A day whose sweep has not finished is left out."""
    days = sweep_days(files, tenant, namespace)
    runs: list[dict[str, Any]] = []
    for day in sorted(days, reverse=True):
        if len(runs) >= limit:
            break
        names = days[day]
        reruns = sorted(name for name in names if name.startswith("run-") and name.endswith(".json"))
        if "run.json" in names:
            body = _loads(files.read_file(tenant, namespace, day_path(day, "run.json"))) or {}
            runs.append({**body, "day": day, "compacted": False, "reruns": reruns})
        elif SUMMARY_NAME in names:
            summary = _loads(files.read_file(tenant, namespace, day_path(day, SUMMARY_NAME))) or {}
            runs.append(
                {
                    "namespace": namespace,
                    "day": day,
                    "run_id": summary.get("run_id") or "",
                    "status": "compacted",
                    "finished_at": summary.get("finished_at"),
                    "summary": summary.get("summary", {}),
                    "candidates": [],
                    "compacted": True,
                    "reruns": [name for name in summary.get("runs", []) if name != "run.json"],
                }
            )
    return runs


class SweepState:
    """The `.dreams/` files of a tenant's namespaces: lease, ledgers, Light/REM hand-over, audit."""

    def __init__(self, files: MemoryFilesService, clock: Clock, config: DreamingConfig) -> None:
        self._files = files
        self._clock = clock
        self.config = config

    def write_json(self, tenant: str, namespace: str, path: str, value: Any) -> None:
        self._files.write_file(tenant, namespace, path, _dumps(value))

    def write_audit(self, handle: SweepHandle, report: DreamReport, light: LightState) -> None:
        """run.json and REPORT.md of the day; a forced re-run of a completed day writes
        run-<run id>.json and REPORT-<run id>.md beside them, so the first audit is never overwritten."""
        tenant, namespace = handle.tenant, handle.namespace
        marker = self.read_json(tenant, namespace, day_path(handle.day, "done.json"))
        suffix = ""
        if marker is not None and marker.get("run_id") != handle.run_id:
            suffix = "-" + re.sub(r"[^A-Za-z0-9._-]", "-", handle.run_id)[:100]
        limit = self.config.run_json_candidates
        body = report.to_dict(limit=limit)  # promotion order: the candidates that passed come first
        omitted = report.outcomes[limit:]
        body["candidates_omitted"] = {
            "count": len(omitted),
            "limit": limit,
            "decisions": dict(sorted(Counter(outcome.decision for outcome in omitted).items())),
        }
        body["skipped_sentences"] = light.skipped_sentences
        self._files.write_file(tenant, namespace, day_path(handle.day, f"run{suffix}.json"), _dumps(body))
        self._files.write_file(
            tenant,
            namespace,
            day_path(handle.day, f"REPORT{suffix}.md"),
            render_report(report, self.config.report_top),
        )
        self._files.write_file(
            tenant,
            namespace,
            day_path(handle.day, "done.json"),
            _dumps({"run_id": handle.run_id, "finished_at": report.finished_at, "summary": report.summary}),
        )

    def apply_retention(self, handle: SweepHandle) -> dict[str, Any]:
        """Keep the newest `keep_full_runs` sweep days of `.dreams/` in full; compact each older day once: its
        `summary.json` keeps the run's summary (decisions, promotions, timings), `done.json` keeps the day
        idempotent, and every other file of the day is deleted; `.dreams/` grows by a few hundred bytes per
        day instead of the size of a full run."""
        tenant, namespace = handle.tenant, handle.namespace
        days = sweep_days(self._files, tenant, namespace)
        full = sorted(day for day, names in days.items() if SUMMARY_NAME not in names)
        keep = self.config.keep_full_runs
        compacted: list[str] = []
        for day in full[: max(0, len(full) - keep)]:
            if day >= handle.day:
                continue  # never the day being swept (a forced re-run of an old day)
            names = days[day]
            done = self.read_json(tenant, namespace, day_path(day, "done.json")) or {}
            runs = [name for name in names if name.startswith("run") and name.endswith(".json")]
            summary: dict[str, Any] = {
                "day": day,
                "run_id": done.get("run_id"),
                "finished_at": done.get("finished_at"),
                "summary": done.get("summary", {}),
                "runs": sorted(runs),
                "compacted_on": handle.day,
                "compacted_by_run": handle.run_id,
            }
            for name in runs:
                with contextlib.suppress(ValidationFailed):
                    run = self.read_json(tenant, namespace, day_path(day, name)) or {}
                    if run.get("timings") is not None:
                        summary.setdefault("timings", {})[name] = run.get("timings")
                        summary.setdefault("inputs", {})[name] = {
                            key: run.get("inputs", {}).get(key)
                            for key in ("candidates", "recalls", "raw_items", "short_term_records")
                        }
            self.write_json(tenant, namespace, day_path(day, SUMMARY_NAME), summary)
            for name in names:
                if name not in ("done.json", SUMMARY_NAME):
                    self._files.delete_file(tenant, namespace, day_path(day, name))
            compacted.append(day)
        return {"kept_full": min(len(full), keep), "compacted": compacted}

    def already_done(self, handle: SweepHandle) -> DreamReport:
        marker = self.read_json(handle.tenant, handle.namespace, day_path(handle.day, "done.json")) or {}
        return DreamReport(
            tenant=handle.tenant,
            namespace=handle.namespace,
            day=handle.day,
            run_id=str(marker.get("run_id", "")),
            dry_run=False,
            status="already_done",
            as_of=handle.as_of,
            started_at=self._clock.now().isoformat(),
            finished_at=str(marker.get("finished_at", "")),
            summary=dict(marker.get("summary", {})),
        )

    def save_light(self, handle: SweepHandle, light: LightState) -> None:
        size = self.config.intermediate_part_size
        parts = []
        for number, start in enumerate(range(0, len(light.candidates), size)):
            path = day_path(handle.day, f"light-{number:04d}.json")
            chunk = [candidate.to_json() for candidate in light.candidates[start : start + size]]
            self._files.write_file(
                handle.tenant, handle.namespace, path, _dumps({"run_id": handle.run_id, "candidates": chunk})
            )
            parts.append(path)
        manifest = {
            "run_id": handle.run_id,
            "parts": parts,
            "count": len(light.candidates),
            "inputs": light.inputs,
            "workload": {
                "recalls": light.workload.recalls,
                "cold_start": light.workload.cold_start,
                "counts": light.workload.counts,
            },
            "recall_term_days": {term: sorted(days) for term, days in light.recall_term_days.items()},
            "recall_term_items": light.recall_term_items,
            "rem_recalls": light.rem_recalls,
            "materialized": light.materialized,
            "skipped_sentences": light.skipped_sentences,
            "seconds": light.seconds,
        }
        self._files.write_file(
            handle.tenant, handle.namespace, day_path(handle.day, "light.json"), _dumps(manifest)
        )

    def load_light(self, handle: SweepHandle) -> LightState:
        manifest = self.read_json(handle.tenant, handle.namespace, day_path(handle.day, "light.json"))
        if manifest is None or manifest.get("run_id") != handle.run_id:
            raise ValidationFailed(
                f"Light output of run {handle.run_id} is missing: run the Light task first"
            )
        candidates: list[Candidate] = []
        for path in manifest["parts"]:
            part = self.read_json(handle.tenant, handle.namespace, path)
            if part is None or part.get("run_id") != handle.run_id:
                raise ValidationFailed(f"{path} is missing or from another run: rerun the Light task")
            candidates.extend(Candidate.from_json(item) for item in part["candidates"])
        workload = manifest["workload"]
        return LightState(
            candidates=candidates,
            inputs=manifest["inputs"],
            workload=Workload(
                int(workload["recalls"]), dict(workload["counts"]), bool(workload["cold_start"])
            ),
            recall_term_days={term: set(days) for term, days in manifest["recall_term_days"].items()},
            recall_term_items=dict(manifest["recall_term_items"]),
            rem_recalls=int(manifest["rem_recalls"]),
            materialized=list(manifest["materialized"]),
            skipped_sentences=list(manifest["skipped_sentences"]),
            seconds=float(manifest.get("seconds", 0.0)),
        )

    def promoted_entries(self, handle: SweepHandle) -> dict[str, Any]:
        stored = self.read_json(handle.tenant, handle.namespace, LEDGER_PATH) or {}
        entries = stored.get("entries", {})
        return entries if isinstance(entries, dict) else {}

    def set_promoted(self, handle: SweepHandle, key: str, value: dict[str, Any] | None) -> None:
        def change(current: str | None) -> str:
            data = _loads(current) or {}
            stored = data.get("entries")
            entries: dict[str, Any] = stored if isinstance(stored, dict) else {}
            if value is None:
                entries.pop(key, None)
            else:
                entries[key] = value
            return _dumps({"version": 1, "entries": entries})

        self._files.update_file(handle.tenant, handle.namespace, LEDGER_PATH, change)

    def acquire(self, handle: SweepHandle, now: datetime) -> None:
        ttl = timedelta(seconds=self.config.lock_ttl_seconds)

        def change(current: str | None) -> str:
            lease = _loads(current) or {}
            owner = lease.get("owner")
            expires = lease.get("expires_at")
            if owner and owner != handle.run_id and expires and datetime.fromisoformat(expires) > now:
                raise SweepInProgress(
                    f"another dreaming sweep of {handle.namespace} is running (run {owner}, lease until "
                    f"{expires}); it will finish or its lease expire — retry after that",
                    owner=owner,
                    expires_at=expires,
                )
            return _dumps(
                {
                    "owner": handle.run_id,
                    "acquired_at": now.isoformat(),
                    "expires_at": (now + ttl).isoformat(),
                }
            )

        self._files.update_file(handle.tenant, handle.namespace, LOCK_PATH, change)

    def renew(self, handle: SweepHandle) -> None:
        self.acquire(handle, self._clock.now())

    def release(self, handle: SweepHandle) -> None:
        def change(current: str | None) -> str:
            lease = _loads(current) or {}
            if lease.get("owner") != handle.run_id:
                return current or _dumps({})
            return _dumps(
                {"owner": None, "released_at": self._clock.now().isoformat(), "last_run": handle.run_id}
            )

        # The lease expires on its own; a failed release must never mask the sweep's own outcome.
        with contextlib.suppress(DomainError):
            self._files.update_file(handle.tenant, handle.namespace, LOCK_PATH, change)

    def read_json(self, tenant: str, namespace: str, path: str) -> dict[str, Any] | None:
        try:
            return _loads(self._files.read_file(tenant, namespace, path))
        except NotFound:
            return None


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True) + "\n"


def _loads(text: str | None) -> dict[str, Any] | None:
    if not text or not text.strip():
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValidationFailed(
            f"a dreaming state file is not valid JSON ({error}); fix or remove it"
        ) from None
    return value if isinstance(value, dict) else None
