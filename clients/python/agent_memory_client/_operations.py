"""Every operation of docs/openapi.json as one typed method, written once for both clients.

`Operations[R]` builds each request (`Call`) and hands it to `_send`; the sync `Client` is `Operations[JSON]`
and the async `AsyncClient` is `Operations[Awaitable[JSON]]`, so each method has one definition and the right
return type in each client. `ROUTES` maps each documented route to its method; a test fails when
docs/openapi.json has a route that is not in it.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import quote

from ._http import Call

R = TypeVar("R")

MemoryType = Literal[
    "user_preference",
    "project_state",
    "domain_knowledge",
    "task_action",
    "episode",
    "temporary",
    "correction",
]
Tier = Literal["short_term", "long_term"]
Status = Literal["active", "pending", "archived", "superseded", "quarantined"]
SourceKind = Literal["api", "conversation", "tool", "file", "dreaming", "import"]
FileKind = Literal["memory", "user"]
RecallMode = Literal["hybrid", "vector", "keyword"]
Reranker = Literal["bedrock"]
SkillStatus = Literal["active", "stale", "archived"]
SkillOutcome = Literal["helped", "failed", "misled"]
PurgeKind = Literal["memory", "namespace", "subject", "tenant"]
ImportFormat = Literal["auto", "openclaw", "hermes", "claude-code", "mem0", "jsonl"]

ROUTES: dict[str, str] = {
    "GET /v1/health": "health",
    "GET /v1/whoami": "whoami",
    # memories
    "POST /v1/memories": "remember",
    "POST /v1/memories/batch": "remember_batch",
    "GET /v1/memories": "list_memories",
    "GET /v1/memories/{memory_id}": "get_memory",
    "PATCH /v1/memories/{memory_id}": "update_memory",
    "POST /v1/memories/{memory_id}/correct": "correct",
    "POST /v1/memories/{memory_id}/archive": "archive",
    "POST /v1/memories/{memory_id}/restore": "restore",
    "GET /v1/memories/{memory_id}/history": "history",
    "POST /v1/recall": "recall",
    "GET /v1/changes": "changes",
    "GET /v1/conflicts": "list_conflicts",
    "POST /v1/conflicts/{group}/resolve": "resolve_conflict",
    "GET /v1/stats": "stats",
    "GET /v1/memories/reused": "reused_memories",
    "POST /v1/memories/{memory_id}/reviewed": "mark_reviewed",
    # export, import, snapshots, diff
    "GET /v1/export": "export",
    "POST /v1/export/import": "import_bundle",
    "POST /v1/imports": "import_archive",
    "GET /v1/jobs/{job_id}": "get_job",
    "GET /v1/imports/{import_id}": "get_import",
    "GET /v1/imports/{import_id}/items": "import_items",
    "POST /v1/imports/{import_id}/rollback": "rollback_import",
    "GET /v1/snapshots": "list_snapshots",
    "POST /v1/snapshots": "create_snapshot",
    "GET /v1/snapshots/{snapshot}": "get_snapshot",
    "GET /v1/snapshots/{snapshot}/diff": "snapshot_diff",
    "POST /v1/snapshots/{snapshot}/restore": "restore_snapshot",
    "GET /v1/diff": "diff",
    # admin: erasure
    "POST /v1/admin/purges": "plan_purge",
    "GET /v1/admin/purges": "list_purges",
    "GET /v1/admin/purges/{plan_id}": "get_purge",
    "POST /v1/admin/purges/{plan_id}/execute": "execute_purge",
    # memory files and the daily log
    "GET /v1/files/{kind}": "read_file",
    "POST /v1/files/{kind}/entries": "add_file_entry",
    "POST /v1/files/{kind}/entries/replace": "replace_file_entry",
    "POST /v1/files/{kind}/entries/remove": "remove_file_entry",
    "GET /v1/daily-log": "read_daily_log",
    "POST /v1/daily-log": "append_daily_log",
    # sessions
    "POST /v1/sessions": "start_session",
    "GET /v1/sessions/{session_id}": "get_session",
    "POST /v1/sessions/{session_id}/end": "end_session",
    "POST /v1/sessions/{session_id}/turns": "chat_turn",
    # skills
    "GET /v1/skills": "list_skills",
    "POST /v1/skills": "create_skill",
    "GET /v1/skills/{name}": "view_skill",
    "POST /v1/skills/{name}/edit": "edit_skill",
    "POST /v1/skills/{name}/patch": "patch_skill",
    "POST /v1/skills/{name}/archive": "archive_skill",
    "POST /v1/skills/{name}/restore": "restore_skill",
    "POST /v1/skills/{name}/pin": "pin_skill",
    "POST /v1/skills/{name}/use": "use_skill",
    "POST /v1/skills/{name}/outcomes": "report_skill_outcome",
    "GET /v1/skills/{name}/history": "skill_history",
    "GET /v1/skills/{name}/file": "skill_file",
    "GET /v1/skills/{name}/versions/{version}": "skill_version",
    # admin: forgetting, dreaming, curator
    "POST /v1/admin/archive-decayed": "archive_decayed",
    "POST /v1/admin/dream": "dream",
    "POST /v1/admin/dream/start": "start_dream",
    "GET /v1/admin/dream/runs": "dream_runs",
    "POST /v1/admin/curate": "curate",
    "GET /v1/admin/curator/runs": "curator_run",
    "POST /v1/admin/curator/accept": "accept_curator_proposal",
    # admin: embedding-model migration
    "POST /v1/admin/migration/plan": "plan_migration",
    "POST /v1/admin/migration/start": "start_migration",
    "GET /v1/admin/migration/status": "migration_status",
    "POST /v1/admin/migration/retry": "retry_migration",
    "POST /v1/admin/migration/switch": "switch_migration",
    "POST /v1/admin/migration/rollback": "rollback_migration",
    "POST /v1/admin/migration/archive": "archive_migration",
}
"""Documented route ("METHOD /path") → the client method that calls it."""


def _seg(value: str | int) -> str:
    """A path segment, percent-encoded (an id or name never escapes its segment)."""
    return quote(str(value), safe="")


def _body(**fields: Any) -> dict[str, Any]:
    """The JSON body without the fields left at None (the API applies its defaults)."""
    return {key: value for key, value in fields.items() if value is not None}


class Operations(Generic[R]):
    """One method per API route. Writes take `idempotency_key` (default: a new UUID per call, the same on
    each retry of that call); the API deduplicates `POST /v1/memories` by it."""

    def _send(self, call: Call) -> R:
        raise NotImplementedError

    # ------------------------------------------------------------------------------------------- health

    def health(self) -> R:
        """Liveness (no authentication)."""
        return self._send(Call("GET", "/v1/health"))

    def whoami(self) -> R:
        """The calling key: tenant, namespace patterns, scopes."""
        return self._send(Call("GET", "/v1/whoami"))

    # ----------------------------------------------------------------------------------------- memories

    def remember(
        self,
        content: str,
        namespace: str,
        *,
        type: MemoryType | None = None,
        tier: Tier | None = None,
        context: str | None = None,
        score: float | None = None,
        half_life_hours: float | None = None,
        metadata: Mapping[str, Any] | None = None,
        source_kind: SourceKind | None = None,
        source_ref: str | None = None,
        valid_from: str | None = None,
        idempotency_key: str | None = None,
    ) -> R:
        """Remember one memory (the write discipline decides: added, merged, pending, rejected...)."""
        source = _body(kind=source_kind, ref=source_ref) or None
        body = _body(
            content=content,
            namespace=namespace,
            type=type,
            tier=tier,
            context=context,
            score=score,
            half_life_hours=half_life_hours,
            metadata=dict(metadata) if metadata is not None else None,
            source=source,
            valid_from=valid_from,
        )
        return self._send(Call("POST", "/v1/memories", json=body, idempotency_key=idempotency_key))

    def remember_batch(self, items: Sequence[Mapping[str, Any]], *, idempotency_key: str | None = None) -> R:
        """Remember up to 100 memories; each item has the fields of `remember` (`content`, `namespace`...).
        The local server runs a large batch as a job (202): the client follows it and returns its result (the
        same body); a failed job raises `errors.JobFailed`."""
        body = {"items": [dict(item) for item in items]}
        return self._send(Call("POST", "/v1/memories/batch", json=body, idempotency_key=idempotency_key))

    def list_memories(
        self,
        namespace: str,
        *,
        type: MemoryType | None = None,
        status: Status | None = None,
        tier: Tier | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        include_children: bool | None = None,
    ) -> R:
        """One page of a namespace's memories and of the namespaces below it (`items`, `next_cursor`; by
        namespace, then oldest first); see `iter_memories`. `include_children=False`: of that namespace alone
        (oldest first). None: the server's default (children included)."""
        params = {
            "namespace": namespace,
            "type": type,
            "status": status,
            "tier": tier,
            "limit": limit,
            "cursor": cursor,
            "include_children": include_children,
        }
        return self._send(Call("GET", "/v1/memories", params=params))

    def get_memory(self, memory_id: str) -> R:
        return self._send(Call("GET", f"/v1/memories/{_seg(memory_id)}"))

    def update_memory(
        self,
        memory_id: str,
        *,
        type: MemoryType | None = None,
        tier: Tier | None = None,
        score: float | None = None,
        half_life_hours: float | None = None,
        metadata: Mapping[str, Any] | None = None,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
    ) -> R:
        """Update governance fields (not the content: use `correct`)."""
        body = _body(
            type=type,
            tier=tier,
            score=score,
            half_life_hours=half_life_hours,
            metadata=dict(metadata) if metadata is not None else None,
            expected_version=expected_version,
        )
        return self._send(
            Call("PATCH", f"/v1/memories/{_seg(memory_id)}", json=body, idempotency_key=idempotency_key)
        )

    def correct(
        self, memory_id: str, content: str, *, reason: str | None = None, idempotency_key: str | None = None
    ) -> R:
        """Correct a memory's content: a new version supersedes it, linked in its history."""
        return self._send(
            Call(
                "POST",
                f"/v1/memories/{_seg(memory_id)}/correct",
                json=_body(content=content, reason=reason),
                idempotency_key=idempotency_key,
            )
        )

    def archive(self, memory_id: str, *, reason: str | None = None, idempotency_key: str | None = None) -> R:
        """Archive a memory (never deleted; `restore` brings it back)."""
        return self._send(
            Call(
                "POST",
                f"/v1/memories/{_seg(memory_id)}/archive",
                json=_body(reason=reason),
                idempotency_key=idempotency_key,
            )
        )

    def restore(self, memory_id: str, *, reason: str | None = None, idempotency_key: str | None = None) -> R:
        return self._send(
            Call(
                "POST",
                f"/v1/memories/{_seg(memory_id)}/restore",
                json=_body(reason=reason),
                idempotency_key=idempotency_key,
            )
        )

    def history(self, memory_id: str) -> R:
        """Lineage and change log of a memory."""
        return self._send(Call("GET", f"/v1/memories/{_seg(memory_id)}/history"))

    def recall(
        self,
        query: str,
        namespaces: Sequence[str],
        *,
        k: int | None = None,
        mode: RecallMode | None = None,
        types: Sequence[MemoryType] | None = None,
        statuses: Sequence[Status] | None = None,
        min_score: float | None = None,
        as_of: str | None = None,
        rerank: Reranker | None = None,
    ) -> R:
        """Hybrid recall (vector + keyword, fused and re-ranked): `results`. `rerank="bedrock"` reorders the top
        candidates with Amazon Bedrock's Rerank API (AWS deployments that enable it; a billed call per recall;
        `rerank` in the answer says whether it applied)."""
        body = _body(
            query=query,
            namespaces=list(namespaces),
            k=k,
            mode=mode,
            types=list(types) if types is not None else None,
            statuses=list(statuses) if statuses is not None else None,
            min_score=min_score,
            as_of=as_of,
            rerank=rerank,
        )
        return self._send(Call("POST", "/v1/recall", json=body))

    def changes(self, namespace: str, *, limit: int | None = None, cursor: str | None = None) -> R:
        """One page of a namespace's change log, oldest first; see `iter_changes`."""
        params = {"namespace": namespace, "limit": limit, "cursor": cursor}
        return self._send(Call("GET", "/v1/changes", params=params))

    def list_conflicts(self, namespace: str) -> R:
        return self._send(Call("GET", "/v1/conflicts", params={"namespace": namespace}))

    def resolve_conflict(
        self,
        group: str,
        keep: Sequence[str],
        *,
        reason: str | None = None,
        idempotency_key: str | None = None,
    ) -> R:
        return self._send(
            Call(
                "POST",
                f"/v1/conflicts/{_seg(group)}/resolve",
                json=_body(keep=list(keep), reason=reason),
                idempotency_key=idempotency_key,
            )
        )

    def stats(self, namespace: str) -> R:
        return self._send(Call("GET", "/v1/stats", params={"namespace": namespace}))

    def reused_memories(self, namespace: str, *, limit: int | None = None, min_uses: int | None = None) -> R:
        """Heavily reused memories for review (recalls and session snapshots that used them)."""
        params = {"namespace": namespace, "limit": limit, "min_uses": min_uses}
        return self._send(Call("GET", "/v1/memories/reused", params=params))

    def mark_reviewed(self, memory_id: str, *, idempotency_key: str | None = None) -> R:
        """Mark a memory reviewed (a person checked it)."""
        return self._send(
            Call("POST", f"/v1/memories/{_seg(memory_id)}/reviewed", idempotency_key=idempotency_key)
        )

    # ------------------------------------------------------------------- export, import, snapshots, diff

    def export(self, namespace: str, *, include_children: bool | None = None) -> R:
        """A namespace and the namespaces below it (`include_children=False`: it alone) as an export bundle
        (`manifest`, `members`); `import_bundle` reads it back."""
        params = {"namespace": namespace, "include_children": include_children}
        return self._send(Call("GET", "/v1/export", params=params))

    def import_bundle(
        self, bundle: Mapping[str, Any], *, dry_run: bool | None = None, idempotency_key: str | None = None
    ) -> R:
        """Import an export bundle (admin scope): records keep their ids and history."""
        body = _body(bundle=dict(bundle), dry_run=dry_run)
        return self._send(Call("POST", "/v1/export/import", json=body, idempotency_key=idempotency_key))

    def import_archive(
        self,
        namespace: str,
        archive: bytes | str,
        *,
        format: ImportFormat | None = None,
        name: str | None = None,
        dry_run: bool | None = None,
        idempotency_key: str | None = None,
    ) -> R:
        """Import another tool's memory from a zip or tar.gz archive (admin scope); `archive` is its bytes
        (base64-encoded here) or already base64 text. The local server runs it as a job (202): the client
        follows it and returns the report; a failed job raises `errors.JobFailed`."""
        encoded = base64.b64encode(archive).decode("ascii") if isinstance(archive, bytes) else archive
        body = _body(namespace=namespace, archive=encoded, format=format, name=name, dry_run=dry_run)
        return self._send(Call("POST", "/v1/imports", json=body, idempotency_key=idempotency_key))

    def get_job(self, job_id: str) -> R:
        """A job's status, progress and outcome (the key that submitted it). `import_archive` and large
        `remember_batch` calls follow their job themselves and return its `result`."""
        return self._send(Call("GET", f"/v1/jobs/{_seg(job_id)}"))

    def get_import(self, import_id: str) -> R:
        """An import's validation report (admin scope)."""
        return self._send(Call("GET", f"/v1/imports/{_seg(import_id)}"))

    def import_items(
        self, import_id: str, *, decision: str | None = None, offset: int = 0, limit: int = 200
    ) -> R:
        """What each item of an import became (admin scope), optionally one decision only; paged by offset."""
        params = {"decision": decision, "offset": offset, "limit": limit}
        return self._send(Call("GET", f"/v1/imports/{_seg(import_id)}/items", params=params))

    def rollback_import(self, import_id: str, *, idempotency_key: str | None = None) -> R:
        """Roll an import back as a unit (admin scope)."""
        return self._send(
            Call("POST", f"/v1/imports/{_seg(import_id)}/rollback", idempotency_key=idempotency_key)
        )

    def list_snapshots(self, namespace: str, *, include_children: bool | None = None) -> R:
        """The snapshots of a namespace and (unless `include_children=False`) of those below it."""
        params = {"namespace": namespace, "include_children": include_children}
        return self._send(Call("GET", "/v1/snapshots", params=params))

    def create_snapshot(
        self,
        namespace: str,
        name: str,
        *,
        note: str | None = None,
        include_children: bool | None = None,
        idempotency_key: str | None = None,
    ) -> R:
        """Take a named snapshot of a namespace (records + memory files) and, unless
        `include_children=False`, of each namespace below it that holds data (`children`)."""
        body = _body(namespace=namespace, name=name, note=note, include_children=include_children)
        return self._send(Call("POST", "/v1/snapshots", json=body, idempotency_key=idempotency_key))

    def get_snapshot(self, snapshot: str, namespace: str) -> R:
        return self._send(Call("GET", f"/v1/snapshots/{_seg(snapshot)}", params={"namespace": namespace}))

    def snapshot_diff(
        self, snapshot: str, namespace: str, *, to: str | None = None, include_children: bool | None = None
    ) -> R:
        """What changed from `snapshot` to snapshot `to` (or to now), in the namespace and those below it."""
        params = {"namespace": namespace, "to": to, "include_children": include_children}
        return self._send(Call("GET", f"/v1/snapshots/{_seg(snapshot)}/diff", params=params))

    def restore_snapshot(
        self,
        snapshot: str,
        namespace: str,
        *,
        dry_run: bool | None = None,
        include_children: bool | None = None,
        idempotency_key: str | None = None,
    ) -> R:
        """Restore a namespace to a snapshot as new versions (history kept), and (unless
        `include_children=False`) each namespace below it that has a snapshot of this name (`children`)."""
        body = _body(namespace=namespace, dry_run=dry_run, include_children=include_children)
        return self._send(
            Call(
                "POST",
                f"/v1/snapshots/{_seg(snapshot)}/restore",
                json=body,
                idempotency_key=idempotency_key,
            )
        )

    def diff(
        self, namespace: str, since: str, *, until: str | None = None, include_children: bool | None = None
    ) -> R:
        """What changed in a namespace (and those below it) between two date-times (ISO 8601 with a zone;
        `until` defaults to now). Sent as the API's `from` / `to`."""
        params = {"namespace": namespace, "from": since, "to": until, "include_children": include_children}
        return self._send(Call("GET", "/v1/diff", params=params))

    # ------------------------------------------------------------------------- memory files, daily log

    def read_file(self, kind: FileKind, namespace: str) -> R:
        """MEMORY.md (`kind="memory"`) or USER.md (`kind="user"`) of a namespace."""
        return self._send(Call("GET", f"/v1/files/{_seg(kind)}", params={"namespace": namespace}))

    def add_file_entry(
        self, kind: FileKind, content: str, namespace: str, *, idempotency_key: str | None = None
    ) -> R:
        return self._send(
            Call(
                "POST",
                f"/v1/files/{_seg(kind)}/entries",
                json={"namespace": namespace, "content": content},
                idempotency_key=idempotency_key,
            )
        )

    def replace_file_entry(
        self, kind: FileKind, match: str, content: str, namespace: str, *, idempotency_key: str | None = None
    ) -> R:
        """Replace the one entry containing `match`."""
        return self._send(
            Call(
                "POST",
                f"/v1/files/{_seg(kind)}/entries/replace",
                json={"namespace": namespace, "match": match, "content": content},
                idempotency_key=idempotency_key,
            )
        )

    def remove_file_entry(
        self, kind: FileKind, match: str, namespace: str, *, idempotency_key: str | None = None
    ) -> R:
        """Remove the one entry containing `match`."""
        return self._send(
            Call(
                "POST",
                f"/v1/files/{_seg(kind)}/entries/remove",
                json={"namespace": namespace, "match": match},
                idempotency_key=idempotency_key,
            )
        )

    def read_daily_log(self, namespace: str, date: str) -> R:
        """One day's log (`date` as YYYY-MM-DD)."""
        return self._send(Call("GET", "/v1/daily-log", params={"namespace": namespace, "date": date}))

    def append_daily_log(self, text: str, namespace: str, *, idempotency_key: str | None = None) -> R:
        """Append a line to today's memory/YYYY-MM-DD.md."""
        return self._send(
            Call(
                "POST",
                "/v1/daily-log",
                json={"namespace": namespace, "text": text},
                idempotency_key=idempotency_key,
            )
        )

    # ----------------------------------------------------------------------------------------- sessions

    def start_session(
        self,
        namespace: str,
        *,
        base_system: str | None = None,
        cache_ttl: str | None = None,
        idempotency_key: str | None = None,
    ) -> R:
        body = _body(namespace=namespace, base_system=base_system, cache_ttl=cache_ttl)
        return self._send(Call("POST", "/v1/sessions", json=body, idempotency_key=idempotency_key))

    def get_session(self, session_id: str) -> R:
        return self._send(Call("GET", f"/v1/sessions/{_seg(session_id)}"))

    def end_session(self, session_id: str, *, idempotency_key: str | None = None) -> R:
        return self._send(
            Call("POST", f"/v1/sessions/{_seg(session_id)}/end", idempotency_key=idempotency_key)
        )

    def chat_turn(self, session_id: str, message: str, *, idempotency_key: str | None = None) -> R:
        return self._send(
            Call(
                "POST",
                f"/v1/sessions/{_seg(session_id)}/turns",
                json={"message": message},
                idempotency_key=idempotency_key,
            )
        )

    # ------------------------------------------------------------------------------------------- skills

    def list_skills(self, namespace: str, *, status: SkillStatus | None = None) -> R:
        return self._send(Call("GET", "/v1/skills", params={"namespace": namespace, "status": status}))

    def create_skill(
        self,
        namespace: str,
        name: str,
        description: str,
        body: str,
        *,
        note: str | None = None,
        pinned: bool | None = None,
        provenance: str | None = None,
        idempotency_key: str | None = None,
    ) -> R:
        payload = _body(
            namespace=namespace,
            name=name,
            description=description,
            body=body,
            note=note,
            pinned=pinned,
            provenance=provenance,
        )
        return self._send(Call("POST", "/v1/skills", json=payload, idempotency_key=idempotency_key))

    def view_skill(self, name: str, namespace: str, *, record: bool | None = None) -> R:
        """A skill with its body (recorded as a use unless `record=False`)."""
        params = {"namespace": namespace, "record": record}
        return self._send(Call("GET", f"/v1/skills/{_seg(name)}", params=params))

    def edit_skill(
        self,
        name: str,
        namespace: str,
        body: str,
        *,
        description: str | None = None,
        expected_version: int | None = None,
        note: str | None = None,
        idempotency_key: str | None = None,
    ) -> R:
        payload = _body(
            namespace=namespace,
            body=body,
            description=description,
            expected_version=expected_version,
            note=note,
        )
        return self._send(
            Call("POST", f"/v1/skills/{_seg(name)}/edit", json=payload, idempotency_key=idempotency_key)
        )

    def patch_skill(
        self,
        name: str,
        namespace: str,
        heading: str,
        content: str,
        *,
        expected_version: int | None = None,
        note: str | None = None,
        idempotency_key: str | None = None,
    ) -> R:
        """Replace one section of a skill, by heading."""
        payload = _body(
            namespace=namespace,
            heading=heading,
            content=content,
            expected_version=expected_version,
            note=note,
        )
        return self._send(
            Call("POST", f"/v1/skills/{_seg(name)}/patch", json=payload, idempotency_key=idempotency_key)
        )

    def archive_skill(
        self, name: str, namespace: str, *, note: str | None = None, idempotency_key: str | None = None
    ) -> R:
        return self._send(
            Call(
                "POST",
                f"/v1/skills/{_seg(name)}/archive",
                json=_body(namespace=namespace, note=note),
                idempotency_key=idempotency_key,
            )
        )

    def restore_skill(
        self, name: str, namespace: str, *, note: str | None = None, idempotency_key: str | None = None
    ) -> R:
        return self._send(
            Call(
                "POST",
                f"/v1/skills/{_seg(name)}/restore",
                json=_body(namespace=namespace, note=note),
                idempotency_key=idempotency_key,
            )
        )

    def pin_skill(
        self,
        name: str,
        namespace: str,
        pinned: bool,
        *,
        note: str | None = None,
        idempotency_key: str | None = None,
    ) -> R:
        """Pin or unpin a skill (admin scope)."""
        return self._send(
            Call(
                "POST",
                f"/v1/skills/{_seg(name)}/pin",
                json=_body(namespace=namespace, pinned=pinned, note=note),
                idempotency_key=idempotency_key,
            )
        )

    def use_skill(self, name: str, namespace: str, *, idempotency_key: str | None = None) -> R:
        return self._send(
            Call(
                "POST",
                f"/v1/skills/{_seg(name)}/use",
                json={"namespace": namespace},
                idempotency_key=idempotency_key,
            )
        )

    def report_skill_outcome(
        self,
        name: str,
        namespace: str,
        outcome: SkillOutcome,
        *,
        note: str | None = None,
        idempotency_key: str | None = None,
    ) -> R:
        return self._send(
            Call(
                "POST",
                f"/v1/skills/{_seg(name)}/outcomes",
                json=_body(namespace=namespace, outcome=outcome, note=note),
                idempotency_key=idempotency_key,
            )
        )

    def skill_file(self, name: str, namespace: str, path: str) -> R:
        """One file kept beside a skill's SKILL.md (`references/api.md`): {path, text}."""
        params = {"namespace": namespace, "path": path}
        return self._send(Call("GET", f"/v1/skills/{_seg(name)}/file", params=params))

    def skill_history(self, name: str, namespace: str) -> R:
        return self._send(Call("GET", f"/v1/skills/{_seg(name)}/history", params={"namespace": namespace}))

    def skill_version(self, name: str, version: int, namespace: str) -> R:
        """The SKILL.md text of one version."""
        return self._send(
            Call(
                "GET",
                f"/v1/skills/{_seg(name)}/versions/{_seg(version)}",
                params={"namespace": namespace},
            )
        )

    # ---------------------------------------------------------------- admin: forgetting, dreaming, curator

    def archive_decayed(
        self, *, namespace: str | None = None, dry_run: bool | None = None, idempotency_key: str | None = None
    ) -> R:
        """Run the forgetting job (admin scope)."""
        body = _body(namespace=namespace, dry_run=dry_run)
        return self._send(
            Call("POST", "/v1/admin/archive-decayed", json=body, idempotency_key=idempotency_key)
        )

    def dream(
        self,
        *,
        namespace: str | None = None,
        day: str | None = None,
        dry_run: bool | None = None,
        explain: int | None = None,
        force: bool | None = None,
        idempotency_key: str | None = None,
    ) -> R:
        """Run or explain the dreaming sweep synchronously (admin scope)."""
        body = _body(namespace=namespace, day=day, dry_run=dry_run, explain=explain, force=force)
        return self._send(Call("POST", "/v1/admin/dream", json=body, idempotency_key=idempotency_key))

    def start_dream(
        self, *, namespaces: Sequence[str] | None = None, idempotency_key: str | None = None
    ) -> R:
        """Start the dreaming sweep asynchronously (202)."""
        body = _body(namespaces=list(namespaces) if namespaces is not None else None)
        return self._send(Call("POST", "/v1/admin/dream/start", json=body, idempotency_key=idempotency_key))

    def dream_runs(self, namespace: str, *, limit: int = 5) -> R:
        """The last recorded dreaming runs of a namespace, newest first (signals and gates per candidate)."""
        return self._send(
            Call("GET", "/v1/admin/dream/runs", params={"namespace": namespace, "limit": limit})
        )

    def curate(
        self,
        *,
        namespace: str | None = None,
        dry_run: bool | None = None,
        force: bool | None = None,
        idempotency_key: str | None = None,
    ) -> R:
        body = _body(namespace=namespace, dry_run=dry_run, force=force)
        return self._send(Call("POST", "/v1/admin/curate", json=body, idempotency_key=idempotency_key))

    def curator_run(self, namespace: str, day: str) -> R:
        params = {"namespace": namespace, "day": day}
        return self._send(Call("GET", "/v1/admin/curator/runs", params=params))

    def accept_curator_proposal(
        self, namespace: str, day: str, proposal_id: str, *, idempotency_key: str | None = None
    ) -> R:
        body = {"namespace": namespace, "day": day, "proposal_id": proposal_id}
        return self._send(
            Call("POST", "/v1/admin/curator/accept", json=body, idempotency_key=idempotency_key)
        )

    # ------------------------------------------------------------------------------------ admin: erasure

    def plan_purge(
        self,
        kind: PurgeKind,
        *,
        namespace: str | None = None,
        record_id: str | None = None,
        subject: str | None = None,
        idempotency_key: str | None = None,
    ) -> R:
        """Plan a purge (admin scope): exactly what would be removed; nothing is removed until executed."""
        body = _body(kind=kind, namespace=namespace, record_id=record_id, subject=subject)
        return self._send(Call("POST", "/v1/admin/purges", json=body, idempotency_key=idempotency_key))

    def list_purges(self) -> R:
        return self._send(Call("GET", "/v1/admin/purges"))

    def get_purge(self, plan_id: str) -> R:
        return self._send(Call("GET", f"/v1/admin/purges/{_seg(plan_id)}"))

    def execute_purge(self, plan_id: str, reason: str, *, idempotency_key: str | None = None) -> R:
        """Execute a planned purge (irreversible erasure; resumable) and verify it."""
        return self._send(
            Call(
                "POST",
                f"/v1/admin/purges/{_seg(plan_id)}/execute",
                json={"reason": reason},
                idempotency_key=idempotency_key,
            )
        )

    # ------------------------------------------------------------------ admin: embedding-model migration

    def plan_migration(
        self,
        embedder: str,
        *,
        batch_size: int | None = None,
        page_size: int | None = None,
        rpm: int | None = None,
        tpm: int | None = None,
        min_coverage: float | None = None,
        min_overlap_at_10: float | None = None,
        idempotency_key: str | None = None,
    ) -> R:
        body = _body(
            embedder=embedder,
            batch_size=batch_size,
            page_size=page_size,
            rpm=rpm,
            tpm=tpm,
            min_coverage=min_coverage,
            min_overlap_at_10=min_overlap_at_10,
        )
        return self._send(
            Call("POST", "/v1/admin/migration/plan", json=body, idempotency_key=idempotency_key)
        )

    def start_migration(self, *, idempotency_key: str | None = None) -> R:
        return self._send(Call("POST", "/v1/admin/migration/start", idempotency_key=idempotency_key))

    def migration_status(self) -> R:
        return self._send(Call("GET", "/v1/admin/migration/status"))

    def retry_migration(self, *, idempotency_key: str | None = None) -> R:
        return self._send(Call("POST", "/v1/admin/migration/retry", idempotency_key=idempotency_key))

    def switch_migration(self, *, idempotency_key: str | None = None) -> R:
        return self._send(Call("POST", "/v1/admin/migration/switch", idempotency_key=idempotency_key))

    def rollback_migration(self, *, reason: str | None = None, idempotency_key: str | None = None) -> R:
        return self._send(
            Call(
                "POST",
                "/v1/admin/migration/rollback",
                json=_body(reason=reason),
                idempotency_key=idempotency_key,
            )
        )

    def archive_migration(self, *, idempotency_key: str | None = None) -> R:
        return self._send(Call("POST", "/v1/admin/migration/archive", idempotency_key=idempotency_key))
