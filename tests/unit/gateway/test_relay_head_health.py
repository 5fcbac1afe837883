"""A HEAD every second to a two-replica gateway in front of real uvicorn servers (vLLM's; idle
connections close after 5 s) ejects nothing: the relay knows a HEAD's answer has no body, so
it is complete at its headers and its connection idles in the pool like any other. On main a
single HEAD waited for a body until uvicorn closed the connection, and the replica was
ejected as "died". This runs 12 s, two keep-alive periods; benchmarks/head_ejection.py runs
the 60 s of the issue.

What tells the fix from main is behaviour, not wall time: on main the HEAD's wait ended in
the upstream's close, which counted as a mid-stream error and ejected the replica. The HEADs get a generous timeout, because in `make test`
this runs beside the engine tier, and a loaded 2-core host once took over 4 s to answer one
(CI, stop 27)."""

from __future__ import annotations

import asyncio
import time

import aiohttp
from fake_uvicorn_upstream import KEEP_ALIVE_S, fake_uvicorn_upstream
from gateway_harness import discovered, running_gateway

from sm121.gateway.config import UpstreamSpec

SECONDS = 2 * KEEP_ALIVE_S + 2


async def test_a_head_every_second_ejects_no_replica() -> None:
    async with fake_uvicorn_upstream() as first, fake_uvicorn_upstream() as second:
        specs = (UpstreamSpec(url=first, name="fake-0"), UpstreamSpec(url=second, name="fake-1"))
        async with running_gateway(upstreams=specs) as gw:
            await discovered(gw, 2)
            statuses: list[int] = []
            timeout = aiohttp.ClientTimeout(total=60)
            begin = time.monotonic()
            for tick in range(SECONDS):  # one HEAD at each whole second from the start
                await asyncio.sleep(max(0.0, begin + tick - time.monotonic()))
                async with gw.http.head(f"{gw.url}/version", timeout=timeout) as response:
                    statuses.append(response.status)
                    assert await response.read() == b""
            replicas = list(gw.gateway.replicas.values())
            assert statuses == [200] * SECONDS
            assert [r.counts["ejections"] for r in replicas] == [0, 0]
            assert all(r.healthy for r in replicas)
            assert await gw.metric("sm121_gateway_upstream_errors_total",
                                   kind="mid_stream") == 0
            assert all(not r.pool.busy for r in replicas)
