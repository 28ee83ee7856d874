"""agent-memory-client: a typed Python client (sync and async) and an MCP server for the agent memory API.

Written thin over httpx rather than generated, on purpose: the API's surface is one OpenAPI document of
~50 operations whose bodies are small, flat JSON objects; a hand-kept layer of one typed method per route
(`_operations.Operations`, shared by `Client` and `AsyncClient`) stays readable, adds what generators do not
(retries with backoff on 429/503 honouring Retry-After, idempotency keys on writes, pagination iterators,
one exception class per error code) and depends on httpx alone. (openapi-python-client 0.29.1, tried on
docs/openapi.json, dropped the response types of the migration operations it could not parse and has no
retries; see the README.) Coverage is enforced instead of generated:
a test fails when docs/openapi.json has a route that `ROUTES` does not map to a method, or a method sends a
request that does not match its route.
"""

from __future__ import annotations

__version__ = "0.1.0"

from . import errors
from ._http import JSON, NO_RETRIES, RetryPolicy
from ._operations import ROUTES, FileKind, MemoryType, Status, Tier
from .adapter import MemoryTools, memory_save, memory_search
from .client import AsyncClient, Client
from .errors import ApiError

__all__ = [
    "JSON",
    "NO_RETRIES",
    "ROUTES",
    "ApiError",
    "AsyncClient",
    "Client",
    "FileKind",
    "MemoryTools",
    "MemoryType",
    "RetryPolicy",
    "Status",
    "Tier",
    "__version__",
    "errors",
    "memory_save",
    "memory_search",
]
