"""The export bundle: what `agent-memory export` and `GET /v1/export` write and the bundle importer reads back.

A bundle is a set of members, kept as a directory, a single `.tar.gz`, or inline JSON (the API's form):

    manifest.json   format and version, namespaces, counts, and for every other member its bytes and SHA-256
    records.jsonl   one line per record: {"record": …, "changes": […], "links": {…}} (tenant-free)
    files/<ns>/…    the namespace's Markdown memory files (MEMORY.md, USER.md, memory/YYYY-MM-DD.md, skills/…)

It is tenant-free: no record, change entry or manifest field names the tenant it came from (the importer sets
the tenant it imports into). `files/<ns>/<path>` mirrors the namespace without its leading `/`; the manifest's
`files` list gives each member's namespace and path, so the member name is never parsed back.

Reading validates before anything is used: the format and version, that every member the manifest lists is
there with its size and hash and nothing else is, the record lines against `MemoryRecord`/`ChangeEntry`, the
counts, and size caps (`MAX_BUNDLE_BYTES`, `MAX_MEMBERS`). Packing and unpacking are in memory: the caller
(CLI or API) does the I/O.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from ..errors import TooLarge, ValidationFailed
from ..records import ChangeEntry, MemoryRecord, Status, describe_invalid, is_valid_namespace

FORMAT = "agent-memory-bundle"
VERSION = 1
MANIFEST = "manifest.json"
RECORDS = "records.jsonl"
FILES_DIR = "files"
MAX_BUNDLE_BYTES = 512 * 1024 * 1024
"""Uncompressed bytes of all members together (the CLI's ceiling; the API has its own, lower)."""
MAX_MEMBERS = 100_000
TENANT_PLACEHOLDER = "bundle"
"""Written in place of the tenant where a stored shape needs one (never a real tenant id)."""

LINK_FIELDS = ("supersedes", "superseded_by", "corrected_from", "conflict_group")


@dataclass(frozen=True)
class BundleRecord:
    """One record of a bundle: the record (tenant-free), its change log (oldest first) and its links."""

    record: dict[str, Any]
    changes: list[dict[str, Any]] = field(default_factory=list)
    links: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return str(self.record["id"])

    def load(self, tenant: str) -> MemoryRecord:
        return MemoryRecord.model_validate({**self.record, "tenant": tenant})

    def load_changes(self, tenant: str) -> list[ChangeEntry]:
        return [ChangeEntry.model_validate(_with_tenant(change, tenant)) for change in self.changes]


@dataclass(frozen=True)
class BundleFile:
    namespace: str
    path: str
    text: str

    @property
    def member(self) -> str:
        return f"{FILES_DIR}/{self.namespace.lstrip('/')}/{self.path}"


@dataclass(frozen=True)
class Bundle:
    namespaces: list[str]
    records: list[BundleRecord]
    files: list[BundleFile]
    created_at: str
    source: dict[str, Any] = field(default_factory=dict)
    """Free-form provenance of the export (service version, what was asked); never the tenant."""

    def counts(self) -> dict[str, int]:
        return {
            "records": len(self.records),
            "active_records": sum(1 for r in self.records if r.record.get("status") == Status.ACTIVE.value),
            "changes": sum(len(r.changes) for r in self.records),
            "files": len(self.files),
        }


# --------------------------------------------------------------------------- building


def tenant_free(data: dict[str, Any]) -> dict[str, Any]:
    """A record or change dict without its tenant (nested `before`/`after` record dicts too)."""
    result = {key: value for key, value in data.items() if key != "tenant"}
    for key in ("before", "after"):
        if isinstance(result.get(key), dict):
            result[key] = {k: v for k, v in result[key].items() if k != "tenant"}
    return result


def _with_tenant(change: dict[str, Any], tenant: str) -> dict[str, Any]:
    result = {**change, "tenant": tenant}
    for key in ("before", "after"):
        if isinstance(result.get(key), dict):
            result[key] = {**result[key], "tenant": tenant}
    return result


def record_entry(
    record: MemoryRecord, changes: Iterable[ChangeEntry], corrected_by: str | None
) -> BundleRecord:
    """The bundle line of a record: its dict and change log without the tenant, and its links (the record's
    own link fields, plus `corrected_by`: the record that corrected it, if any)."""
    links: dict[str, Any] = {name: getattr(record, name) for name in LINK_FIELDS}
    links["corrected_by"] = corrected_by
    links["merged_count"] = record.merged_count
    return BundleRecord(
        record=tenant_free(record.public_dict()),
        changes=[tenant_free(change.model_dump(mode="json")) for change in changes],
        links=links,
    )


def new_bundle(
    namespaces: Iterable[str],
    records: Iterable[BundleRecord],
    files: Iterable[BundleFile],
    created_at: datetime,
    source: dict[str, Any] | None = None,
) -> Bundle:
    bundle = Bundle(
        namespaces=sorted(set(namespaces)),
        records=sorted(records, key=lambda r: (str(r.record.get("created_at")), r.id)),
        files=sorted(files, key=lambda f: (f.namespace, f.path)),
        created_at=created_at.isoformat(),
        source=dict(source or {}),
    )
    members = [f.member for f in bundle.files]
    if len(members) != len(set(members)):
        raise ValidationFailed("two files of the export map to the same bundle member; export one namespace")
    return bundle


# --------------------------------------------------------------------------- members


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def to_members(bundle: Bundle) -> dict[str, bytes]:
    """Every member's bytes, `manifest.json` included (its hashes cover the other members)."""
    lines = [
        json.dumps(
            {"record": r.record, "changes": r.changes, "links": r.links}, ensure_ascii=False, sort_keys=True
        )
        for r in bundle.records
    ]
    members: dict[str, bytes] = {RECORDS: ("\n".join(lines) + "\n" if lines else "").encode("utf-8")}
    for item in bundle.files:
        members[item.member] = item.text.encode("utf-8")
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "created_at": bundle.created_at,
        "namespaces": bundle.namespaces,
        "counts": bundle.counts(),
        "source": bundle.source,
        "members": {
            name: {"bytes": len(data), "sha256": _sha256(data)} for name, data in sorted(members.items())
        },
        "files": [{"namespace": f.namespace, "path": f.path, "member": f.member} for f in bundle.files],
    }
    members[MANIFEST] = json.dumps(manifest, ensure_ascii=False, indent=2, sort_keys=True).encode("utf-8")
    return members


