"""Skill folders kept whole (issue 32): the files beside a SKILL.md (`references/`, `scripts/`, `assets/`,
a top-level `reference.md`) are imported into the skill's folder as written, listed as skipped when binary or
too big (never dropped unsaid), refused when they would clash (a name the skill keeps for itself, one that reads
as another namespace's file, a different file already there), and carried by export into an empty tenant."""

from __future__ import annotations

import io
import tarfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_memory.adapters.archive_tree import ArchiveSourceTree
from agent_memory.adapters.posix.source_tree import PosixSourceTree
from agent_memory.domain.errors import (
    Conflict,
    NotFound,
    PathEscape,
    TooLarge,
    UnsafeContent,
    ValidationFailed,
)
from agent_memory.domain.interop import bundle as bundles
from agent_memory.domain.skills.files import SkillFileOutcome
from agent_memory.settings.service import Settings
from agent_memory.wiring.local import build_local
from tests.conftest import FixedClock

TENANT = "acme"
NS = "/me"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
SKILL = (
    "---\nname: deploy-check\ndescription: Check a deploy\n---\n\nRead [the flags](references/flags.md).\n"
)
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"
AWS_KEY = "AKIA" + "Z7Q2M4X9W3V8B5N6"


@pytest.fixture
def runtime(tmp_path):
    return build_local(Settings(data_dir=tmp_path / "data", embedder="hashing"), FixedClock(NOW))


def _hermes_home(root: Path, **extra: bytes) -> Path:
    folder = root / "skills" / "ops" / "deploy-check"
    files = {
        "SKILL.md": SKILL.encode(),
        "references/flags.md": "# Flags\n\n- `--canary 5%` first\n- widen after 10 minutes ✅\n".encode(),
        "scripts/check.sh": b"#!/bin/sh\ncurl -fsS https://status.example.com/health\n",
        "assets/diagram.png": PNG,
        "templates/notes.rb": b"puts 'deployed'\n",
        "notes.exe": b"MZ\x90\x00binary",
        "Makefile": b"check:\n\tsh scripts/check.sh\n",
        "STAMP": b"built 2026-03-01\n",
        **extra,
    }
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    (root / "memories").mkdir(parents=True)
    (root / "memories" / "MEMORY.md").write_text("Deploys go out on Tuesdays.\n", encoding="utf-8")
    return root


def _files(runtime, name: str = "deploy-check", tenant: str = TENANT) -> dict[str, str]:
    skill_files = runtime.services.skills.files
    return {rel: skill_files.read(tenant, NS, name, rel) for rel in skill_files.list(tenant, NS, name)}


def test_a_skill_folder_is_imported_whole_and_what_is_not_kept_is_listed(runtime, tmp_path) -> None:
    home = _hermes_home(tmp_path / "hermes")
    report = runtime.services.imports.run(TENANT, PosixSourceTree(home), NS, actor="test")

    kept = _files(runtime)
    assert kept == {
        "references/flags.md": (home / "skills/ops/deploy-check/references/flags.md").read_text(
            encoding="utf-8"
        ),
        "scripts/check.sh": "#!/bin/sh\ncurl -fsS https://status.example.com/health\n",
        "templates/notes.rb": "puts 'deployed'\n",
        "Makefile": "check:\n\tsh scripts/check.sh\n",  # a known text file without a type is kept
    }
    assert (report.decisions.skills_added, report.decisions.skill_files_added) == (1, 4)
    assert report.decisions.skipped_skill_file == 3 and report.inventory.skill_files == 7
    skipped = {item.path.rsplit("/", 1)[-1]: item.reason for item in report.skipped}
    assert "binary" in skipped["diagram.png"] and "binary" in skipped["notes.exe"]
    assert "a file without a type" in skipped["STAMP"]
    assert report.decisions.total() == report.inventory.items
    # the skill itself reads as before; its bookkeeping is not listed as one of its files
    assert runtime.services.skills.get(TENANT, NS, "deploy-check").body.startswith("Read [the flags]")

    again = runtime.services.imports.run(TENANT, PosixSourceTree(home), NS, actor="test")
    assert again.decisions.skipped_seen == again.inventory.items  # nothing imported twice


