"""`sm121 top` against the real tiny engine while requests run: its JSON agrees with the
engine's own /metrics, and the interactive view answers keys in a real terminal (tmux)."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import click.testing
import pytest
import typer
from support import SM121, TinyEngine, run_cli

from sm121.cli.main import app
from sm121.engines.prometheus import parse_metrics

pytestmark = pytest.mark.integration
STREAMS = 3
# The real app's click command, built once while the host is quiet: typer builds it anew on
# every invoke, and under the streams' load that alone took most of a minute.
_COMMAND = typer.main.get_command(app)


def _metrics(url: str) -> dict[str, float]:
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
        return parse_metrics(response.read().decode())


class Traffic:
    """STREAMS long generations kept running until the test ends: a stream that finishes
    (a fast host decodes 60000 tokens in minutes) is posted again, and counted, so a
    measurement can tell whether the load stayed the same throughout."""

    def __init__(self) -> None:
        self.finished = 0


async def _stream(session: aiohttp.ClientSession, engine: TinyEngine, salt: int,
                  traffic: Traffic) -> None:
    # Not streamed: the engine schedules and counts a generation the same either way, and a
    # stream of the eager tiny engine (about 800 SSE lines/s each) kept this process's GIL
    # and the API server so busy that the test's own work (its /metrics polls, typer
    # building the app for `top`) took 50-127 s where it needs seconds.
    body = {"model": engine.model, "prompt": f"traffic {salt} " * 20, "max_tokens": 60000,
            "ignore_eos": True, "stream": False}
    while True:
        async with session.post(f"{engine.base_url}/v1/completions", json=body) as response:
            await response.read()
        traffic.finished += 1


@pytest.fixture
def traffic(tiny_engine: TinyEngine) -> Iterator[Traffic]:
    """STREAMS generations running until the test ends (then aborted by disconnect)."""
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    state = Traffic()

    async def main() -> None:
        # No total timeout: aiohttp's default (300 s) would cut the streams mid-test.
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            tasks = [asyncio.create_task(_stream(session, tiny_engine, i, state))
                     for i in range(STREAMS)]
            await stop.wait()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while _metrics(tiny_engine.base_url).get("vllm:num_requests_running", 0) < STREAMS:
        assert time.monotonic() < deadline, "the traffic never reached the engine"
        time.sleep(0.5)
    try:
        yield state
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=30)


def _top_bracketed(url: str, traffic: Traffic
                   ) -> tuple[dict[str, Any], dict[str, float], dict[str, float], float]:
    """One `top --once` between two /metrics scrapes, taken again (at most 3 times) if a
    stream finished inside the bracket: only a steady load makes the comparison exact."""
    for _ in range(3):
        finished, before, t0 = traffic.finished, _metrics(url), time.monotonic()
        # In this process: the streams saturate a 2-core host, where a new Python process
        # took up to 4.3 s to run `pass`, and `sm121 top --once` 7-23 s (CI passed 300 s).
        result = click.testing.CliRunner().invoke(
            _COMMAND, ["top", "--once", "--json", "--url", url, "--interval", "3"])
        after, t1 = _metrics(url), time.monotonic()
        assert result.exit_code == 0, result.output
        time.sleep(1)  # a stream the engine ended just before `after` is counted by now
        if traffic.finished == finished:
            return json.loads(result.stdout), before, after, t1 - t0
    raise AssertionError("a stream finished inside every bracket; the load never held")


def test_top_once_json_agrees_with_metrics(tiny_engine: TinyEngine, traffic: Traffic) -> None:
    sample, before, after, elapsed = _top_bracketed(tiny_engine.base_url, traffic)
    engine = sample["targets"][0]["engine"]
    assert engine["running"] == after["vllm:num_requests_running"] == STREAMS
    assert engine["waiting"] == after["vllm:num_requests_waiting"] == 0
    # KV usage grows as the streams decode: top's reading lies between the two scrapes, at
    # top's two decimals (rounding keeps the order; 0.2472 and 0.2480 both show as 0.25).
    low, high = (round(100 * before["vllm:kv_cache_usage_perc"], 2),
                 round(100 * after["vllm:kv_cache_usage_perc"], 2))
    assert 0 < low <= engine["kv_usage_pct"] <= high
    # top's interval lies inside the bracket, so it saw at most the bracket's tokens.
    bracket = after["vllm:generation_tokens_total"] - before["vllm:generation_tokens_total"]
    seen = engine["generation_tok_s"] * engine["interval_s"]
    assert 0 < seen <= bracket + 1
    # No comparison of rates: on a loaded host the engine's counter moves in bursts (its API
    # server drains a backlog of outputs at once), so top's few seconds and the bracket's pace
    # differ either way (CI, stop 27: 629 tok/s in top's 3 s against 116 over the bracket; a
    # whole-suite run: 416 against 5,076). The containment above is the exact check.
    assert elapsed > engine["interval_s"]  # the bracket held top's whole interval
    assert engine["itl_s"]["count"] > 0 and engine["itl_s"]["p50"] > 0
    assert sample["hosts"][0]["node"] == "local" and sample["hosts"][0]["mem_available_gib"] > 0


def test_top_once_json_from_the_command_line(tiny_engine: TinyEngine) -> None:
    """The real process, with no load of this test's: one JSON line on stdout."""
    result = run_cli("top", "--once", "--json", "--url", tiny_engine.base_url,
                     "--interval", "1")
    (line,) = result.stdout.splitlines()
    sample = json.loads(line)
    target = sample["targets"][0]
    assert sample["kind"] == "top" and target["errors"] == []
    assert target["engine"]["url"] == tiny_engine.base_url and target["engine"]["running"] >= 0


