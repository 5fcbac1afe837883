"""The streaming client against a real local HTTP server that streams canned SSE: ids are
counted per chunk, usage is cross-checked, and missing ids or errors are refused; failures in
concurrent tasks are raised, not swallowed."""

import asyncio
import json

import pytest
from aiohttp import web
from support import invoke_cli
from support.aiohttp_server import served

from sm121.bench.client import BenchClient
from sm121.bench.runner import run_together
from sm121.errors import Sm121Error


def _sse(chunks):
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"


GOOD = [{"choices": [{"text": "ab", "token_ids": [1, 2]}]},
        {"choices": [{"text": "c", "token_ids": [3], "finish_reason": "length"}]},
        {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}]
NO_IDS = [{"choices": [{"text": "ab"}]},
          {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 1}}]
WRONG_USAGE = [GOOD[0], {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 9}}]


@pytest.fixture
async def server():
    seen: list[dict] = []

    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        seen.append(body)
        if body["model"] == "drop":  # a server that dies mid-stream
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            await response.write(_sse(GOOD).encode()[:20])
            assert request.transport is not None
            request.transport.close()
            return response
        script = {"good": GOOD, "noids": NO_IDS, "wrong": WRONG_USAGE}[body["model"]]
        if not body.get("stream"):
            return web.json_response({"choices": [{"text": "abc", "token_ids": [1, 2, 3]}],
                                      "usage": {"prompt_tokens": 7, "completion_tokens": 3}})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        data = _sse(script).encode()
        for i in range(0, len(data), 7):  # chunk boundaries anywhere
            await response.write(data[i:i + 7])
        return response

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    async with served(app) as url:
        yield url, seen


async def test_counts_ids_and_sends_what_the_discipline_needs(server):
    url, seen = server
    async with BenchClient(url, "good", cache_salt=True) as client:
        record = await client.complete("hello", 3, "r")
    assert record.tokens == 3 and record.chunk_tokens == [2, 1]
    assert record.first_token is not None and record.ttft >= 0
    body = seen[0]
    assert body["return_token_ids"] and body["stream_options"] == {"include_usage": True}
    assert body["prompt"].startswith("[") and body["prompt"].endswith("] hello")
    assert body["cache_salt"] in body["prompt"]


async def test_every_prompt_gets_a_different_salt(server):
    url, seen = server
    async with BenchClient(url, "good") as client:
        await client.complete("same", 3, "a")
        await client.complete("same", 3, "b")
    assert seen[0]["prompt"] != seen[1]["prompt"]


async def test_missing_ids_are_refused(server):
    url, _ = server
    async with BenchClient(url, "noids") as client:
        with pytest.raises(Sm121Error, match="no token ids"):
            await client.complete("hello", 1, "r")


async def test_usage_disagreement_is_refused(server):
    url, _ = server
    async with BenchClient(url, "wrong") as client:
        with pytest.raises(Sm121Error, match="usage says 9"):
            await client.complete("hello", 2, "r")


async def test_stream_false_fallback_counts_from_the_response(server):
    url, seen = server
    async with BenchClient(url, "good", stream=False) as client:
        record = await client.complete("hello", 3, "r")
    assert record.tokens == 3 and seen[0]["stream"] is False


async def test_an_error_in_one_task_is_raised_and_cancels_the_others():
    cancelled = asyncio.Event()

    async def slow() -> int:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return 1

    async def failing() -> int:
        await asyncio.sleep(0.01)
        raise Sm121Error("boom")

    with pytest.raises(Sm121Error, match="boom"):
        await run_together(slow(), failing())
    assert cancelled.is_set()


async def test_run_together_returns_results_in_order():
    async def value(v: int) -> int:
        await asyncio.sleep(0.01 * (3 - v))
        return v

    assert await run_together(value(1), value(2), value(3)) == [1, 2, 3]


async def test_probe_exits_1_on_a_server_without_token_ids(server, tmp_path):
    url, _ = server
    result = await asyncio.to_thread(invoke_cli, "bench", "probe", "--url", url, "--model",
                                     "noids", "--out", str(tmp_path / "p.json"), "--json",
                                     check=False)
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert not report["safe"] and not report["token_ids"]
    assert "no token ids" in report["reason"]


async def test_probe_passes_a_countable_server(server, tmp_path):
    url, _ = server
    result = await asyncio.to_thread(invoke_cli, "bench", "probe", "--url", url, "--model",
                                     "good", "--out", str(tmp_path / "p.json"), "--json")
    assert json.loads(result.stdout)["histogram"] == {"1": 3, "2": 3}


async def test_a_server_dying_mid_scenario_is_a_clear_error_and_keeps_the_file(server, tmp_path):
    url, _ = server
    out = tmp_path / "o.json"
    result = await asyncio.to_thread(invoke_cli, "bench", "overlap", "--url", url, "--model", "drop",
                                     "--out", str(out), check=False)
    assert result.returncode == 2
    assert "failed mid-scenario" in result.stderr and "Traceback" not in result.stderr
    assert json.loads(out.read_text())["status"] == "failed"
