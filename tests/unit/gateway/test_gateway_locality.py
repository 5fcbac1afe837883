"""The locality watch through the gateway: report endpoint, metrics, block size discovery."""

from __future__ import annotations

from fake_upstream import BLOCK_SIZE, FakeUpstream
from gateway_harness import running_gateway


def _messages(stamp: str, turns: int) -> list[dict[str, str]]:
    system = {"role": "system", "content": f"now: {stamp}. " + "You are careful. " * 20}
    return [system] + [{"role": "user", "content": f"turn {i} " * 8} for i in range(turns)]


async def test_session_report_and_metrics() -> None:
    fake = await FakeUpstream().start()
    try:
        async with running_gateway(fake.url) as gw:
            for turn in range(1, 5):
                response = await gw.http.post(
                    f"{gw.url}/v1/chat/completions", headers={"x-session-id": "agent-1"},
                    json={"model": "fake", "messages": _messages(f"10:0{turn}", turn)})
                assert response.status == 200
                await gw.gateway.watch.drain()
            report = await (await gw.http.get(f"{gw.url}/sm121/locality")).json()
            metrics = await (await gw.http.get(f"{gw.url}/metrics")).text()
    finally:
        await fake.stop()
    assert report["block_size"] == BLOCK_SIZE  # asked of the upstream's /metrics
    session = report["sessions"][0]
    assert session["session"] == "h:agent-1" and session["compared"] == 3
    assert session["last"]["first_divergence"] == 21  # "null<system>now: 10:0" then the minute
    assert session["last"]["reusable_tokens"] == BLOCK_SIZE
    assert session["last"]["changed"].startswith("messages[0].content")
    assert session["warnings"] == 1
    assert 'sm121_gateway_locality_reusable_fraction{session="h:agent-1"} 0.02' in metrics
    assert "sm121_gateway_locality_warnings_total 1.0" in metrics


async def test_locality_can_be_turned_off() -> None:
    from sm121.gateway.config import LocalitySettings

    fake = await FakeUpstream().start()
    try:
        async with running_gateway(fake.url, locality=LocalitySettings(enabled=False)) as gw:
            for turn in range(1, 3):
                await gw.http.post(f"{gw.url}/v1/chat/completions",
                                   json={"model": "fake", "messages": _messages("t", turn)})
            assert fake.tokenize_calls == 0
    finally:
        await fake.stop()