def _tmux(socket_name: str, *args: str) -> str:
    result = subprocess.run(["tmux", "-L", socket_name, *args], capture_output=True,
                            text=True, timeout=30)
    return result.stdout


def _screen_shows(socket_name: str, text: str, timeout_s: float = 60) -> str:
    deadline = time.monotonic() + timeout_s
    screen = ""
    while time.monotonic() < deadline:
        screen = _tmux(socket_name, "capture-pane", "-p", "-t", "top")
        if text in screen:
            return screen
        time.sleep(0.5)
    raise AssertionError(f"{text!r} never appeared; the screen:\n{screen}")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed "
                    "(scripts/ensure-sshd.sh installs it)")
def test_top_live_view_keys_in_a_real_terminal(tiny_engine: TinyEngine, tmp_path: Path
                                               ) -> None:
    record = tmp_path / "top.jsonl"
    socket_name = f"sm121-top-{os.getpid()}"
    command = " ".join(shlex.quote(a) for a in [
        *SM121, "top", "--url", tiny_engine.base_url, "--interval", "1", "--record",
        str(record)])
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in os.environ.items()
                   if k in ("PYTHONPATH", "SM121_HOME", "PATH"))
    script = f"env {env} {command}; echo TOP-EXITED $?; sleep 60"
    _tmux(socket_name, "new-session", "-d", "-s", "top", "-x", "220", "-y", "50", script)
    try:
        _screen_shows(socket_name, "engine (last interval)")
        _screen_shows(socket_name, "view: runs")
        _tmux(socket_name, "send-keys", "-t", "top", "n")
        screen = _screen_shows(socket_name, "view: nodes")
        assert "MemFree" in screen and "local" in screen
        _tmux(socket_name, "send-keys", "-t", "top", "q")
        _screen_shows(socket_name, "TOP-EXITED 0", timeout_s=30)
    finally:
        _tmux(socket_name, "kill-server")  # this test's own tmux server, by its socket
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert lines[0]["kind"] == "top-start" and any(r["kind"] == "top" for r in lines)
    report = run_cli("bench", "report", str(record), "--out", str(tmp_path / "report"))
    assert "report:" in report.stdout
    assert (tmp_path / "report" / "top-timeline.png").stat().st_size > 1000
