"""The IAM contract: every recorded AWS call must be allowed by the policy that governs it in the
synthesized template (tests/iam/README in docs/security.md terms: what IAM enforces, checked offline).

`check(calls, template, region)` returns one line per denied authorization, naming the role, action,
resource, the test that made the call and where in the product code it was made.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tests.aws.support import API_KEYS_TABLE, TABLE, VECTOR_BUCKET
from tests.iam.policy import Request, evaluate
from tests.iam.reference import Need, needs_for
from tests.iam.template import ResolvedTemplate, resolve_template

NAMED_BEFORE_THE_CONVENTION = {
    "AGENT_MEMORY_TABLE": TABLE,
    "AGENT_MEMORY_API_KEYS_TABLE": API_KEYS_TABLE,
    "AGENT_MEMORY_IDEMPOTENCY_TABLE": "IdempotencyTable",
    "AGENT_MEMORY_VECTOR_BUCKET": VECTOR_BUCKET,
    "AGENT_MEMORY_TENANT_ROLE_ARN": "TenantAccessRole",
    "AGENT_MEMORY_DREAMING_STATE_MACHINE_ARN": "dreaming",
    "AGENT_MEMORY_GUARDRAIL_ID": "gr8abcd1234x",
    "AGENT_MEMORY_FILE_FUNCTION": "FileFunction",  # tests/aws/file_function.py
    "AGENT_MEMORY_MIGRATION_STATE_MACHINE_ARN": "migration",  # tests/aws/test_migration_aws.py
    "AGENT_MEMORY_MIGRATION_ARCHIVE_BUCKET": "agent-memory-migration-archive",
    "AGENT_MEMORY_PURGE_STATE_MACHINE_ARN": "purge",  # tests/behaviour/conftest.py
}
"""The names the suites (tests/aws/support.py, tests/behaviour/conftest.py) gave their resources before
`bound_name`'s convention. Closed: a new resource takes the conventional name and needs no line here."""


def bound_name(variable: str) -> str:
    """The physical name every suite gives the resource that function environment variable `variable` names:
    the variable without its `AGENT_MEMORY_` prefix and `_ARN`/`_ID` suffix, lowercase, `_` as `-` (valid for
    tables, buckets, roles, functions and state machines): AGENT_MEMORY_IMPORT_STATE_MACHINE_ARN ->
    `import-state-machine`. The contract binds the template's resources to these names (template.bound_names),
    so a suite that names a resource differently is judged against a name the template does not grant, and
    fails: give it this name."""
    if variable in NAMED_BEFORE_THE_CONVENTION:
        return NAMED_BEFORE_THE_CONVENTION[variable]
    stem = variable.removeprefix("AGENT_MEMORY_").removesuffix("_ARN").removesuffix("_ID")
    return stem.lower().replace("_", "-")


class _Binding(Mapping[str, str]):
    """`bound_name` as a mapping (what `resolve_template` takes): any variable has its name."""

    def __getitem__(self, variable: str) -> str:
        return bound_name(variable)

    def __iter__(self) -> Iterator[str]:
        return iter(NAMED_BEFORE_THE_CONVENTION)

    def __len__(self) -> int:
        return len(NAMED_BEFORE_THE_CONVENTION)


BINDING: Mapping[str, str] = _Binding()
"""Function environment variable → the physical name every suite gives that resource (`bound_name`)."""


NO_AWS_CALLS = frozenset({"files", "console"})
"""Functions that make no AWS API call (the `lean` file function: only its S3 Files mount; the console
function: only the static page's files)."""


@dataclass(frozen=True)
class Verdict:
    role: str
    need: Need
    allowed: bool
    call: dict[str, Any]

    def line(self) -> str:
        principal = self.call["principal"]
        tenant = f" (session tag tenant={principal['tenant']})" if principal.get("tenant") else ""
        note = "" if self.need.documented else " [not in the Service Authorization Reference data]"
        return (
            f"DENY {self.role}{tenant}: {self.need.action} on {self.need.resource}{note} — "
            f"{self.call['service']}:{self.call['operation']} at {principal['where']} in {self.call['test']}"
        )


def role_for(call: dict[str, Any], resolved: ResolvedTemplate) -> str | None:
    principal = call["principal"]
    if principal["kind"] == "tenant":
        return resolved.tenant_role()
    if principal["kind"] == "function":
        return resolved.function_roles().get(principal["function"])
    return None


