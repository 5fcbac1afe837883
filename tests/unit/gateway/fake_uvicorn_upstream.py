"""A fake engine that frames HTTP as vLLM does, because it is the same server: a real uvicorn
(timeout_keep_alive=5, vLLM's default: idle connections close after 5 s) serving a tiny ASGI
app in this process. A GET route answers HEAD too, headers only, as FastAPI's does."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from support import free_port

KEEP_ALIVE_S = 5


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    more = True
    while more:  # the request body, read and dropped
        more = (await receive()).get("more_body", False)
    path = scope["path"]
    if path == "/v1/models":
        answer: object = {"object": "list", "data": [
            {"id": "fake", "object": "model", "max_model_len": 4096}]}
    elif path == "/version":
        answer = {"version": "0.32.0"}
    else:
        answer = {}
    body = json.dumps(answer).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [
        (b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]})
    await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})


@asynccontextmanager
async def fake_uvicorn_upstream() -> AsyncIterator[str]:
    port = free_port()
    config = uvicorn.Config(_app, host="127.0.0.1", port=port, lifespan="off",
                            timeout_keep_alive=KEEP_ALIVE_S, log_level="warning")
    server = uvicorn.Server(config)
    # The test's process keeps its own signal handlers.
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
