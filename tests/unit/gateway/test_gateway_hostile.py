"""Hostile or unlucky input, each a regression test: a deeply nested body, a capture that
cannot be written, an upstream that compresses, headers meant for one hop only. The upstream
is the purpose-built fake (fake_upstream.py) or, where a header must be seen on the wire, a
small aiohttp app of its own."""

from __future__ import annotations

import asyncio
import errno
import gzip
import io
import json
import logging
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from fake_upstream import FakeUpstream
from gateway_harness import running_gateway
from support import free_port

from sm121.gateway.config import CaptureSettings
from sm121.gateway.limits import MAX_JSON_DEPTH, deeper_than


@pytest.fixture
async def upstream() -> AsyncIterator[FakeUpstream]:
    fake = await FakeUpstream().start()
    yield fake
    await fake.stop()


def _nested(depth: int) -> str:
    return '{"model": "fake", "messages": ' + "[" * depth + "]" * depth + "}"


async def test_deep_body_with_redacted_capture_keeps_no_admission_slot(
        upstream: FakeUpstream, tmp_path: Path) -> None:
    """Regression: with --capture --redact, a 600-deep body raised RecursionError after
    admission and outside its try/finally; two such bodies hung every later request at
    --max-inflight 2."""
    async with running_gateway(upstream.url, max_inflight=2,
                               capture=CaptureSettings(tmp_path / "c", redact=True)) as gw:
        for _ in range(3):
            response = await gw.http.post(f"{gw.url}/v1/chat/completions", data=_nested(600),
                                          headers={"Content-Type": "application/json"})
            assert response.status == 400
        assert await gw.metric("sm121_gateway_inflight", lane="general") == 0
        normal = await asyncio.wait_for(gw.chat(), timeout=10)
        assert normal.status == 200


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 600, 100_000])
async def test_nesting_beyond_the_limit_is_an_openai_400(upstream: FakeUpstream,
                                                         depth: int) -> None:
    async with running_gateway(upstream.url) as gw:
        response = await gw.http.post(f"{gw.url}/v1/chat/completions", data=_nested(depth),
                                      headers={"Content-Type": "application/json"})
        body = await response.json()
        assert response.status == 400
        assert body["error"]["type"] == "invalid_request_error" and body["error"]["code"] == 400
        assert f"more than {MAX_JSON_DEPTH} levels" in body["error"]["message"]
        assert await gw.metric("sm121_gateway_refused_total", reason="too_deep") == 1
        assert not upstream.bodies


async def test_nesting_at_the_limit_passes(upstream: FakeUpstream) -> None:
    async with running_gateway(upstream.url) as gw:
        deep: object = "x"
        for _ in range(MAX_JSON_DEPTH - 3):  # the body, messages and one message are 3 levels
            deep = [deep]
        response = await gw.chat(messages=[{"role": "user", "content": deep}])
        assert response.status == 200


def test_depth_is_counted_in_containers() -> None:
    assert not deeper_than({"a": [1, {"b": 2}]}, 3)
    assert deeper_than({"a": [1, {"b": []}]}, 3)
    assert not deeper_than("text", 0)