def test_skill_files_over_the_cap_or_unsafe_are_listed_and_the_rest_kept(runtime, tmp_path) -> None:
    huge = ("| row | value |\n" * 10_000).encode()  # 170,000 characters
    secret = f"export AWS_ACCESS_KEY_ID={AWS_KEY}\n".encode()
    home = _hermes_home(tmp_path / "hermes", **{"references/huge.md": huge, "scripts/env.sh": secret})
    report = runtime.services.imports.run(TENANT, PosixSourceTree(home), NS, actor="test")

    reasons = {item.path.rsplit("/", 1)[-1]: item.reason for item in (*report.skipped, *report.rejected)}
    assert "over the 100,000 a skill file keeps" in reasons["huge.md"]
    assert "safety scan" in reasons["env.sh"]
    assert set(_files(runtime)) == {
        "references/flags.md",
        "scripts/check.sh",
        "templates/notes.rb",
        "Makefile",
    }


def test_an_archive_and_a_directory_list_the_same_skill_files(tmp_path) -> None:
    home = _hermes_home(tmp_path / "hermes")
    (home / "src").mkdir()
    (home / "src" / "tool.py").write_text("print('not a skill file')\n", encoding="utf-8")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(home, arcname="hermes")

    from_dir = PosixSourceTree(home).paths()
    from_archive = [p.removeprefix("hermes/") for p in ArchiveSourceTree(buffer.getvalue()).paths()]

    assert from_dir == from_archive
    assert "skills/ops/deploy-check/assets/diagram.png" in from_dir and "src/tool.py" not in from_dir


def test_skill_file_rules_refuse_clashes_and_never_overwrite(runtime) -> None:
    skills = runtime.services.skills
    with pytest.raises(NotFound):
        skills.files.add(TENANT, NS, "deploy-check", "references/a.md", "text")
    skills.create(TENANT, NS, "deploy-check", description="Check a deploy", body="Steps.", actor="t")
    files = skills.files

    assert files.add(TENANT, NS, "deploy-check", "references/a.md", "first") is SkillFileOutcome.ADDED
    assert files.add(TENANT, NS, "deploy-check", "references/a.md", "first") is SkillFileOutcome.EXISTING
    with pytest.raises(Conflict, match="kept it as it is"):
        files.add(TENANT, NS, "deploy-check", "references/a.md", "second")
    assert files.read(TENANT, NS, "deploy-check", "references/a.md") == "first"
    for path in ("SKILL.md", "changes.json", "versions/1.md"):
        with pytest.raises(ValidationFailed, match="keeps for itself"):
            files.add(TENANT, NS, "deploy-check", path, "x")
    with pytest.raises(ValidationFailed, match="another namespace"):
        files.add(TENANT, NS, "deploy-check", "refs/MEMORY.md", "x")
    with pytest.raises(PathEscape):
        files.add(TENANT, NS, "deploy-check", "../other/SKILL.md", "x")
    with pytest.raises(ValidationFailed, match="a skill keeps text files"):
        files.add(TENANT, NS, "deploy-check", "bin/tool.exe", "x")
    with pytest.raises(ValidationFailed, match="binary"):
        files.add(TENANT, NS, "deploy-check", "notes.txt", "a\x00b")
    with pytest.raises(TooLarge):
        files.add(TENANT, NS, "deploy-check", "big.md", "x" * 100_001)
    with pytest.raises(UnsafeContent):
        files.add(TENANT, NS, "deploy-check", "env.sh", f"KEY={AWS_KEY}")
    assert skills.get(TENANT, NS, "deploy-check").meta.version == 1  # the skill itself untouched
    assert files.list(TENANT, NS, "deploy-check") == ["references/a.md"]


def test_export_into_an_empty_tenant_carries_the_skill_files(runtime, tmp_path) -> None:
    home = _hermes_home(tmp_path / "hermes")
    runtime.services.imports.run(TENANT, PosixSourceTree(home), NS, actor="test")
    bundle = runtime.services.versioning.export(TENANT, [NS])
    paths = {item.path for item in bundle.files}
    assert {"skills/deploy-check/references/flags.md", "skills/deploy-check/scripts/check.sh"} <= paths

    target = build_local(Settings(data_dir=tmp_path / "target", embedder="hashing"), FixedClock(NOW))
    target.services.versioning.import_bundle("other", bundles.unpack_tar(bundles.pack_tar(bundle)), actor="t")

    assert _files(target, tenant="other") == _files(runtime)
    assert target.services.skills.get("other", NS, "deploy-check").body.startswith("Read [the flags]")
