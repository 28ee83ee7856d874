"""A skill's other files: what sits beside its SKILL.md in the skill folder (`references/`, `scripts/`,
`assets/`, a top-level `reference.md` or `LICENSE.txt`), kept whole so the folder works as the tool that wrote
it had it (SKILL.md links to `references/api.md`; an agent runs `scripts/check.sh`).

They live where the source had them, `skills/<name>/<relative path>` in the namespace's file store, so an agent
reading the folder (S3 Files, the local data directory) sees the skill as written, and export, snapshots and
restore carry them like every other memory file. Rules, each refused with a message naming the file:

- text only (the file store holds text): a type of `SKILL_FILE_SUFFIXES`, UTF-8 without NUL bytes;
- at most `max_file_chars` characters a file and `max_files` files a skill;
- not a name the skill keeps for itself (`SKILL.md`, `changes.json`, `signals.json`, `versions/`), nor one that
  reads as another namespace's file (`MEMORY.md`, `USER.md`, `memory/YYYY-MM-DD.md`, `skills/<x>/...`);
- the same safety scan as every skill text (a script holding a credential is refused, not stored);
- never overwrites: a file already there with other text is kept and the new one refused (say so, decide by
  hand); the same text again is `existing`.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

from .. import safety
from ..errors import Conflict, NotFound, PathEscape, TooLarge, UnsafeContent, ValidationFailed
from ..files.memory_files import SKILL_FILE_SUFFIXES, is_own_path, validate_file_path
from ..ports import FileStore
from .config import SkillsConfig
from .document import validate_name

SKILLS_DIR = "skills"
RESERVED = ("SKILL.md", "changes.json", "signals.json")
RESERVED_DIRS = ("versions/",)


class SkillFileOutcome(StrEnum):
    ADDED = "added"
    EXISTING = "existing"


class SkillFiles:
    """The files beside a skill's SKILL.md, on the namespace's file store."""

    def __init__(self, files: FileStore, scanner: Callable[[str], str | None], config: SkillsConfig) -> None:
        self._files = files
        self._scan = scanner
        self.config = config

    def list(self, tenant: str, namespace: str, name: str) -> list[str]:
        """The skill's own files other than SKILL.md and its bookkeeping, relative to the skill folder."""
        base = f"{SKILLS_DIR}/{validate_name(name)}/"
        found = [path.removeprefix(base) for path in self._files.list(tenant, namespace, base)]
        return [rel for rel in found if not _reserved(rel)]

    def read(self, tenant: str, namespace: str, name: str, path: str) -> str | None:
        return self._files.read(tenant, namespace, self.full_path(name, path))

    def add(self, tenant: str, namespace: str, name: str, path: str, text: str) -> SkillFileOutcome:
        """Keep `text` as the skill's file `path` (relative to its folder). The skill must exist."""
        full = self.full_path(name, path)
        text = self.check_text(path, text)
        if self._files.read(tenant, namespace, f"{SKILLS_DIR}/{name}/SKILL.md") is None:
            raise NotFound(f"no skill {name!r} in {namespace} to keep {path} in", name=name)
        present = self.list(tenant, namespace, name)
        if path not in present and len(present) >= self.config.max_files:
            raise TooLarge(
                f"skill {name!r} already keeps {len(present)} files beside its SKILL.md, the most one skill "
                f"keeps ({self.config.max_files}); {path} is not kept",
                limit=self.config.max_files,
            )
        outcome: list[SkillFileOutcome] = []

        def keep(current: str | None) -> str:
            if current is None:
                outcome.append(SkillFileOutcome.ADDED)
                return text
            if current == text:
                outcome.append(SkillFileOutcome.EXISTING)
                return current
            raise Conflict(
                f"skill {name!r} already has a different {path}; kept it as it is (compare and merge by hand)",
                name=name,
                path=path,
            )

        self._files.update(tenant, namespace, full, keep)
        return outcome[-1]

    def full_path(self, name: str, path: str) -> str:
        """`skills/<name>/<path>`, checked: a name the skill keeps for itself, a path escaping the folder, a
        type the folder does not keep or a name that reads as another namespace's file is refused."""
        if not isinstance(path, str) or not path:
            raise ValidationFailed("a skill file needs a path relative to its skill folder")
        if _reserved(path):
            raise ValidationFailed(
                f"{path} is a name the skill keeps for itself (SKILL.md, changes.json, signals.json, versions/); "
                "rename the file to keep it",
                path=path,
            )
        full = f"{SKILLS_DIR}/{validate_name(name)}/{path}"
        try:
            validate_file_path(full)
        except PathEscape:
            raise
        except ValidationFailed as error:
            kinds = " ".join(SKILL_FILE_SUFFIXES)
            raise ValidationFailed(
                f"{path} cannot be kept in skill {name!r}: {error.message} (a skill keeps text files: {kinds})",
                path=path,
            ) from None
        if not is_own_path(full):
            raise ValidationFailed(
                f"{path} is named like a namespace's own file (MEMORY.md, USER.md, memory/YYYY-MM-DD.md or "
                "skills/<name>/...): stored there it would read as another namespace's; rename it to keep it",
                path=path,
            )
        return full

    def check_text(self, path: str, text: str) -> str:
        """The file's text as kept (line ends as written), or why it is not kept."""
        if not isinstance(text, str) or "\x00" in text:
            raise ValidationFailed(
                f"{path} is binary (NUL bytes), not text: a skill keeps text files", path=path
            )
        if len(text) > self.config.max_file_chars:
            raise TooLarge(
                f"{path} is {len(text):,} characters; a skill file keeps at most {self.config.max_file_chars:,}",
                limit=self.config.max_file_chars,
                path=path,
            )
        rule = self._scan(safety.normalise(text))
        if rule is not None:
            raise UnsafeContent(
                f"{path} refused by the safety scan (rule '{rule}'); remove what it flags to keep the file",
                rule=rule,
                path=path,
            )
        return text


def _reserved(rel: str) -> bool:
    return rel in RESERVED or rel.startswith(RESERVED_DIRS)