async def test_a_capture_that_cannot_be_written_never_fails_the_request(
        upstream: FakeUpstream, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "captures"
    async with running_gateway(upstream.url, capture=CaptureSettings(folder, redact=True)) as gw:
        shutil.rmtree(folder)  # the disk went away under the gateway
        with caplog.at_level(logging.WARNING, logger="sm121.gateway"):
            streamed = await gw.chat(stream=True)
            assert streamed.status == 200
            assert (await streamed.text()).endswith("data: [DONE]\n\n")
            plain = await gw.chat()
            assert plain.status == 200 and (await plain.json())["choices"]
        assert await gw.metric("sm121_gateway_capture_failures_total") == 2
        assert await gw.metric("sm121_gateway_inflight", lane="general") == 0
    assert sum("capture of request" in r.getMessage() for r in caplog.records) == 2


class _FillingDisk(io.BytesIO):
    """A capture file on a disk that fills up after a few hundred bytes."""

    def write(self, data: bytes) -> int:  # type: ignore[override]
        if self.tell() + len(data) > 300:
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().write(data)


async def test_a_disk_filling_mid_stream_drops_the_capture_and_the_stream_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sm121.gateway.capture._open_private", lambda _: _FillingDisk())
    fake = await FakeUpstream(chunks=50).start()
    try:
        async with running_gateway(fake.url, capture=CaptureSettings(tmp_path, False)) as gw:
            response = await gw.chat(stream=True)
            text = await response.text()
            assert response.status == 200 and text.endswith("data: [DONE]\n\n")
            assert text.count('"content": "tok') == 50
            assert await gw.metric("sm121_gateway_capture_failures_total") == 1
    finally:
        await fake.stop()


async def _no_models(_: web.Request) -> web.Response:
    return web.json_response({"data": []})


async def _wire_upstream(handler: web.RequestHandler) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    app.router.add_get("/v1/models", _no_models)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, f"http://127.0.0.1:{port}"


async def test_upstream_is_asked_for_identity_and_a_gzip_answer_reaches_the_client_whole(
) -> None:
    """Regression: aiohttp asked the upstream for gzip on its own and the gateway passed the
    compressed bytes on with Content-Encoding stripped: the client got binary garbage."""
    seen: list[str] = []
    body = json.dumps({"choices": [{"message": {"content": "hello"}}]}).encode()

    async def handler(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Accept-Encoding", ""))
        if "gzip" in request.headers.get("Accept-Encoding", ""):
            return web.Response(body=gzip.compress(body), content_type="application/json",
                                headers={"Content-Encoding": "gzip"})
        return web.Response(body=body, content_type="application/json")

    runner, url = await _wire_upstream(handler)
    try:
        async with running_gateway(url) as gw:
            response = await gw.http.post(f"{gw.url}/v1/chat/completions",
                                          json={"model": "m", "messages": []},
                                          headers={"Accept-Encoding": "gzip, br"})
            assert (await response.json())["choices"][0]["message"]["content"] == "hello"
        assert seen == ["identity"]
    finally:
        await runner.cleanup()


async def test_an_upstream_that_compresses_anyway_keeps_its_header() -> None:
    """Bytes and the header that describes them travel together: the gateway never
    decompresses, so it must not strip Content-Encoding either."""
    async def handler(_: web.Request) -> web.Response:
        return web.Response(body=gzip.compress(b'{"ok": true}'), content_type="application/json",
                            headers={"Content-Encoding": "gzip"})

    runner, url = await _wire_upstream(handler)
    try:
        async with running_gateway(url) as gw:
            response = await gw.chat()
            assert response.headers["Content-Encoding"] == "gzip"
            assert await response.json() == {"ok": True}  # the client decompresses
    finally:
        await runner.cleanup()


async def test_headers_named_in_connection_do_not_cross_the_proxy() -> None:
    seen: list[dict[str, str]] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(dict(request.headers))
        return web.json_response({"ok": True}, headers={
            "Connection": "keep-alive, X-Upstream-Hop", "X-Upstream-Hop": "secret",
            "X-Upstream-Kept": "yes"})

    runner, url = await _wire_upstream(handler)
    try:
        async with running_gateway(url) as gw:
            response = await gw.http.post(
                f"{gw.url}/v1/chat/completions", json={"model": "m", "messages": []},
                headers={"Connection": "X-Client-Hop, keep-alive", "X-Client-Hop": "private",
                         "X-Client-Kept": "yes", "Keep-Alive": "timeout=5", "TE": "trailers",
                         "Proxy-Connection": "keep-alive"})
            assert response.status == 200
            assert "X-Upstream-Hop" not in response.headers
            assert response.headers["X-Upstream-Kept"] == "yes"
        sent = {k.lower() for k in seen[0]}
        assert "x-client-hop" not in sent and "keep-alive" not in sent and "te" not in sent
        assert "proxy-connection" not in sent
        assert seen[0]["X-Client-Kept"] == "yes"
    finally:
        await runner.cleanup()
