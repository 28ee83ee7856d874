"""`agent-memory purge`: erasure on the local data directory (hooked into cli/main.py).

    agent-memory purge plan --memory ID | --namespace NS | --subject TEXT | --whole-tenant
    agent-memory purge execute PLAN_ID --reason TEXT   # idempotent; run again to resume
    agent-memory purge status PLAN_ID
    agent-memory purge list

The CLI acts as the data directory's owner and runs any purge inline (no size limit). Executing a
`--whole-tenant` plan also disables every local API key of the tenant (offboarding)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..domain.erasure.model import PurgeKind, PurgePlan, PurgeState, PurgeTarget

ACTOR = "cli"


def add_purge_parser(subparsers: Any) -> argparse.ArgumentParser:
    purge = subparsers.add_parser(
        "purge", help="erase a memory, a namespace, a subject or the tenant (audited)"
    )
    verbs = purge.add_subparsers(dest="purge_command", required=True)
    plan = verbs.add_parser("plan", help="list exactly what a purge would remove (stores nothing else)")
    target = plan.add_mutually_exclusive_group(required=True)
    target.add_argument("--memory", help="a memory id: the memory with its lineage")
    target.add_argument("--namespace", help="a namespace: everything in it")
    target.add_argument("--subject", help="an id or a text: every memory (and file line) naming it")
    target.add_argument("--whole-tenant", action="store_true", help="the tenant's data in every store")
    execute = verbs.add_parser("execute", help="execute a plan, then verify zero remaining copies")
    execute.add_argument("plan_id", help="the id `purge plan` printed")
    execute.add_argument("--reason", required=True, help="why (kept in the tombstone)")
    status = verbs.add_parser("status", help="a plan's state, steps and verification")
    status.add_argument("plan_id", help="the id `purge plan` printed")
    verbs.add_parser("list", help="the tenant's purge plans and tombstones, newest first")
    return purge


def _public(plan: PurgePlan) -> dict[str, Any]:
    return plan.model_dump(mode="json", exclude={"needles", "record_namespaces", "record_hashes"})


def run_purge(args: argparse.Namespace, runtime: Any) -> int:
    service = runtime.services.erasure
    tenant, verb = args.tenant, args.purge_command
    if verb == "plan":
        if args.memory:
            target = PurgeTarget(kind=PurgeKind.MEMORY, record_id=args.memory)
        elif args.namespace:
            target = PurgeTarget(kind=PurgeKind.NAMESPACE, namespace=args.namespace)
        elif args.subject:
            target = PurgeTarget(kind=PurgeKind.SUBJECT, subject=args.subject)
        else:
            target = PurgeTarget(kind=PurgeKind.TENANT)
        result: Any = _public(service.plan(tenant, target, actor=ACTOR))
    elif verb == "execute":
        plan = service.execute(tenant, args.plan_id, reason=args.reason, actor=ACTOR, inline=False)
        result = _public(plan)
        if plan.target.kind is PurgeKind.TENANT and plan.state is PurgeState.COMPLETED:
            disabled = [
                entry["key_id"]
                for entry in runtime.keys.list()
                if entry.get("tenant") == tenant
                and not entry.get("disabled")
                and runtime.keys.disable(entry["key_id"])
            ]
            result["disabled_keys"] = disabled
    elif verb == "status":
        result = _public(service.status(tenant, args.plan_id))
    else:
        result = {"purges": [_public(p) for p in service.list(tenant)]}
    print(json.dumps(result, ensure_ascii=False, indent=2, default=str))
    return 0 if verb != "execute" or result["state"] == PurgeState.COMPLETED.value else 1
