"""The console function (handlers/console.py) serves the review console's static page and nothing else, with
the security headers, without an authorizer context and without building any service (issue 30, defect 6)."""

from __future__ import annotations

from agent_memory.handlers import console
from tests.contract.chat_fakes import FakeLambdaContext, api_event


def test_the_page_and_an_asset_are_served_with_the_security_headers() -> None:
    page = console.handler(api_event("GET", "/console", tenant=None), FakeLambdaContext())
    assert page["statusCode"] == 200
    headers = {k.lower(): v for k, v in (page.get("multiValueHeaders") or {}).items()} | {
        k.lower(): v for k, v in (page.get("headers") or {}).items()
    }
    assert "frame-ancestors 'none'" in str(headers["content-security-policy"])
    assert "<html" in page["body"].lower()
    asset = console.handler(api_event("GET", "/console/app.js", tenant=None), FakeLambdaContext())
    assert asset["statusCode"] == 200 and "javascript" in str(
        asset.get("headers") or asset.get("multiValueHeaders")
    )


def test_nothing_but_the_console_is_served() -> None:
    for path in ("/v1/memories", "/swagger", "/console/index.html", "/console/..%2Fsettings.py"):
        answer = console.handler(api_event("GET", path, tenant=None), FakeLambdaContext())
        assert answer["statusCode"] == 404, path
