"""Local-server-only HTTP behaviour: the raw transport (wrong keys, malformed bodies, body limit), Swagger, and
several processes writing at once. Everything else runs in tests/behaviour against both runtimes."""

from __future__ import annotations

import multiprocessing
import uuid

import httpx

NS = "/projects/billing"


def unique_ns() -> str:
    return f"/projects/t-{uuid.uuid4().hex[:8]}"


def remember(client: httpx.Client, content: str, namespace: str = NS, **extra) -> httpx.Response:
    return client.post("/v1/memories", json={"content": content, "namespace": namespace, **extra})


def test_health_needs_no_key_but_everything_else_does(live_server):
    anonymous = live_server.client(None)
    assert anonymous.get("/v1/health").json()["status"] == "ok"
    response = anonymous.post("/v1/recall", json={"query": "x", "namespaces": [NS]})
    assert response.status_code == 401
    assert response.json()["error"] == "unauthenticated"
    assert "Bearer" in response.json()["message"]
    wrong = httpx.post(
        f"{live_server.url}/v1/recall",
        json={"query": "x", "namespaces": [NS]},
        headers={"Authorization": "Bearer amk_not-a-real-key"},
    )
    assert wrong.status_code == 401


def test_malformed_json_and_oversize_body(live_server):
    client = live_server.client()
    broken = client.post(
        "/v1/memories", content=b'{"content": "x", ', headers={"content-type": "application/json"}
    )
    assert broken.status_code == 400 and broken.json()["error"] == "malformed_json"
    huge = client.post("/v1/memories", json={"content": "x" * 100_000, "namespace": NS})
    assert huge.status_code == 413 and huge.json()["error"] == "too_large"
    assert client.get("/v1/memories/mem_unknown").status_code == 404
    assert client.get("/v1/memories", params={"namespace": "not a path"}).status_code == 422


def test_openapi_and_swagger_are_served(live_server):
    anonymous = live_server.client(None)
    spec = anonymous.get("/swagger", params={"format": "json"})
    assert spec.status_code == 200
    paths = spec.json()["paths"]
    assert "/v1/memories" in paths and "/v1/recall" in paths and "/v1/files/{kind}/entries" in paths
    assert spec.json()["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert "/swagger" not in paths and "/v1/health" in paths
    page = anonymous.get("/swagger")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    # The bundled Swagger UI (no CDN) with this API's document inlined.
    assert "SwaggerUIBundle" in page.text and '"/v1/recall"' in page.text and "<script" in page.text


def _writer(url: str, key: str, namespace: str, worker: int, count: int) -> int:
    ok = 0
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as client:
        for i in range(count):
            response = client.post(
                "/v1/files/memory/entries", json={"namespace": namespace, "content": f"w{worker}-entry-{i}"}
            )
            ok += response.status_code == 200
    return ok


def test_concurrent_processes_writing_memory_md_lose_nothing(live_server):
    ns = unique_ns()
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        results = pool.starmap(
            _writer, [(live_server.url, live_server.keys["alpha"], ns, w, 10) for w in range(4)]
        )
    assert sum(results) == 40
    entries = live_server.client().get("/v1/files/memory", params={"namespace": ns}).json()["entries"]
    assert sorted(entries) == sorted(f"w{w}-entry-{i}" for w in range(4) for i in range(10))


def test_many_concurrent_requests_all_complete(live_server):
    # Powertools runs sync middlewares and routes in nested worker threads; with too few threads for the
    # admitted requests they wait on each other for ever. 12 clients at once must all be answered.
    from concurrent.futures import ThreadPoolExecutor

    ns = unique_ns()

    def call(i: int) -> int:
        with httpx.Client(
            base_url=live_server.url,
            headers={"Authorization": f"Bearer {live_server.keys['alpha']}"},
            timeout=20,
        ) as client:
            response = client.post(
                "/v1/memories", json={"content": f"Concurrent fact number {i}", "namespace": ns}
            )
            return response.status_code

    with ThreadPoolExecutor(max_workers=12) as pool:
        statuses = list(pool.map(call, range(36)))
    assert all(status in (200, 201) for status in statuses), [s for s in statuses if s not in (200, 201)]


def test_a_form_encoded_body_gets_415_with_the_header_to_send(live_server):
    client = live_server.client()
    response = client.post(
        "/v1/memories",
        content=b'{"namespace": "/projects/x", "content": "y"}',
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 415
    assert "Content-Type: application/json" in response.json()["message"]
    assert client.get("/v1/memories", params={"namespace": "/projects/x"}).json()["items"] == []
