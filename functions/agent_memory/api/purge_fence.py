"""The write fence of a running purge (issue 28), checked in the API layer before any write route runs: a
write to the scope of a purge that is `executing` answers 409 `purge_in_progress` and changes nothing
(`ErasureService.fence` decides what a plan covers). The memory write path itself is not involved, so every
write route (memories, files, daily log, skills, sessions, imports, snapshots) is fenced alike.

The scope of a write is read from the request as the routes read it: `namespace` in the query string, in the
JSON body or in its `items` (a batch), and the record id of `/memories/{id}/...`. The purge routes themselves
and reads are never fenced."""

from __future__ import annotations

import json
import re
from typing import Any

from aws_lambda_powertools.utilities.data_classes.common import BaseProxyEvent

from .context import RequestContext

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_RECORD_PATH = re.compile(r"/memories/([A-Za-z0-9_-]{1,128})(?:/|$)")
_UNFENCED = re.compile(r"/v1/(?:admin/purges|recall)(?:/|$)")
MAX_ITEMS = 100


def fence_write(event: BaseProxyEvent, context: RequestContext) -> None:
    """Raise `PurgeInProgress` (409) when this request writes into the scope of an executing purge."""
    erasure = context.services.erasure
    if erasure is None or event.http_method.upper() not in WRITE_METHODS or _UNFENCED.search(event.path):
        return
    record = _RECORD_PATH.search(event.path)
    namespaces = _namespaces(event)
    if record is None and not namespaces:
        return
    erasure.fence(
        context.principal.tenant, namespaces=namespaces, record_id=record.group(1) if record else None
    )


def _namespaces(event: BaseProxyEvent) -> list[str]:
    found: list[str] = []
    query = event.query_string_parameters or {}
    if isinstance(query.get("namespace"), str):
        found.append(query["namespace"])
    body = _json_body(event)
    if isinstance(body, dict):
        found.extend(_namespace_of(body))
        items = body.get("items")
        if isinstance(items, list):
            for item in items[:MAX_ITEMS]:
                found.extend(_namespace_of(item))
    return found


def _namespace_of(value: Any) -> list[str]:
    namespace = value.get("namespace") if isinstance(value, dict) else None
    return [namespace] if isinstance(namespace, str) else []


def _json_body(event: BaseProxyEvent) -> Any:
    try:
        return json.loads(event.decoded_body or "null")
    except (ValueError, UnicodeDecodeError):
        return None  # the route's own validation answers a bad body
