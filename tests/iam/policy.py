"""The smallest IAM identity-policy evaluator that covers the statement forms this stack's template uses.

Why hand-written: the maintained offline tools either generate policies (policy_sentry, iam-floyd), lint
them (parliament, cfn-lint) or need a live account (the IAM policy simulator API); none evaluates a request
against a policy offline. This one implements the documented evaluation logic for identity policies
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html) for one
principal: an explicit Deny wins, then any Allow, else implicit deny. Supported: Action/NotAction,
Resource/NotResource with `*` and `?` wildcards (actions case-insensitively), policy variables
(`${aws:PrincipalTag/...}`, `${aws:username}`... from the request context; `${*}`, `${?}`, `${$}` escapes), and
the condition operators String(Not)Equals(IgnoreCase), String(Not)Like, ArnEquals/ArnLike (and Not),
Bool, Null, Numeric(LessThan|GreaterThan|Equals...), each with `...IfExists` and the `ForAllValues:` / `ForAnyValue:` set prefixes; resource policies
(VPC endpoint, trust, key, topic, bucket and Lambda permission policies) with `Principal: "*"` narrowed by
conditions or naming IAM and service principals (`Request.principal`). Anything else raises
`Unsupported`, so a statement it cannot read never silently allows or denies.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Context = Mapping[str, Sequence[str]]
"""Request context keys (lower-cased) → values; a single-valued key is a one-element list."""


class Unsupported(ValueError):
    """A policy element this evaluator does not implement (so it refuses to guess)."""


@dataclass(frozen=True)
class Request:
    action: str
    resource: str
    context: Context = field(default_factory=dict)
    principal: str = ""
    """Who asks, for resource policies that name principals (trust, key, topic, Lambda permission policies):
    an IAM ARN (`arn:aws:iam::<account>:role/...`, or the account's `...:root`) or a service principal
    (`cloudwatch.amazonaws.com`). Empty: only `Principal: "*"` statements apply."""


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str
    statement: Mapping[str, Any] | None = None


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


_VARIABLE = re.compile(r"\$\{([^}]+)\}")
_ESCAPES = {"*": "\x00STAR\x00", "?": "\x00QMARK\x00", "$": "$"}


def substitute(text: str, context: Context) -> str | None:
    """Replace `${key}` by the context value; None when a variable has no value (the element then does not
    match, as in IAM). `${*}`/`${?}` stand for literal `*`/`?`."""
    missing = False

    def value(match: re.Match[str]) -> str:
        nonlocal missing
        name = match.group(1)
        if name in _ESCAPES:
            return _ESCAPES[name]
        if "," in name:  # ${key, 'default'}
            key, default = (part.strip() for part in name.split(",", 1))
            found = context.get(key.lower())
            return found[0] if found else default.strip("'")
        found = context.get(name.lower())
        if not found or len(found) != 1:
            missing = True
            return ""
        return found[0]

    result = _VARIABLE.sub(value, text)
    return None if missing else result


def _glob(pattern: str, value: str, *, case_sensitive: bool = True) -> bool:
    return _glob_regex(pattern, case_sensitive).match(value) is not None


@functools.cache
def _glob_regex(pattern: str, case_sensitive: bool) -> re.Pattern[str]:
    """The compiled regex of an IAM pattern, once per pattern: the contract matches a few hundred patterns
    against ~17,000 recorded calls, and translating each again was most of its time."""
    # fnmatch's `[...]` classes do not exist in IAM: escape them; IAM's only wildcards are * and ?.
    escaped = pattern.replace("[", "[[]")
    regex = fnmatch.translate(escaped)
    for token, literal in (("\x00STAR\x00", r"\*"), ("\x00QMARK\x00", r"\?")):
        regex = regex.replace(re.escape(token), literal).replace(token, literal)
    flags = 0 if case_sensitive else re.IGNORECASE
    return re.compile(regex, flags | re.DOTALL)


def _action_matches(patterns: Iterable[str], action: str) -> bool:
    return any(_glob(p, action, case_sensitive=False) for p in patterns)


def _resource_matches(patterns: Iterable[str], resource: str, context: Context) -> bool:
    for pattern in patterns:
        concrete = substitute(pattern, context)
        if concrete is not None and _glob(concrete, resource):
            return True
    return False


def _compare(base: str, policy_value: str, request_value: str) -> bool:
    if base == "StringEquals":
        return request_value == policy_value
    if base == "StringEqualsIgnoreCase":
        return request_value.lower() == policy_value.lower()
    if base == "StringLike":
        return _glob(policy_value, request_value)
    if base in ("ArnEquals", "ArnLike"):
        return _glob(policy_value, request_value)
    if base == "Bool":
        return request_value.lower() == policy_value.lower()
    if base in _NUMERIC:
        return _NUMERIC[base](float(request_value), float(policy_value))
    raise Unsupported(f"condition operator {base}")


_NUMERIC = {
    "NumericEquals": lambda a, b: a == b,
    "NumericLessThan": lambda a, b: a < b,
    "NumericLessThanEquals": lambda a, b: a <= b,
    "NumericGreaterThan": lambda a, b: a > b,
    "NumericGreaterThanEquals": lambda a, b: a >= b,
}


_NEGATED = {
    "StringNotEquals": "StringEquals",
    "StringNotEqualsIgnoreCase": "StringEqualsIgnoreCase",
    "StringNotLike": "StringLike",
    "ArnNotEquals": "ArnEquals",
    "ArnNotLike": "ArnLike",
}


def _condition_holds(operator: str, key: str, policy_values: list[Any], context: Context) -> bool:
    set_prefix = ""
    if ":" in operator:
        set_prefix, operator = operator.split(":", 1)
        if set_prefix not in ("ForAllValues", "ForAnyValue"):
            raise Unsupported(f"condition set operator {set_prefix}")
    if_exists = operator.endswith("IfExists")
    operator = operator.removesuffix("IfExists")
    request_values = list(context.get(key.lower(), []))
    if operator == "Null":
        wanted_null = str(policy_values[0]).lower() == "true"
        return (not request_values) == wanted_null
    negated = operator in _NEGATED
    base = _NEGATED.get(operator, operator)
    if base not in (
        "StringEquals",
        "StringEqualsIgnoreCase",
        "StringLike",
        "ArnEquals",
        "ArnLike",
        "Bool",
    ) and (base not in _NUMERIC):
        raise Unsupported(f"condition operator {operator}")
    values = [v for v in (substitute(str(p), context) for p in policy_values) if v is not None]

    def one(request_value: str) -> bool:
        hit = any(_compare(base, v, request_value) for v in values)
        return not hit if negated else hit

    if not request_values:
        if set_prefix == "ForAllValues":
            return True  # vacuously true: the documented pitfall, kept faithfully
        if if_exists:
            return True
        return negated  # a missing key fails a positive operator and satisfies a negated one
    if set_prefix == "ForAllValues":
        return all(one(v) for v in request_values)
    if set_prefix == "ForAnyValue":
        return any(one(v) for v in request_values)
    if len(request_values) != 1:
        raise Unsupported(f"multi-valued key {key} without ForAllValues/ForAnyValue")
    return one(request_values[0])


def _conditions_hold(conditions: Mapping[str, Mapping[str, Any]], context: Context) -> bool:
    return all(
        _condition_holds(operator, key, _as_list(values), context)
        for operator, block in conditions.items()
        for key, values in block.items()
    )


def _principal_matches(principal: Any, who: str) -> bool:
    """`Principal: "*"` (everyone, narrowed by conditions) or `{"AWS": [...], "Service": [...]}` naming `who`
    exactly (an account's `:root` names the account, which then delegates to its identity policies: the caller
    evaluates that case with `who` set to the root ARN). Federated and CanonicalUser are not used here."""
    if principal in ("*", {"AWS": "*"}):
        return True
    if not isinstance(principal, dict) or set(principal) - {"AWS", "Service"}:
        raise Unsupported(f"Principal {principal!r}")
    return any(who in _as_list(names) for names in principal.values())


def statement_applies(
    statement: Mapping[str, Any], request: Request, *, resource_policy: bool = False
) -> bool:
    if "NotPrincipal" in statement:
        raise Unsupported("NotPrincipal")
    if "Principal" in statement:
        if not resource_policy:
            raise Unsupported("Principal in an identity policy")
        if not _principal_matches(statement["Principal"], request.principal):
            return False
    elif resource_policy:
        raise Unsupported("a resource policy statement without Principal")
    if "Action" in statement:
        if not _action_matches(_as_list(statement["Action"]), request.action):
            return False
    elif "NotAction" in statement:
        if _action_matches(_as_list(statement["NotAction"]), request.action):
            return False
    else:
        raise Unsupported("statement without Action or NotAction")
    if "Resource" in statement:
        if not _resource_matches(_as_list(statement["Resource"]), request.resource, request.context):
            return False
    elif "NotResource" in statement:
        if _resource_matches(_as_list(statement["NotResource"]), request.resource, request.context):
            return False
    elif not resource_policy:  # a trust policy names no Resource: it is the role it is attached to
        raise Unsupported("statement without Resource or NotResource")
    return _conditions_hold(statement.get("Condition", {}), request.context)


def evaluate(
    statements: Sequence[Mapping[str, Any]], request: Request, *, resource_policy: bool = False
) -> Decision:
    """Identity policy by default; `resource_policy=True` for a policy with `Principal` (a VPC endpoint's),
    whose decision for the request is combined with the identity policy's by the caller (both must allow)."""
    allow: Mapping[str, Any] | None = None
    for statement in statements:
        if not statement_applies(statement, request, resource_policy=resource_policy):
            continue
        if statement.get("Effect") == "Deny":
            return Decision(False, "explicit deny", statement)
        if statement.get("Effect") == "Allow":
            allow = allow or statement
        else:
            raise Unsupported(f"Effect {statement.get('Effect')!r}")
    if allow is not None:
        return Decision(True, "allowed", allow)
    return Decision(False, "no statement allows it (implicit deny)")
