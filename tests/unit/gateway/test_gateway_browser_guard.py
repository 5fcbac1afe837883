"""Host and Origin: a web page that rebinds its name to 127.0.0.1, or posts across origins,
gets nothing from the gateway; sm121's own clients and SDK-style clients pass. Through the
real `sm121 gateway` process (curl, as the issue's reproduction) and the real runner."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import aiohttp
import pytest
from fake_upstream import FakeUpstream, in_its_own_thread
from gateway_harness import running_gateway
from support.gateway_process import gateway_process

from sm121.engines.client_sync import SyncEngineClient

ROUTES = [("GET", "/sm121/upstreams"), ("GET", "/metrics"), ("GET", "/sm121/locality"),
          ("GET", "/health"), ("GET", "/v1/models"), ("POST", "/v1/chat/completions"),
          ("POST", "/v1/messages"), ("POST", "/tokenize"), ("GET", "/no/such/route")]
CHAT = {"model": "fake", "messages": [{"role": "user", "content": "hi"}]}


def _curl(url: str, *args: str) -> tuple[int, str]:
    done = subprocess.run(["curl", "-s", "-o", "-", "-w", "\n%{http_code}", *args, url],
                          capture_output=True, text=True, timeout=30, check=True)
    body, _, code = done.stdout.rpartition("\n")
    return int(code), body


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_a_rebound_name_gets_421_from_the_real_gateway(tmp_path: Path) -> None:
    """The issue's reproduction: `curl -H 'Host: evil.example' .../sm121/upstreams`."""
    with in_its_own_thread(FakeUpstream()) as fake, \
            gateway_process(fake.url, tmp_path) as gateway:
        status, body = _curl(f"{gateway.url}/sm121/upstreams", "-H", "Host: evil.example")
        assert status == 421, body
        assert fake.url not in body and "--allowed-host" in body
        for path in ("/metrics", "/sm121/locality"):
            assert _curl(f"{gateway.url}{path}", "-H", "Host: evil.example")[0] == 421
        generated = _curl(f"{gateway.url}/v1/chat/completions", "-H", "Host: evil.example",
                          "-H", "Content-Type: application/json", "-d", json.dumps(CHAT))
        assert generated[0] == 421 and fake.requests == 0
        # A page's cross-origin form post, under the right Host, is refused too.
        posted = _curl(f"{gateway.url}/v1/chat/completions", "-H", "Content-Type: text/plain",
                       "-d", json.dumps(CHAT))
        assert posted[0] == 415 and fake.requests == 0
        page = _curl(f"{gateway.url}/sm121/upstreams", "-H", "Origin: https://evil.example")
        assert page[0] == 403
        # sm121's own client (top, connect's probe and bench use it) is untouched.
        status_code, models = SyncEngineClient(gateway.url).request("/v1/models")
        assert status_code == 200 and b"fake" in models
        assert SyncEngineClient(gateway.url).request("/v1/chat/completions", CHAT)[0] == 200
        assert fake.requests == 1


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_allowed_host_and_origin_are_let_through(tmp_path: Path) -> None:
    with in_its_own_thread(FakeUpstream()) as fake, \
            gateway_process(fake.url, tmp_path, "--allowed-host", "spark.lan",
                            "--allow-origin", "https://app.example") as gateway:
        assert _curl(f"{gateway.url}/sm121/upstreams", "-H", "Host: spark.lan:8100")[0] == 200
        assert _curl(f"{gateway.url}/sm121/upstreams",
                     "-H", "Origin: https://app.example")[0] == 200
        assert _curl(f"{gateway.url}/sm121/upstreams",
                     "-H", "Origin: https://other.example")[0] == 403


@pytest.mark.parametrize(("method", "path"), ROUTES)
async def test_every_route_refuses_a_foreign_host_and_a_page(method: str, path: str) -> None:
    fake = await FakeUpstream().start()
    try:
        async with running_gateway(fake.url) as gw:
            url = f"{gw.url}{path}"
            for headers, status in (({"Host": "evil.example"}, 421),
                                    ({"Host": "127.0.0.1.evil.example"}, 421),
                                    ({"Origin": "https://evil.example"}, 403),
                                    ({"Origin": "null"}, 403),
                                    ({"Sec-Fetch-Site": "cross-site"}, 403)):
                async with gw.http.request(method, url, json=CHAT, headers=headers) as reply:
                    assert reply.status == status, (headers, await reply.text())
            assert fake.requests == 0
    finally:
        await fake.stop()


async def test_loopback_names_and_sdk_clients_pass() -> None:
    fake = await FakeUpstream().start()
    try:
        async with running_gateway(fake.url) as gw:
            port = gw.url.rsplit(":", 1)[1]
            for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}",
                         "127.0.0.2", "LOCALHOST"):
                async with gw.http.get(f"{gw.url}/health", headers={"Host": host}) as reply:
                    assert reply.status == 200, host
            # No Content-Type at all (a bare client) still passes; forms do not.
            async with aiohttp.ClientSession() as http:
                async with http.post(f"{gw.url}/v1/chat/completions",
                                     data=json.dumps(CHAT).encode(),
                                     headers={"Content-Type": "application/json"}) as reply:
                    assert reply.status == 200
                for kind in ("text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                             "multipart/form-data; boundary=x"):
                    async with http.post(f"{gw.url}/v1/chat/completions",
                                         data=json.dumps(CHAT).encode(),
                                         headers={"Content-Type": kind}) as reply:
                        assert reply.status == 415, kind
    finally:
        await fake.stop()


def test_host_names_are_parsed_strictly() -> None:
    from sm121.gateway.browser_guard import host_allowed, host_name

    assert host_name("LocalHost:8100") == "localhost"
    assert host_name("[::1]:8100") == "::1"
    assert host_name("[::1]x") is None and host_name("") is None
    assert host_allowed("10.1.2.3:8100", "0.0.0.0", ())  # an address: never a rebound name
    assert not host_allowed("spark.lan", "0.0.0.0", ())
    assert host_allowed("spark.lan.", "0.0.0.0", ("spark.lan",))
    assert not host_allowed("10.1.2.3", "127.0.0.1", ())
