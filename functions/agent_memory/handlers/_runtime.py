"""The set-up every Lambda entry point shares, so the five handlers differ only in what they do.

- `powertools(service)`: the function's Logger, Tracer and Metrics, set up alike. Tracer patches botocore only
  (`TRACED_LIBRARIES`); Metrics takes the stack's namespace from the settings, never none (a flush without a
  namespace fails the invocation).
- The services come from `wiring/process.py`: one slot per function graph (`process.API`, `process.WORKER`,
  ...), built by the first invocation and cached for the warm ones, never at import; tests replace a slot
  (`set`). `Lazy` is re-exported here for the handlers' own values.
- `tenants_of(event, fallback)`: the tenants an invocation names, else the configured ones, every id checked;
  `targets_input(event, ...)`: the same for a workflow's list-targets task, with the namespaces it names.
- The environment is read only through `settings/` (`get_handler_settings` for what the handlers need before
  any service exists). Bad input and bad configuration raise domain errors (`ValidationFailed`,
  `Misconfigured`): their class name is the error Lambda and Step Functions report.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from aws_lambda_powertools import Logger, Metrics, Tracer

from ..domain.errors import ValidationFailed
from ..domain.records import is_valid_namespace, is_valid_tenant
from ..settings.handlers import get_handler_settings
from ..wiring.process import Lazy

__all__ = ["Lazy", "Powertools", "powertools", "targets_input", "targets_page", "tenants_of"]

# The only client library the functions call. Powertools' default (patch everything X-Ray supports) would also
# import and patch whatever else happens to be installed (httpx, requests, sqlite3, ...) at every cold start.
TRACED_LIBRARIES = ["botocore"]


class Powertools(NamedTuple):
    logger: Logger
    tracer: Tracer
    metrics: Metrics


def powertools(service: str | None = None) -> Powertools:
    """Logger, Tracer and Metrics of one function (`service`: the Powertools service name, else
    POWERTOOLS_SERVICE_NAME)."""
    return Powertools(
        logger=Logger(service=service),
        tracer=Tracer(service=service, patch_modules=TRACED_LIBRARIES),
        metrics=Metrics(namespace=get_handler_settings().metrics_namespace, service=service),
    )


def tenants_of(event: Mapping[str, Any], fallback: Iterable[str] = ()) -> list[str]:
    """The tenants an invocation names (`tenants`, or one `tenant`), else `fallback` (configuration), in order
    and without repeats. Raises ValidationFailed unless every one is a valid tenant id."""
    named = event.get("tenants") or ([event["tenant"]] if event.get("tenant") else None)
    if named is not None and not isinstance(named, list):
        raise ValidationFailed(f"tenants must be a list of tenant ids; got {named!r}")
    tenants = list(named) if named is not None else list(fallback)
    invalid = [tenant for tenant in tenants if not isinstance(tenant, str) or not is_valid_tenant(tenant)]
    if invalid:
        raise ValidationFailed(f"invalid tenant ids {invalid}")
    return list(dict.fromkeys(tenants))


class TargetsInput(NamedTuple):
    body: dict[str, Any]
    """The execution input."""
    tenants: list[str]
    namespaces: list[str]
    """The namespaces the input names; empty: every namespace of each tenant."""


def targets_input(
    event: dict[str, Any], fallback: Iterable[str], *, what: str, tenants_variable: str
) -> TargetsInput:
    """What a workflow's list-targets task is asked: the execution input (`event["input"]`, or the event
    itself), its tenants (`tenants_of`, else `fallback`) and the namespaces it names. Raises ValidationFailed
    when there is no tenant to `what` (naming `tenants_variable`) or a namespace path is invalid."""
    body = event["input"] if isinstance(event.get("input"), dict) else event
    tenants = tenants_of(body, fallback)
    if not tenants:
        raise ValidationFailed(
            f"no tenant to {what}: pass {{'tenants': [...]}} as the execution input or set "
            f"{tenants_variable} (or AGENT_MEMORY_TENANTS)"
        )
    only = body.get("namespaces") or []
    if not isinstance(only, list) or any(not isinstance(n, str) or not is_valid_namespace(n) for n in only):
        raise ValidationFailed(f"namespaces must be a list of namespace paths; got {only!r}")
    return TargetsInput(body, tenants, only)


class TargetsPage(NamedTuple):
    targets: list[Any]
    next_cursor: int | None
    """Where the next page starts; None after the last page."""


def targets_page(
    event: Mapping[str, Any],
    targets: list[Any],
    *,
    max_total: int,
    page_size: int,
    max_bytes: int,
    what: str,
) -> TargetsPage:
    """One page of a paged sweep's targets (workflows/_asl.py `paged_sweep`), from `event["cursor"]` (0 when
    absent or null): at most `page_size` targets and at most `max_bytes` of compact JSON, so a page of long
    namespace names is shorter rather than over Step Functions' state limit. Raises ValidationFailed for a bad
    cursor, a single target above `max_bytes`, or more than `max_total` targets in all (`what` names them)."""
    cursor = event.get("cursor") or 0
    if not isinstance(cursor, int) or isinstance(cursor, bool) or cursor < 0:
        raise ValidationFailed(f"cursor must be a non-negative integer; got {cursor!r}")
    if len(targets) > max_total:
        raise ValidationFailed(
            f"{len(targets):,} {what} exceed {max_total:,} per execution: start one execution per tenant",
            targets=len(targets),
        )
    page: list[Any] = []
    size = _PAGE_ENVELOPE_BYTES
    for target in targets[cursor : cursor + page_size]:
        cost = len(json.dumps(target, separators=(",", ":")).encode()) + 1
        if size + cost > max_bytes:
            if not page:
                raise ValidationFailed(f"one target takes {cost:,} bytes, over the {max_bytes:,} of a page")
            break
        page.append(target)
        size += cost
    end = cursor + len(page)
    return TargetsPage(page, end if end < len(targets) else None)


_PAGE_ENVELOPE_BYTES = 200
"""The JSON around a page's targets (`{"day": ..., "targets": [...], "next_cursor": ...}`)."""
