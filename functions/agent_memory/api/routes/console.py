"""The review console: its static page at `/console` (public: the page holds no data) and `GET /v1/whoami`.

The page is plain HTML, CSS and ES modules shipped inside the package (`agent_memory/console/`), served by the
same Routers on both runtimes. It carries no data and no secret: every figure and every action goes through
the public `/v1` routes with the person's API key (kept in the browser's sessionStorage). `/v1/whoami` tells
the page what the key may do, so a read-only key is shown no action buttons (the API refuses them anyway).

Assets are served from a fixed list (the files of that folder with a known suffix), never from a path taken
from the request, with a strict Content-Security-Policy: no inline script or style, nothing from elsewhere,
no framing."""

from __future__ import annotations

import functools
import re
from importlib import resources

from aws_lambda_powertools.event_handler.api_gateway import Response, Router

from ...domain.errors import NotFound
from ...domain.model import Model
from ..context import current

router = Router()
"""`/v1/whoami` (authenticated, under the /v1 prefix)."""

pages = Router()
"""`/console` and its assets (public, no prefix)."""

CONSOLE_PATH = "/console"

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()",
    "Cache-Control": "no-cache",
}
"""On the page and on every asset."""

MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
_ASSET_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}\.(?:js|css|svg)$")


@functools.cache
def assets() -> dict[str, str]:
    """Every servable file of the console folder by name, read once per process."""
    folder = resources.files("agent_memory") / "console"
    found: dict[str, str] = {}
    for entry in folder.iterdir():
        if entry.is_file() and (_ASSET_NAME.match(entry.name) or entry.name == "index.html"):
            found[entry.name] = entry.read_text(encoding="utf-8")
    if "index.html" not in found:  # pragma: no cover - a packaging error
        raise RuntimeError("the console's index.html is missing from the package")
    return found


def _asset_response(name: str) -> Response[str]:
    suffix = name[name.rfind(".") :]
    return Response(
        status_code=200, content_type=MEDIA_TYPES[suffix], body=assets()[name], headers=dict(SECURITY_HEADERS)
    )


@pages.get(CONSOLE_PATH, include_in_schema=False)
def console_page() -> Response[str]:
    return _asset_response("index.html")


@pages.get(f"{CONSOLE_PATH}/<asset>", include_in_schema=False)
def console_asset(asset: str) -> Response[str]:
    if asset not in assets() or asset == "index.html":
        raise NotFound(f"no console asset {asset!r}")
    return _asset_response(asset)


class WhoAmI(Model):
    tenant: str
    key_id: str
    namespaces: list[str]
    scopes: list[str]
    actor: str


@router.get(
    "/whoami",
    summary="The calling key: tenant, namespace patterns and scopes (any valid key)",
    tags=["admin"],
)
def whoami() -> WhoAmI:
    principal = current().principal
    return WhoAmI(
        tenant=principal.tenant,
        key_id=principal.key_id,
        namespaces=list(principal.namespaces),
        scopes=sorted(str(scope) for scope in principal.scopes),
        actor=principal.actor,
    )
