"""The entry-file format of `MEMORY.md` and `USER.md`: entries separated by a delimiter line `§`, parsed
tolerantly and rendered canonically, and the whitespace-normalised matching that picks the one entry an edit
names (DESIGN §2 "Memory files")."""

from __future__ import annotations

from ..errors import AmbiguousMatch, NotFound, ValidationFailed

DELIMITER = "§"
ENTRY_SEPARATOR = f"\n{DELIMITER}\n"
_PREVIEW_CHARS = 60


def parse_entries(text: str) -> list[str]:
    """Entries of an entry file. Tolerates hand edits: CRLF or CR line ends, blank lines, leading, trailing or
    repeated delimiter lines and a missing trailing newline. Entries are stripped; empty ones are dropped."""
    entries: list[str] = []
    current: list[str] = []
    for line in normalise_newlines(text).split("\n"):
        if line.strip() == DELIMITER:
            entries.append("\n".join(current).strip())
            current = []
        else:
            current.append(line)
    entries.append("\n".join(current).strip())
    return [entry for entry in entries if entry]


def render_entries(entries: list[str]) -> str:
    """The canonical file text: entries joined by the delimiter line, with one trailing newline."""
    return ENTRY_SEPARATOR.join(entries) + "\n" if entries else ""


def normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def squash(text: str) -> str:
    """Whitespace-normalised form used for duplicate detection and substring matching."""
    return " ".join(text.split())


def preview(text: str) -> str:
    flat = squash(text)
    return flat if len(flat) <= _PREVIEW_CHARS else flat[: _PREVIEW_CHARS - 1] + "…"


def prepare_match(match: str) -> str:
    needle = squash(match) if isinstance(match, str) else ""
    if not needle:
        raise ValidationFailed("match is empty: give a substring of the entry to change")
    return needle


def select(entries: list[str], needle: str, path: str) -> int:
    """Index of the one entry containing `needle` (whitespace-normalised, case-sensitive)."""
    hits = [index for index, entry in enumerate(entries) if needle in squash(entry)]
    if not hits:
        raise NotFound(f"no entry contains '{preview(needle)}' in {path}", path=path, match=needle)
    # Hand-edited files may hold identical entries; acting on the first of identical twins is unambiguous.
    if len({squash(entries[index]) for index in hits}) > 1:
        previews = [preview(entries[index]) for index in hits]
        listing = "; ".join(f"{n}) '{text}'" for n, text in enumerate(previews, start=1))
        raise AmbiguousMatch(
            f"'{preview(needle)}' matches {len(hits)} entries in {path}; use a longer substring that "
            f"appears in only one of them: {listing}",
            path=path,
            match=needle,
            count=len(hits),
            previews=previews,
        )
    return hits[0]
