"""The upstreams file a running gateway watches (`serve --gateway-join`): a bad version is
refused as a whole, logged, and the watch goes on; a file others may write is not read; a
join waits for the gateway's word. A real gateway watching a real file, fake engines."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fake_upstream import FakeUpstream
from gateway_harness import Running, discovered, fake_specs, running_gateway

from sm121.errors import Sm121Error
from sm121.gateway import registry
from sm121.gateway import state as gateway_state
from sm121.gateway.config import RoutingSettings, UpstreamSpec
from sm121.serving.join import join

FAST = RoutingSettings(health_interval_s=0.1, readmit_after_s=0.3)
BAD_URL = "http://127.0.0.1:18602:99999"


@pytest.fixture(autouse=True)
def fast_watch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "POLL_S", 0.05)


@pytest.fixture
async def fakes() -> AsyncIterator[tuple[FakeUpstream, FakeUpstream]]:
    first, second = await FakeUpstream().start(), await FakeUpstream(model="other").start()
    yield first, second
    await first.stop()
    await second.stop()


def _write_raw(path: Path, upstreams: list[dict[str, object]]) -> None:
    """As an editor (or a stale writer) would leave it: no check on the way in."""
    path.write_text(json.dumps({"gateway_url": None, "upstreams": upstreams}))
    os.chmod(path, 0o600)


async def _until(gw: Running, names: set[str], seconds: float = 5.0) -> None:
    for _ in range(int(seconds / 0.05)):
        if set(gw.gateway.replicas) == names:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"replicas {sorted(gw.gateway.replicas)}, wanted {sorted(names)}")


async def _refused(gw: Running) -> str:
    """The gateway's word on the file, through /sm121/upstreams, once it has one."""
    for _ in range(100):
        report = await (await gw.http.get(f"{gw.url}/sm121/upstreams")).json()
        verdict = report.get("registry") or {}
        if verdict.get("error"):
            return str(verdict["error"])
        await asyncio.sleep(0.05)
    raise AssertionError("the gateway reported no refusal")


async def test_a_bad_entry_is_refused_whole_and_later_joins_still_happen(
        tmp_path: Path, fakes: tuple[FakeUpstream, FakeUpstream],
        caplog: pytest.LogCaptureFixture) -> None:
    first_spec, second_spec = fake_specs(*fakes)
    path = tmp_path / registry.FILE_NAME
    registry.create(path, "http://gateway", [first_spec])
    async with running_gateway(registry=path, routing=FAST) as gw:
        await _until(gw, {"fake-0"})
        with caplog.at_level(logging.ERROR, "sm121.gateway"):
            _write_raw(path, [registry.spec_to_json(first_spec),
                              registry.spec_to_json(second_spec),
                              {"url": BAD_URL, "name": "bad"}])
            await asyncio.sleep(0.3)  # a few reads of the watch
        # Nothing of a refused version is applied, not even its good entries.
        assert set(gw.gateway.replicas) == {"fake-0"}
        assert any(BAD_URL in r.getMessage() for r in caplog.records)
        # The watch lives on: the next good version is applied.
        registry.create(path, "http://gateway", [first_spec, second_spec])
        await _until(gw, {"fake-0", "fake-1"})
        await discovered(gw, 2)
        assert (await gw.chat(model="other")).status == 200


@pytest.mark.parametrize("how", ["group-writable", "world-writable", "foreign owner"])
async def test_a_file_others_may_write_is_not_read(
        tmp_path: Path, fakes: tuple[FakeUpstream, FakeUpstream], how: str) -> None:
    if how == "foreign owner" and os.geteuid() != 0:
        pytest.skip("only root can give a file away")
    first_spec, second_spec = fake_specs(*fakes)
    path = tmp_path / registry.FILE_NAME
    registry.create(path, "http://gateway", [first_spec])
    async with running_gateway(registry=path, routing=FAST) as gw:
        await _until(gw, {"fake-0"})
        registry.create(path, "http://gateway", [first_spec, second_spec])
        if how == "foreign owner":
            os.chown(path, 4242, -1)
        else:
            os.chmod(path, 0o620 if how == "group-writable" else 0o602)
        error = await _refused(gw)
        assert set(gw.gateway.replicas) == {"fake-0"}
        assert "no one else may write it" in error
        assert ("uid 4242" if how == "foreign owner" else "mode 06") in error
        os.chown(path, os.geteuid(), -1)
        os.chmod(path, 0o600)  # a chmod alone is a new version to look at
        await _until(gw, {"fake-0", "fake-1"})


