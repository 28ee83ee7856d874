"""What a skill's text must be before anything is written: a one-line description, a body within its size
that does not read as front matter, and notes, each through the same safety scan as memory files."""

from __future__ import annotations

from collections.abc import Callable

from .. import safety
from ..errors import TooLarge, UnsafeContent, ValidationFailed
from .config import SkillsConfig


class SkillText:
    """The checks of a skill's description, body and notes under one configuration and safety scanner."""

    def __init__(self, config: SkillsConfig, scanner: Callable[[str], str | None]) -> None:
        self.config = config
        self._scan = scanner

    def description(self, description: str) -> str:
        if not isinstance(description, str):
            raise ValidationFailed("description must be text")
        flat = " ".join(safety.normalise(description).split())
        if not flat:
            raise ValidationFailed("description is empty: say in one line when to use this skill")
        if len(flat) > self.config.max_description_chars:
            raise TooLarge(
                f"the description is {len(flat):,} characters; at most {self.config.max_description_chars:,} "
                "(one line: what the skill is for)",
                limit=self.config.max_description_chars,
            )
        self.check_safe(flat)
        return flat

    def body(self, body: str) -> str:
        if not isinstance(body, str):
            raise ValidationFailed("body must be text")
        text = safety.normalise(body.replace("\r\n", "\n").replace("\r", "\n")).strip("\n")
        if not text.strip():
            raise ValidationFailed("body is empty: write the procedure")
        if len(text) > self.config.max_body_chars:
            raise TooLarge(
                f"the skill body is {len(text):,} characters; at most {self.config.max_body_chars:,}: split it "
                "into smaller skills",
                limit=self.config.max_body_chars,
                would_be=len(text),
            )
        if any(line.strip() == "---" for line in text.split("\n")[:1]):
            raise ValidationFailed("the body may not start with a '---' line (it would read as front matter)")
        self.check_safe(text)
        return text

    def check_note(self, note: str) -> None:
        """A change note is kept in the change log and shown with the skill's history: scanned like its body."""
        if isinstance(note, str) and note.strip():
            self.check_safe(" ".join(safety.normalise(note).split()))

    def check_safe(self, text: str) -> None:
        rule = self._scan(text)
        if rule is not None:
            raise UnsafeContent(
                f"skill text refused by the safety scan (rule '{rule}'); rephrase it as a plain procedure",
                rule=rule,
            )

    def outcome_note(self, note: str) -> str:
        """An outcome's note, whitespace-normalised, within its size and scanned (empty is fine)."""
        if not isinstance(note, str):
            raise ValidationFailed("note must be text")
        flat = " ".join(safety.normalise(note).split())
        if len(flat) > self.config.max_note_chars:
            raise TooLarge(
                f"the note is {len(flat):,} characters; at most {self.config.max_note_chars:,}",
                limit=self.config.max_note_chars,
            )
        if flat:
            self.check_safe(flat)
        return flat
