"""The proxy against a purpose-built fake upstream: pass-through, policy, and own routes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from fake_upstream import MAX_MODEL_LEN, FakeUpstream
from gateway_harness import Running, running_gateway

from sm121.gateway.handlers import STRIPPED_HEADER


@pytest.fixture
async def upstream() -> AsyncIterator[FakeUpstream]:
    fake = await FakeUpstream().start()
    yield fake
    await fake.stop()


@pytest.fixture
async def gw(upstream: FakeUpstream) -> AsyncIterator[Running]:
    async with running_gateway(upstream.url) as running:
        yield running


async def test_stream_passes_through_with_status_and_headers(gw: Running) -> None:
    response = await gw.chat(stream=True)
    text = await response.text()
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/event-stream")
    assert response.headers["X-Upstream-Marker"] == "yes"
    assert text.count("data: ") == 7 and text.endswith("data: [DONE]\n\n")


async def test_chunks_arrive_before_the_stream_ends(upstream: FakeUpstream, gw: Running) -> None:
    upstream.chunks, upstream.interval_s = 3, 0.5
    response = await gw.chat(stream=True)
    first = await response.content.readany()
    assert b"tok0" in first and b"[DONE]" not in first  # not buffered until the end
    await response.read()


async def test_non_stream_body_and_usage_counted(gw: Running) -> None:
    response = await gw.chat()
    data = await response.json()
    assert data["choices"][0]["message"]["content"] == "hello"
    assert await gw.metric("sm121_gateway_tokens_total", kind="completion") == 3
    assert await gw.metric("sm121_gateway_tokens_total", kind="prompt") == 7


async def test_stripped_parameter_named_in_a_header(upstream: FakeUpstream, gw: Running) -> None:
    response = await gw.chat(repetition_penalty=1.3)
    assert response.status == 200
    assert response.headers[STRIPPED_HEADER] == "repetition_penalty"
    assert "repetition_penalty" not in upstream.bodies[-1]
    assert await gw.metric("sm121_gateway_params_stripped_total",
                           param="repetition_penalty") == 1


async def test_neutral_value_passes_silently(upstream: FakeUpstream, gw: Running) -> None:
    response = await gw.http.post(f"{gw.url}/v1/completions", json={
        "model": "fake", "prompt": "x", "repetition_penalty": 1.0})
    assert response.status == 200
    assert STRIPPED_HEADER not in response.headers
    assert upstream.bodies[-1]["repetition_penalty"] == 1.0


async def test_rejected_parameter_gets_openai_400(upstream: FakeUpstream, gw: Running) -> None:
    response = await gw.chat(guided_grammar="root ::= x")
    error = (await response.json())["error"]
    assert response.status == 400
    assert error["param"] == "guided_grammar" and "not supported here" in error["message"]
    assert upstream.bodies == []


async def test_prompt_plus_max_tokens_checked_against_context(upstream: FakeUpstream,
                                                              gw: Running) -> None:
    await gw.http.get(f"{gw.url}/v1/models")  # the fake answers max_model_len
    big = "y" * (MAX_MODEL_LEN - 100)
    response = await gw.http.post(f"{gw.url}/v1/completions", json={
        "model": "fake", "prompt": big, "max_tokens": 500})
    error = (await response.json())["error"]
    assert response.status == 400
    assert "max-model-len" in error["message"] and error["param"] == "max_tokens"
    assert upstream.bodies == [] and upstream.tokenize_calls == 1


async def test_short_request_is_not_tokenized(upstream: FakeUpstream, gw: Running) -> None:
    await gw.chat(max_tokens=10)
    assert upstream.tokenize_calls == 0


async def test_models_and_tokenize_pass_through(gw: Running) -> None:
    models = await (await gw.http.get(f"{gw.url}/v1/models")).json()
    tokens = await (await gw.http.post(f"{gw.url}/tokenize", json={"prompt": "abc"})).json()
    assert models["data"][0]["id"] == "fake"
    assert tokens["count"] == 3


async def test_own_metrics(gw: Running) -> None:
    await gw.chat(stream=True)
    text = await (await gw.http.get(f"{gw.url}/metrics")).text()
    assert "sm121_gateway_ttft_seconds_count" in text
    assert 'sm121_gateway_requests_total{route="/v1/chat/completions",status="200"} 1.0' in text
    assert "sm121_gateway_queue_wait_seconds" in text


async def test_malformed_json_gets_400(gw: Running) -> None:
    response = await gw.http.post(f"{gw.url}/v1/chat/completions", data=b"{not json",
                                  headers={"Content-Type": "application/json"})
    assert response.status == 400
    assert "not valid JSON" in (await response.json())["error"]["message"]


async def test_body_that_is_not_an_object_gets_400(gw: Running) -> None:
    response = await gw.http.post(f"{gw.url}/v1/chat/completions", json=[1, 2])
    assert response.status == 400


async def test_body_over_the_limit_gets_413(upstream: FakeUpstream) -> None:
    async with running_gateway(upstream.url, max_body_bytes=1000) as small:
        response = await small.http.post(f"{small.url}/v1/chat/completions",
                                         json={"prompt": "z" * 5000})
        assert response.status == 413
        assert "at most 1,000 bytes" in (await response.json())["error"]["message"]
    assert upstream.bodies == []


async def test_unknown_route_gets_404(gw: Running) -> None:
    response = await gw.http.get(f"{gw.url}/v1/nothing-here")
    assert response.status == 404
    assert (await response.json())["error"]["type"] == "not_found"