def from_members(members: Mapping[str, bytes]) -> Bundle:
    """Validate and read a bundle's members. Raises `ValidationFailed` (what is wrong, which member) or
    `TooLarge`; nothing is read from a member the manifest does not vouch for."""
    if len(members) > MAX_MEMBERS:
        raise TooLarge(f"the bundle has {len(members)} members, more than {MAX_MEMBERS}", limit=MAX_MEMBERS)
    total = sum(len(data) for data in members.values())
    if total > MAX_BUNDLE_BYTES:
        raise TooLarge(
            f"the bundle holds {total} bytes, more than {MAX_BUNDLE_BYTES}", limit=MAX_BUNDLE_BYTES
        )
    if MANIFEST not in members:
        raise ValidationFailed(f"not an agent-memory bundle: no {MANIFEST}")
    manifest = _json_member(MANIFEST, members[MANIFEST])
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ValidationFailed(f"not an agent-memory bundle: {MANIFEST} does not say format {FORMAT!r}")
    if manifest.get("version") != VERSION:
        raise ValidationFailed(
            f"bundle format version {manifest.get('version')!r} is not supported (this service reads {VERSION})",
            version=manifest.get("version"),
        )
    declared = manifest.get("members")
    if not isinstance(declared, dict):
        raise ValidationFailed(f"{MANIFEST} has no members table")
    present = set(members) - {MANIFEST}
    if missing := sorted(set(declared) - present):
        raise ValidationFailed(f"the bundle lacks members its manifest lists: {', '.join(missing[:5])}")
    if extra := sorted(present - set(declared)):
        raise ValidationFailed(f"the bundle has members its manifest does not list: {', '.join(extra[:5])}")
    for name, spec in declared.items():
        data = members[name]
        if (
            not isinstance(spec, dict)
            or spec.get("bytes") != len(data)
            or spec.get("sha256") != _sha256(data)
        ):
            raise ValidationFailed(
                f"bundle member {name} does not match its size or hash in {MANIFEST}", member=name
            )
    namespaces = manifest.get("namespaces")
    if not isinstance(namespaces, list) or not all(
        isinstance(n, str) and is_valid_namespace(n) for n in namespaces
    ):
        raise ValidationFailed(f"{MANIFEST} lists an invalid namespace")
    records = _records(members.get(RECORDS, b""), set(namespaces))
    files = _files(manifest.get("files"), members, set(namespaces))
    source = manifest.get("source")
    bundle = Bundle(
        namespaces=list(namespaces),
        records=records,
        files=files,
        created_at=str(manifest.get("created_at", "")),
        source=source if isinstance(source, dict) else {},
    )
    if manifest.get("counts") != bundle.counts():
        raise ValidationFailed(
            f"the bundle's contents do not match the counts of its manifest ({bundle.counts()})",
            counts=json.dumps(bundle.counts()),
        )
    return bundle


