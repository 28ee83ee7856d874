"""The import report: the inventory's view, and the Markdown a person reads (every skipped or rejected item
listed with its place, source ref and reason; the counts add up to the items found)."""

from __future__ import annotations

from .model import Decisions, ImportReport, Inventory, InventoryView, ItemKind, SkippedFile

MAX_LISTED_SKIPPED = 200


def _skipped(files: list[tuple[str, str]]) -> list[SkippedFile]:
    """At most `MAX_LISTED_SKIPPED` skipped files by name (a home directory holds thousands), then a count."""
    listed = [SkippedFile(path=p, reason=r) for p, r in files[:MAX_LISTED_SKIPPED]]
    if len(files) > MAX_LISTED_SKIPPED:
        listed.append(SkippedFile(path="…", reason=f"{len(files) - MAX_LISTED_SKIPPED} more files skipped"))
    return listed


def inventory_view(found: Inventory) -> InventoryView:
    return InventoryView(
        format=found.format,
        files=found.files,
        entries=found.count(ItemKind.ENTRY),
        notes=found.count(ItemKind.NOTE),
        turns=found.count(ItemKind.TURN),
        memories=found.count(ItemKind.MEMORY),
        skills=found.count(ItemKind.SKILL),
        skill_files=found.count(ItemKind.SKILL_FILE),
        topics=found.count(ItemKind.TOPIC),
        items=len(found.items),
        skipped_files=_skipped(found.skipped_files),
    )


def _place(path: str, line: int | None) -> str:
    return f"`{path}{f':{line}' if line else ''}`"


def render_markdown(report: ImportReport) -> str:
    """The report for a person: what was found, what each item became, every item not written and why, the
    checks."""
    d, f, inv = report.decisions, report.files, report.inventory
    lines = [
        f"# Import {report.id}",
        "",
        f"- source: `{report.source}` ({report.format}) → `{report.namespace}` (tenant `{report.tenant}`)",
        f"- state: **{report.state.value}**{' (dry run: nothing written)' if report.dry_run else ''}",
        f"- started {report.started_at.isoformat()}"
        + (f", finished {report.finished_at.isoformat()}" if report.finished_at else ""),
        "",
        "## Inventory",
        "",
        f"{len(inv.files)} files: {inv.entries} entries, {inv.notes} notes, {inv.topics} topic files and rules, "
        f"{inv.turns} turns, {inv.memories} memories, {inv.skills} skills with {inv.skill_files} files beside "
        f"their SKILL.md ({inv.items} items)",
    ]
    for skipped in inv.skipped_files:
        lines.append(f"- skipped `{skipped.path}`: {skipped.reason}")
    lines += ["", "## Decisions", "", "| decision | count |", "|---|---|"]
    lines += [f"| {name} | {getattr(d, name)} |" for name in Decisions.model_fields]
    lines += [
        "",
        f"Memory files: {f.entries_added} entries added, {f.duplicates} already present, {f.over_cap} over the cap, "
        f"{f.refused} refused by the safety scan.",
    ]
    lines += _listed(report)
    lines += _checks(report)
    return "\n".join(lines) + "\n"


def _listed(report: ImportReport) -> list[str]:
    lines: list[str] = []
    if report.rejected:
        lines += ["", f"## Rejected ({report.decisions.rejected})", ""]
        lines += [
            f"- {_place(r.path, r.line)}: {r.reason}"
            + (f" [{r.rule}]" if r.rule else "")
            + f" (ref `{r.ref}`)"
            for r in report.rejected
        ]
    if report.skipped:
        lines += ["", f"## Skipped ({len(report.skipped)})", ""]
        lines += [f"- {_place(s.path, s.line)}: {s.reason} (ref `{s.ref}`)" for s in report.skipped]
    if report.unlisted:
        lines += [
            "",
            f"{report.unlisted} more skipped or rejected items are counted above but not listed here.",
        ]
    return lines


def _checks(report: ImportReport) -> list[str]:
    recall, decay_check = report.preference_recall, report.decay
    lines = ["", "## Checks", ""]
    if recall.sampled:
        lines.append(
            f"- preference recall by paraphrase: {recall.hits}/{recall.sampled} (hit rate {recall.hit_rate:.2f})"
        )
    else:
        lines.append("- preference recall by paraphrase: no preference imported in this run")
    if decay_check.ref:
        lines.append(f"- expired item `{decay_check.ref}` excluded: {decay_check.excluded}")
    else:
        lines.append(f"- expiry: {decay_check.note or 'not run'}")
    if report.rollback:
        r = report.rollback
        lines += [
            "",
            "## Rollback",
            "",
            f"{r.archived} records archived, {r.files_removed} file entries removed, "
            f"{r.skills_archived} skills archived, {r.reinstated} superseded records reinstated, "
            f"{r.left_in_place} merged records left in place ({r.actor}, {r.at.isoformat()})",
        ]
    return lines
