"""The locality watch through the gateway: report endpoint, metrics, block size discovery."""

from __future__ import annotations

from fake_upstream import BLOCK_SIZE, FakeUpstream
from gateway_harness import running_gateway

from sm121.gateway.sessions import client_digest

AGENT_1 = "h:" + client_digest("agent-1")


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
    assert session["session"] == AGENT_1 and session["compared"] == 3
    assert session["last"]["first_divergence"] == 21  # "null<system>now: 10:0" then the minute
    assert session["last"]["reusable_tokens"] == BLOCK_SIZE
    assert session["last"]["changed"].startswith("messages[0].content")
    assert session["warnings"] == 1
    assert f'sm121_gateway_locality_reusable_fraction{{session="{AGENT_1}"}} 0.02' in metrics
    assert "sm121_gateway_locality_warnings_total 1.0" in metrics


async def test_client_session_ids_are_digests_in_metrics_and_locality() -> None:
    """A client's session id (header or `user`) may be anything it likes; /metrics and
    /sm121/locality (and the locality warning in the log) show only its digest."""
    secret_header, secret_user = "alice@example.com:ticket-4711", "bob@example.com"
    fake = await FakeUpstream().start()
    try:
        async with running_gateway(fake.url) as gw:
            for turn in range(1, 3):
                for headers, user in (({"x-session-id": secret_header}, {}),
                                      ({}, {"user": secret_user})):
                    response = await gw.http.post(
                        f"{gw.url}/v1/chat/completions", headers=headers,
                        json={"model": "fake", "messages": _messages("10:00", turn), **user})
                    assert response.status == 200
                    await gw.gateway.watch.drain()
            report = await (await gw.http.get(f"{gw.url}/sm121/locality")).text()
            metrics = await (await gw.http.get(f"{gw.url}/metrics")).text()
    finally:
        await fake.stop()
    for shown in (report, metrics):
        assert "alice" not in shown and "bob" not in shown and "ticket" not in shown
        assert "h:" + client_digest(secret_header) in shown
        assert "u:" + client_digest(secret_user) in shown


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