async def test_join_returns_once_the_gateway_routes_to_it(
        tmp_path: Path, fakes: tuple[FakeUpstream, FakeUpstream]) -> None:
    first_spec, second_spec = fake_specs(*fakes)
    path = tmp_path / registry.FILE_NAME
    async with running_gateway(registry=path, routing=FAST) as gw:
        registry.create(path, gw.url, [first_spec])
        assert await asyncio.to_thread(join, path, second_spec, None, 10) == gw.url
        assert "fake-1" in gw.gateway.replicas


async def test_join_reports_a_refusal_instead_of_joined(
        tmp_path: Path, fakes: tuple[FakeUpstream, FakeUpstream]) -> None:
    first_spec, second_spec = fake_specs(*fakes)
    path = tmp_path / registry.FILE_NAME
    async with running_gateway(registry=path, routing=FAST) as gw:
        registry.create(path, gw.url, [first_spec])
        _write_raw(path, [registry.spec_to_json(first_spec), {"url": BAD_URL, "name": "bad"}])
        with pytest.raises(Sm121Error, match="not a valid URL"):
            await asyncio.to_thread(join, path, second_spec, None, 10)
        registry.create(path, gw.url, [first_spec])
        os.chmod(path, 0o666)
        with pytest.raises(Sm121Error, match="no one else may write it"):
            await asyncio.to_thread(join, path, second_spec, None, 10)
        assert "fake-1" not in gw.gateway.replicas


async def test_join_of_a_gateway_that_does_not_look_times_out_with_a_clear_error(
        tmp_path: Path, fakes: tuple[FakeUpstream, FakeUpstream]) -> None:
    first_spec, second_spec = fake_specs(*fakes)
    path = tmp_path / registry.FILE_NAME
    async with running_gateway(upstreams=(first_spec,), routing=FAST) as gw:  # no --registry
        registry.create(path, gw.url, [first_spec])
        with pytest.raises(Sm121Error, match="did not take fake-1 within 1 s"):
            await asyncio.to_thread(join, path, second_spec, None, 1)


@pytest.mark.parametrize("entry, said", [
    ({"url": BAD_URL}, "not a valid URL"),
    ({"url": "http://:8000"}, "names no host"),
    ({"url": "http://u:p@127.0.0.1:8000"}, "credentials"),
    ({"url": "http://127.0.0.1:8000", "max_inflight": "64"}, "max_inflight"),
    ({"url": "http://127.0.0.1:8000", "surprise": 1}, "surprise"),
    ({"url": "ftp://127.0.0.1"}, "not an http(s) URL"),
])
def test_the_whole_file_is_checked_entry_by_entry(tmp_path: Path, entry: dict[str, object],
                                                  said: str) -> None:
    path = tmp_path / registry.FILE_NAME
    _write_raw(path, [{"url": "http://127.0.0.1:8000", "name": "good"}, entry])
    with pytest.raises(Sm121Error, match=said.replace("(", r"\(").replace(")", r"\)")):
        registry.load(path)


def test_two_entries_of_one_name_are_refused(tmp_path: Path) -> None:
    path = tmp_path / registry.FILE_NAME
    good = registry.spec_to_json(UpstreamSpec(url="http://127.0.0.1:8000", name="a"))
    _write_raw(path, [good, good])
    with pytest.raises(Sm121Error, match="names a twice"):
        registry.load(path)


async def test_join_reports_the_gateway_s_own_refusal(
        tmp_path: Path, fakes: tuple[FakeUpstream, FakeUpstream],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A version the writer accepts but the gateway cannot apply: the join reads the gateway's
    verdict on exactly that version (its content hash) and reports it."""
    first_spec, second_spec = fake_specs(*fakes)
    path = tmp_path / registry.FILE_NAME
    async with running_gateway(registry=path, routing=FAST) as gw:
        registry.create(path, gw.url, [first_spec])
        await _until(gw, {"fake-0"})

        def cannot(*_: object) -> None:
            raise RuntimeError("no room for another replica")

        monkeypatch.setattr(gateway_state, "Replica", cannot)
        with pytest.raises(Sm121Error, match="refused the upstreams file: .*no room"):
            await asyncio.to_thread(join, path, second_spec, None, 10)
        assert set(gw.gateway.replicas) == {"fake-0"}
