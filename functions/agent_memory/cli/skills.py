"""`agent-memory skills …` and `agent-memory curate`: skills and the curator on the local data directory.

    agent-memory skills list -n NS [--status active|stale|archived]
    agent-memory skills view NAME -n NS [--no-record]
    agent-memory skills create NAME -n NS --description TEXT (--body TEXT | --body-file PATH)
                               [--provenance agent|human|imported] [--pinned]
    agent-memory skills edit NAME -n NS (--body TEXT | --body-file PATH) [--description TEXT]
    agent-memory skills patch NAME -n NS --heading '## Steps' (--content TEXT | --content-file PATH)
    agent-memory skills archive|restore NAME -n NS [--note TEXT]
    agent-memory skills use NAME -n NS
    agent-memory skills outcome NAME -n NS helped|failed|misled [--note TEXT]
    agent-memory skills history NAME -n NS
    agent-memory skills accept PROPOSAL_ID -n NS --day YYYY-MM-DD
    agent-memory curate [-n NS ...] [--dry-run] [--force] [--json]

The CLI acts as the data directory's owner (actor `cli`), so it may set any provenance and pin skills.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..domain.skills.curator import CuratorService, render_report
from ..domain.skills.document import Provenance, SkillStatus, render
from ..domain.skills.service import Skill, SkillsService

ACTOR = "cli"


def add_skills_parsers(subparsers: Any) -> None:
    skills = subparsers.add_parser(
        "skills", help="agent skills: list, view, create, edit, patch, archive, restore"
    )
    commands = skills.add_subparsers(dest="skills_command", required=True)

    def sub(name: str, help_text: str, *, named: bool = True) -> argparse.ArgumentParser:
        parser = commands.add_parser(name, help=help_text)
        if named:
            parser.add_argument("name", help="skill name, e.g. deploy-checklist")
        parser.add_argument("--namespace", "-n", required=True, help="namespace, e.g. /projects/billing")
        return parser

    listing = sub("list", "list skills (no bodies)", named=False)
    listing.add_argument(
        "--status", choices=[s.value for s in SkillStatus], help="only skills in this status"
    )
    view = sub("view", "print a skill (records a view)")
    view.add_argument("--no-record", action="store_true", help="do not record the view as a use")
    create = sub("create", "create a skill")
    create.add_argument("--description", required=True, help="one line: when to use the skill")
    _text_options(create, "body")
    create.add_argument(
        "--provenance",
        choices=[p.value for p in Provenance],
        default="human",
        help="who wrote it (default human: the CLI is a person); the curator changes only agent skills",
    )
    create.add_argument("--pinned", action="store_true", help="never changed by the curator")
    edit = sub("edit", "replace a skill's body (and description)")
    edit.add_argument("--description", help="a new one-line description")
    _text_options(edit, "body")
    patch = sub("patch", "replace one section of a skill")
    patch.add_argument("--heading", required=True, help="the section's heading, e.g. '## Steps'")
    _text_options(patch, "content")
    for name in ("archive", "restore"):
        sub(name, f"{name} a skill").add_argument("--note", default="", help="why (kept in the change log)")
    sub("use", "record a use of a skill")
    outcome = sub("outcome", "report the outcome of a use")
    outcome.add_argument("outcome", choices=["helped", "failed", "misled"], help="how the use went")
    outcome.add_argument("--note", default="", help="what happened")
    sub("history", "print a skill's change log")
    accept = commands.add_parser("accept", help="accept a curator proposal")
    accept.add_argument("proposal_id", help="the proposal's id, from the run's REPORT.md")
    accept.add_argument("--namespace", "-n", required=True, help="namespace of the run")
    accept.add_argument("--day", required=True, help="the run's day, YYYY-MM-DD")

    curate = subparsers.add_parser("curate", help="run the skills curator now (active → stale → archived)")
    curate.add_argument("--namespace", "-n", action="append", help="namespace (repeatable; default: all)")
    curate.add_argument("--dry-run", action="store_true", help="report the decisions, change nothing")
    curate.add_argument("--force", action="store_true", help="run again although today's run completed")
    curate.add_argument("--json", action="store_true", help="print run.json instead of REPORT.md")


def _text_options(parser: argparse.ArgumentParser, name: str) -> None:
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument(f"--{name}", help=f"the {name} text")
    group.add_argument(f"--{name}-file", type=Path, help=f"read the {name} from this file")


def _text(args: argparse.Namespace, name: str) -> str:
    value = getattr(args, name)
    if value is not None:
        return str(value)
    return Path(getattr(args, f"{name}_file")).read_text(encoding="utf-8")


def _summary(skill: Skill, *, body: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = skill.meta.model_dump(mode="json")
    data["signals"] = skill.signals.as_dict()
    if body:
        data["body"] = skill.body
    return data


def run_skills(args: argparse.Namespace, runtime: Any) -> int:
    services = runtime.services
    if args.command == "curate":
        return _curate(args, services.curator)
    skills: SkillsService = services.skills
    tenant, ns, command = args.tenant, args.namespace, args.skills_command
    if command == "list":
        statuses = [SkillStatus(args.status)] if args.status else []
        listing = skills.list_skills(tenant, ns, statuses)
        _print({"skills": [_summary(s) for s in listing.skills], "unreadable": listing.unreadable})
    elif command == "view":
        skill = (
            skills.get(tenant, ns, args.name)
            if args.no_record
            else skills.view(tenant, ns, args.name, actor=ACTOR)
        )
        print(render(skill.meta, skill.body), end="")
    elif command == "create":
        skill = skills.create(
            tenant,
            ns,
            args.name,
            description=args.description,
            body=_text(args, "body"),
            actor=ACTOR,
            provenance=Provenance(args.provenance),
            pinned=args.pinned,
        )
        _print(_summary(skill))
    elif command == "edit":
        _print(
            _summary(
                skills.edit(
                    tenant, ns, args.name, body=_text(args, "body"), description=args.description, actor=ACTOR
                )
            )
        )
    elif command == "patch":
        skill = skills.patch(
            tenant, ns, args.name, heading=args.heading, content=_text(args, "content"), actor=ACTOR
        )
        _print(_summary(skill))
    elif command == "archive":
        _print(_summary(skills.archive(tenant, ns, args.name, actor=ACTOR, note=args.note)))
    elif command == "restore":
        _print(_summary(skills.restore(tenant, ns, args.name, actor=ACTOR, note=args.note)))
    elif command == "use":
        _print(skills.record_use(tenant, ns, args.name, actor=ACTOR).as_dict())
    elif command == "outcome":
        _print(
            skills.report_outcome(tenant, ns, args.name, args.outcome, actor=ACTOR, note=args.note).as_dict()
        )
    elif command == "history":
        _print(skills.history(tenant, ns, args.name))
    elif command == "accept":
        curator: CuratorService = services.curator
        changed = curator.accept_proposal(tenant, ns, args.day, args.proposal_id, actor=ACTOR)
        _print({"proposal_id": args.proposal_id, "skills": [_summary(s) for s in changed]})
    return 0


def _curate(args: argparse.Namespace, curator: CuratorService) -> int:
    namespaces = args.namespace or curator.namespaces(args.tenant)
    if not namespaces:
        print(f"agent-memory: tenant {args.tenant!r} has no namespace with skills", file=sys.stderr)
        return 0
    reports = [curator.run(args.tenant, ns, dry_run=args.dry_run, force=args.force) for ns in namespaces]
    if args.json:
        _print([report.to_dict() for report in reports])
        return 0
    for report in reports:
        if report.status == "already_done":
            print(
                f"{report.namespace} {report.day}: already curated by run {report.run_id} (--force to run again)"
            )
            continue
        print(render_report(report))
    return 0


def _print(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2, default=str))
