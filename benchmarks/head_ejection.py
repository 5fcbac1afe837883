"""A HEAD every second for 60 s to a two-replica gateway: how many replicas it ejects (issue
19: on main one HEAD waited for a body that never comes, and when uvicorn closed the idle
connection after 5 s the replica was ejected as "died"; any client could repeat it).

The upstreams are real uvicorn servers, the server vLLM runs, with vLLM's keep-alive timeout
(5 s), serving a tiny ASGI app; the gateway is the real one, in this process.

    .venv/bin/python benchmarks/head_ejection.py                 # 60 s
    .venv/bin/python benchmarks/head_ejection.py --seconds 12 --json head.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
import uvicorn

from sm121.free_ports import free_port
from sm121.gateway.app import start_site
from sm121.gateway.config import GatewayConfig, UpstreamSpec
from sm121.gateway.handlers import GATEWAY

KEEP_ALIVE_S = 5  # vLLM's uvicorn default


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Enough of an engine for the gateway: /v1/models, /version; a GET answers HEAD too."""
    if scope["type"] != "http":
        return
    more = True
    while more:
        more = (await receive()).get("more_body", False)
    answer: object = {}
    if scope["path"] == "/v1/models":
        answer = {"object": "list", "data": [{"id": "fake", "object": "model",
                                              "max_model_len": 4096}]}
    elif scope["path"] == "/version":
        answer = {"version": "0.32.0"}
    body = json.dumps(answer).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [
        (b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]})
    await send({"type": "http.response.body",
                "body": b"" if scope["method"] == "HEAD" else body})


async def serve_upstream() -> tuple[uvicorn.Server, asyncio.Task[None], str]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off",
                                           timeout_keep_alive=KEEP_ALIVE_S,
                                           log_level="warning"))
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    return server, task, f"http://127.0.0.1:{port}"


async def run(seconds: int, path: str) -> dict[str, Any]:
    upstreams = [await serve_upstream() for _ in range(2)]
    specs = tuple(UpstreamSpec(url=url, name=f"uvicorn-{i}")
                  for i, (_, _, url) in enumerate(upstreams))
    config = GatewayConfig(upstreams=specs, port=free_port())
    runner = await start_site(config)
    gw = runner.app[GATEWAY]
    statuses: list[int] = []
    latencies: list[float] = []
    try:
        for _ in range(250):  # discovery
            if all(r.discovered for r in gw.replicas.values()):
                break
            await asyncio.sleep(0.02)
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=15)) as http:

            async def head() -> None:
                started = time.monotonic()
                try:
                    async with http.head(f"{config.base_url}{path}") as response:
                        statuses.append(response.status)
                except (aiohttp.ClientError, TimeoutError):
                    statuses.append(0)
                latencies.append(time.monotonic() - started)

            # One HEAD at each whole second from the start, whether the last one was answered
            # or not (as a client bent on it would), paced against a clock.
            begin = time.monotonic()
            sent = []
            for tick in range(seconds):
                await asyncio.sleep(max(0.0, begin + tick - time.monotonic()))
                sent.append(asyncio.create_task(head()))
            await asyncio.gather(*sent)
            elapsed = time.monotonic() - begin
        replicas = {r.name: {"healthy": r.healthy, "ejections": r.counts["ejections"],
                             "busy": len(r.pool.busy)} for r in gw.replicas.values()}
    finally:
        await runner.cleanup()
        for server, task, _ in upstreams:
            server.should_exit = True
            await task
    return {"seconds": seconds, "elapsed_s": round(elapsed, 2), "path": path,
            "heads": len(statuses),
            "statuses": {str(s): statuses.count(s) for s in sorted(set(statuses))},
            "latency_p50_s": round(sorted(latencies)[len(latencies) // 2], 4),
            "slowest_s": round(max(latencies), 4), "replicas": replicas,
            "ejections": sum(r["ejections"] for r in replicas.values())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=60, help="one HEAD a second, this long")
    parser.add_argument("--path", default="/version", help="a route the gateway passes on")
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args()
    result = asyncio.run(run(args.seconds, args.path))
    print(json.dumps(result, indent=2))
    print("ejected nothing" if result["ejections"] == 0 else
          f"EJECTED {result['ejections']} time(s)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