def judge(calls: list[dict[str, Any]], resolved: ResolvedTemplate) -> tuple[list[Verdict], list[str]]:
    """Verdicts for every distinct (role, authorization), and problems that are not denials (a call the
    recorder could not attribute, a service with no mapping)."""
    schemas = resolved.key_schemas()
    endpoints = resolved.endpoint_policies()
    vpc_functions = resolved.functions_in_vpc()
    function_subnets = resolved.function_subnets()
    reach = resolved.endpoint_reach()
    nat = resolved.has_nat()
    verdicts: dict[tuple[str, str, str, str], Verdict] = {}
    problems: list[str] = []
    statements_cache: dict[str, list[dict[str, Any]]] = {}
    for call in calls:
        principal = call["principal"]
        if principal["kind"] in ("operator", "exempt"):
            continue
        if principal["kind"] == "unattributed":
            problems.append(
                f"UNATTRIBUTED {call['service']}:{call['operation']} at {principal['where']} in {call['test']}: "
                "teach tests/iam/recorder.py which role makes it"
            )
            continue
        role = role_for(call, resolved)
        if role is None:
            problems.append(
                f"NO ROLE for {principal} ({call['service']}:{call['operation']}, {call['test']})"
            )
            continue
        try:
            needs = needs_for(
                call["service"], call["operation"], call["params"], call["region"] or resolved.region, schemas
            )
        except KeyError as error:
            problems.append(f"UNMAPPED {error.args[0]} ({call['test']})")
            continue
        context = {}
        if principal.get("tenant"):
            context["aws:principaltag/tenant"] = [principal["tenant"]]
        if role not in statements_cache:  # (setdefault would resolve them again for every call)
            statements_cache[role] = resolved.role_statements(role)
        statements = statements_cache[role]
        endpoint = _endpoint_of(call)
        # A call no handler made (an adapter driven directly) is judged as coming from the VPC whenever any
        # function that makes AWS calls is in it; with `lean` only the file function is, which makes none.
        function = principal.get("function")
        in_vpc = function in vpc_functions if function is not None else bool(vpc_functions - NO_AWS_CALLS)
        endpoint_statements = endpoints.get(endpoint) if in_vpc else None
        # Reachability. Outside the VPC a function reaches AWS's public endpoints over Lambda's own network.
        # In it (isolated subnets, no NAT) only through an endpoint, which must be reachable from every
        # subnet the function runs in (a lean deployment has its interface endpoints in one AZ only).
        if in_vpc and endpoint_statements is None and not nat:
            problems.append(
                f"NO ENDPOINT: {call['service']}:{call['operation']} at {principal['where']} in {call['test']}: "
                f"the VPC has no {endpoint} endpoint and no NAT, so the function cannot reach the service"
            )
        unreachable = function_subnets.get(principal.get("function") or "", set()) - reach.get(
            endpoint, set()
        )
        if in_vpc and endpoint_statements is not None and unreachable and not nat:
            problems.append(
                f"UNREACHABLE: {call['service']}:{call['operation']} at {principal['where']} in {call['test']}: "
                f"the {endpoint} endpoint cannot be reached from subnets {sorted(unreachable)} of the "
                f"{principal.get('function')} function (route table or security group)"
            )
        for need in needs:
            full = {**need.context, **context}
            key = (role, need.action, need.resource, repr(sorted(full.items())))
            if key in verdicts:
                continue
            request = Request(need.action, need.resource, full)
            allowed = evaluate(statements, request).allowed
            via = role
            if allowed and endpoint_statements is not None:
                with_principal = Request(
                    need.action, need.resource, {**full, "aws:principalarn": [resolved.get_att(role, "Arn")]}
                )
                allowed = evaluate(endpoint_statements, with_principal, resource_policy=True).allowed
                via = f"{role} through the {endpoint} VPC endpoint policy"
            verdicts[key] = Verdict(role if allowed else via, need, allowed, call)
    return list(verdicts.values()), problems


def _endpoint_of(call: dict[str, Any]) -> str:
    return str(call.get("endpoint") or call["service"])


def check(calls: list[dict[str, Any]], template: dict[str, Any], region: str) -> list[str]:
    resolved = resolve_template(template, region, BINDING)
    verdicts, problems = judge(calls, resolved)
    return sorted({v.line() for v in verdicts if not v.allowed}) + sorted(set(problems))
