"""Onboard tenants and manage API keys of a deployed stack, without editing code or redeploying.

    .venv/bin/python -m infra.onboard tenant acme --namespaces '*' --scopes read,write
    .venv/bin/python -m infra.onboard api-key acme --namespaces '/projects/*' --scopes read
    .venv/bin/python -m infra.onboard disable-key key_0123456789abcdef
    .venv/bin/python -m infra.onboard offboard acme --purge-plan purge_<id>

Offboarding (docs/security.md, erasure): first purge the tenant's data with a key holding `admin` and `purge`
(`POST /v1/admin/purges {"kind": "tenant"}`, then `.../execute`; the plan's verification must report zero
remaining copies), then `offboard` disables every key of the tenant, deletes its vector indexes and its
embedding-migration archives, then
remove the tenant from `tenants` in cdk.json and `cdk deploy` (its schedules go with it).

The index shape (dimension, metric, metadata keys) and the stack name come from cdk.json, the same values
the deployment used. Credentials: the default AWS chain or --profile (administrator rights on the stack's
vector bucket, API keys table and API Gateway usage plan)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from agent_memory.adapters.aws.onboarding import IndexSpec, IssuedKey, TenantOnboarding
from agent_memory.domain.errors import DomainError

from .config import CONTEXT_KEY, ConfigError, DeploymentConfig, load_cdk_json_context

DEFAULT_CDK_JSON = Path(__file__).resolve().parent.parent / "cdk.json"

OnboardingFactory = Callable[[str, str | None, str | None], TenantOnboarding]


def _default_factory(stack_name: str, region: str | None, profile: str | None) -> TenantOnboarding:
    return TenantOnboarding.for_stack(stack_name, region=region, profile=profile)


def _csv(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _purge_plan_id(value: str) -> str:
    if not re.fullmatch(r"purge_[0-9a-f]{32}", value):
        raise argparse.ArgumentTypeError(f"not a purge plan id (purge_<32 hex>): {value!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m infra.onboard", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cdk-json", type=Path, default=DEFAULT_CDK_JSON, help="deployment config (cdk.json)"
    )
    parser.add_argument("--stack-name", help="deployed stack (default: stack_name from cdk.json)")
    parser.add_argument("--region", help="AWS region of the stack (default: from the AWS config)")
    parser.add_argument("--profile", help="named AWS profile to use")
    commands = parser.add_subparsers(dest="command", required=True)

    tenant = commands.add_parser("tenant", help="create the tenant's vector index and its first API key")
    api_key = commands.add_parser("api-key", help="issue another API key for an existing tenant")
    for sub in (tenant, api_key):
        sub.add_argument("tenant", help="tenant id: 3-40 of a-z, 0-9, '-'")
        sub.add_argument(
            "--namespaces", type=_csv, default=["*"], help="comma-separated patterns: /x, /x/* or * (default)"
        )
        sub.add_argument(
            "--scopes",
            type=_csv,
            default=["read", "write"],
            help="comma-separated: read, write, admin, purge",
        )
    tree = commands.add_parser(
        "tree-index",
        help="backfill the namespace-tree index of a tenant's older records (resumable; run after a deploy)",
    )
    tree.add_argument("tenant", help="tenant id")
    tree.add_argument("--max-records", type=int, help="stop after this many records (run again to go on)")
    disable = commands.add_parser("disable-key", help="disable an API key by its key id")
    disable.add_argument("key_id")
    offboard = commands.add_parser(
        "offboard", help="after a completed tenant purge: disable the tenant's keys, delete its indexes"
    )
    offboard.add_argument("tenant", help="tenant id")
    offboard.add_argument(
        "--purge-plan",
        required=True,
        type=_purge_plan_id,
        help="id of the tenant's completed purge plan (kept with the output as the erasure's record)",
    )
    return parser


def main(argv: Sequence[str] | None = None, factory: OnboardingFactory = _default_factory) -> int:
    args = build_parser().parse_args(argv)
    try:
        config = DeploymentConfig.from_context(load_cdk_json_context(args.cdk_json).get(CONTEXT_KEY))
    except (ConfigError, OSError, json.JSONDecodeError) as exc:
        print(f"error: cannot use the deployment config {args.cdk_json}: {exc}", file=sys.stderr)
        return 2
    stack_name = args.stack_name or config.stack_name
    region = args.region or config.region
    try:
        onboarding = factory(stack_name, region, args.profile)
        if args.command == "tenant":
            spec = IndexSpec(
                dimension=config.embedding.dimensions,
                distance_metric=config.embedding.distance_metric,
                non_filterable_metadata_keys=config.embedding.non_filterable_metadata_keys,
            )
            result = onboarding.onboard(args.tenant, spec, namespaces=args.namespaces, scopes=args.scopes)
            output = {
                "tenant": result.tenant,
                "index_created": result.index_created,
                **_key_output(result.key),
            }
        elif args.command == "api-key":
            issued = onboarding.issue_api_key(args.tenant, args.namespaces, args.scopes)
            output = {"tenant": args.tenant, **_key_output(issued)}
        elif args.command == "tree-index":
            done = onboarding.tree_index(args.tenant, max_records=args.max_records)
            output = {
                "tenant": done.tenant,
                "read": done.read,
                "updated": done.updated,
                "complete": done.complete,
            }
        elif args.command == "offboard":
            ended = onboarding.offboard(args.tenant)
            output = {
                "tenant": ended.tenant,
                "purge_plan": args.purge_plan,
                "disabled_keys": ended.disabled_keys,
                "deleted_indexes": list(ended.deleted_indexes),
                "deleted_archives": ended.deleted_archives,
            }
        else:
            output = {"key_id": args.key_id, "disabled": onboarding.disable_api_key(args.key_id)}
    except DomainError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    print(json.dumps(output, indent=2))
    if args.command == "tenant" and args.tenant not in config.tenant_ids:
        entry = {"id": args.tenant, "display_name": args.tenant, "time_zone": "UTC", "create_index": False}
        print(
            f"To include {args.tenant} in scheduled jobs, add {json.dumps(entry)} to `tenants` in cdk.json "
            "and deploy (create_index false: the index already exists).",
            file=sys.stderr,
        )
    if args.command == "offboard" and args.tenant in config.tenant_ids:
        print(
            f"Now remove {args.tenant!r} from `tenants` in cdk.json and deploy: its schedules are dropped.",
            file=sys.stderr,
        )
    if "api_key" in output:
        print("Store api_key now: only its hash is kept, it cannot be shown again.", file=sys.stderr)
    return 0


def _key_output(key: IssuedKey) -> dict[str, object]:
    return {
        "key_id": key.key_id,
        "api_key": key.key,
        "namespaces": list(key.namespaces),
        "scopes": list(key.scopes),
    }


if __name__ == "__main__":
    raise SystemExit(main())
