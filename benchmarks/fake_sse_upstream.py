"""A purpose-built fast SSE emitter: the upstream of the gateway overhead benchmark.

It answers /v1/chat/completions and /v1/completions with a stream of vLLM-shaped chunks at
a fixed pace (or as fast as it can), with no prefill, so that what a proxy adds to the time
to first token and to the chunk rate is not hidden under an engine's own noise. It also
answers /v1/models, /tokenize and /metrics the way vLLM does, so the gateway runs with all its
features on. It is not an engine and proves nothing about one.

    python benchmarks/fake_sse_upstream.py --port 8450 --chunks 200 --interval-ms 10
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time

from aiohttp import web

_CHUNK = ('{{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":{created},'
          '"model":"fake","choices":[{{"index":0,"delta":{{"content":"tok{n} "}},'
          '"logprobs":null,"finish_reason":null,"token_ids":null}}]}}')


def _chunk(n: int) -> bytes:
    return b"data: " + _CHUNK.format(created=int(time.time()), n=n).encode() + b"\n\n"


def _final(chunks: int) -> bytes:
    usage = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "model": "fake",
             "choices": [], "usage": {"prompt_tokens": 16, "completion_tokens": chunks,
                                      "total_tokens": 16 + chunks}}
    return b"data: " + json.dumps(usage).encode() + b"\n\ndata: [DONE]\n\n"


def build_app(chunks: int, interval_s: float) -> web.Application:
    async def generate(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        count = int(body.get("max_tokens") or chunks)
        if not body.get("stream"):
            return web.json_response({"id": "cmpl-bench", "object": "chat.completion",
                                      "choices": [{"index": 0, "message": {
                                          "role": "assistant", "content": "ok"}}],
                                      "usage": {"prompt_tokens": 16, "completion_tokens": 1}})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        # Pace against a clock, not by sleeping a fixed time after each write: a stream's
        # rate then does not drift with the emitter's own load.
        start = time.perf_counter()
        for n in range(count):
            await response.write(_chunk(n))
            if interval_s:
                delay = start + (n + 1) * interval_s - time.perf_counter()
                await asyncio.sleep(max(delay, 0))
        await response.write(_final(count))
        await response.write_eof()
        return response

    async def models(_: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [
            {"id": "fake", "object": "model", "max_model_len": 1_048_576}]})

    async def tokenize(request: web.Request) -> web.Response:
        tokens = list(range(len(await request.read()) // 4))
        return web.json_response({"count": len(tokens), "max_model_len": 1_048_576,
                                  "tokens": tokens})

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(text='vllm:cache_config_info{block_size="16",engine="0"} 1.0\n')

    async def health(_: web.Request) -> web.Response:
        return web.Response(status=200)

    app = web.Application()
    app.router.add_post("/v1/chat/completions", generate)
    app.router.add_post("/v1/completions", generate)
    app.router.add_get("/v1/models", models)
    app.router.add_post("/tokenize", tokenize)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/health", health)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--chunks", type=int, default=200, help="chunks per stream")
    parser.add_argument("--interval-ms", type=float, default=10.0, help="0: as fast as it can")
    args = parser.parse_args()
    with contextlib.suppress(ImportError):
        import uvloop

        uvloop.install()
    web.run_app(build_app(args.chunks, args.interval_ms / 1000), host="127.0.0.1",
                port=args.port, access_log=None, print=None)


if __name__ == "__main__":
    main()