def _json_member(name: str, data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ValidationFailed(f"bundle member {name} is not UTF-8 JSON: {error}", member=name) from None


def _records(data: bytes, namespaces: set[str]) -> list[BundleRecord]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationFailed(f"{RECORDS} is not UTF-8") from None
    records: list[BundleRecord] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        item = _json_member(f"{RECORDS} line {number}", line.encode("utf-8"))
        if not isinstance(item, dict) or not isinstance(item.get("record"), dict):
            raise ValidationFailed(
                f"{RECORDS} line {number}: expected an object with a 'record'", line=number
            )
        changes = item.get("changes") or []
        links = item.get("links") or {}
        if not isinstance(changes, list) or not isinstance(links, dict):
            raise ValidationFailed(f"{RECORDS} line {number}: 'changes' must be a list, 'links' an object")
        entry = BundleRecord(record=item["record"], changes=changes, links=links)
        try:
            record = entry.load(TENANT_PLACEHOLDER)
            for change in entry.load_changes(TENANT_PLACEHOLDER):
                if change.record_id != record.id:
                    raise ValidationFailed(f"{RECORDS} line {number}: a change entry of another record")
        except ValidationError as error:
            raise ValidationFailed(
                f"{RECORDS} line {number}: {describe_invalid(error)}", line=number
            ) from None
        if record.namespace not in namespaces:
            raise ValidationFailed(
                f"{RECORDS} line {number}: namespace {record.namespace} is not in the manifest", line=number
            )
        if record.id in seen:
            raise ValidationFailed(f"{RECORDS} line {number}: record {record.id} appears twice", line=number)
        seen.add(record.id)
        records.append(entry)
    return records


def _files(listed: Any, members: Mapping[str, bytes], namespaces: set[str]) -> list[BundleFile]:
    if not isinstance(listed, list):
        raise ValidationFailed(f"{MANIFEST} has no files list")
    files: list[BundleFile] = []
    for spec in listed:
        if not isinstance(spec, dict):
            raise ValidationFailed(f"{MANIFEST}: a files entry is not an object")
        namespace, path = spec.get("namespace"), spec.get("path")
        if not isinstance(namespace, str) or namespace not in namespaces or not isinstance(path, str):
            raise ValidationFailed(
                f"{MANIFEST}: file {path!r} of namespace {namespace!r} is not in the manifest"
            )
        item = BundleFile(namespace=namespace, path=path, text="")
        if spec.get("member") != item.member or item.member not in members:
            raise ValidationFailed(f"{MANIFEST}: file {path!r} has no member {item.member}")
        try:
            text = members[item.member].decode("utf-8")
        except UnicodeDecodeError:
            raise ValidationFailed(f"bundle member {item.member} is not UTF-8 text") from None
        files.append(BundleFile(namespace=namespace, path=path, text=text))
    file_members = {f.member for f in files}
    stray = [name for name in members if name.startswith(f"{FILES_DIR}/") and name not in file_members]
    if stray:
        raise ValidationFailed(
            f"bundle members under {FILES_DIR}/ without a files entry: {', '.join(stray[:5])}"
        )
    return files


# --------------------------------------------------------------------------- containers


def pack_tar(bundle: Bundle) -> bytes:
    """The bundle as one `.tar.gz` (regular files only, fixed owner and time: the same bundle packs to the same
    members)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in sorted(to_members(bundle).items()):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def unpack_tar(data: bytes) -> Bundle:
    """Read a `.tar.gz` bundle: regular files with plain relative names only (no links, devices, absolute or
    `..` paths), within the size caps, then `from_members`."""
    members: dict[str, bytes] = {}
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            for info in archive:
                if info.isdir():
                    continue
                name = info.name.removeprefix("./")
                if not info.isfile() or not member_name_ok(name):
                    raise ValidationFailed(
                        f"bundle archive member {info.name!r} is not a plain relative file"
                    )
                total += info.size
                if total > MAX_BUNDLE_BYTES or len(members) >= MAX_MEMBERS:
                    raise TooLarge(
                        f"the bundle archive is over {MAX_BUNDLE_BYTES} bytes or {MAX_MEMBERS} members"
                    )
                extracted = archive.extractfile(info)
                members[name] = extracted.read() if extracted else b""
    except (tarfile.TarError, gzip.BadGzipFile, EOFError, OSError) as error:
        raise ValidationFailed(f"not a readable .tar.gz bundle: {error}") from None
    return from_members(members)


def member_name_ok(name: str) -> bool:
    parts = name.split("/")
    return (
        bool(name)
        and not name.startswith("/")
        and all(p not in ("", ".", "..") for p in parts)
        and "\\" not in name
    )


def to_inline(bundle: Bundle) -> dict[str, Any]:
    """The bundle as one JSON object (the API's form): the manifest and every member as text."""
    members = to_members(bundle)
    return {
        "manifest": json.loads(members[MANIFEST]),
        "members": {name: data.decode("utf-8") for name, data in members.items() if name != MANIFEST},
    }


def from_inline(document: Mapping[str, Any]) -> Bundle:
    """Read the API's inline form (what `to_inline` writes): same validation as `from_members`."""
    manifest, members = document.get("manifest"), document.get("members")
    if not isinstance(manifest, dict) or not isinstance(members, dict):
        raise ValidationFailed("an inline bundle needs 'manifest' (object) and 'members' (object of texts)")
    if not all(isinstance(name, str) and isinstance(text, str) for name, text in members.items()):
        raise ValidationFailed("an inline bundle's members are texts")
    raw = {name: text.encode("utf-8") for name, text in members.items()}
    raw[MANIFEST] = json.dumps(manifest, ensure_ascii=False).encode("utf-8")
    return from_members(raw)
