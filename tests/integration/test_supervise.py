"""Supervision with real processes: a kill -9 of the tiny engine's process group under
`serve --supervise --gateway` (one engine boot), and a crash loop that gives up after the
recipe's `max` restarts (an engine command that fails at once: no engine boot).

Its engines are its own, but it runs in the session engine's session (no `own_engines`
marker): that session has the shorter critical path, and the marker only places a file."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from support import free_port, run_cli
from support.timeouts import BOOT_S, SERVE_S

from sm121.hosts.processes import group_alive

# Boots only engines of its own: `make test` runs it in the unit session (scripts/test-tiers.sh).
pytestmark = [pytest.mark.integration, pytest.mark.beside_unit]

CRASHY = """
name: crashy
description: an engine command that fails at once, as a bad flag does, without vLLM's import
model: {id: tiny, source: tiny, size_gb: 0.001}
engine: {kind: vllm}
runtime:
  kind: native
  command: [python, -c, "import sys; print('ValueError: refusing to start (test)',
            file=sys.stderr); sys.exit(3)"]
parallelism: {tp: 1, nodes: 1}
readiness: {timeout_s: 60, max_tokens: 8}
restart: {policy: on-failure, max: 3, within_s: 600}
"""


def _run(run_id: str) -> dict[str, Any]:
    rows = json.loads(run_cli("status", "--json").stdout)
    return next(r for r in rows if r["run_id"] == run_id)


def _latest_run(home: Path, prefix: str) -> str:
    runs = sorted((home / "runs").glob(f"{prefix}*/run.json"), key=lambda p: p.stat().st_mtime)
    return runs[-1].parent.name


def _post(url: str, body: dict[str, Any], timeout: float = 120) -> tuple[int, dict, bytes]:
    request = urllib.request.Request(url, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def _wait_status(run_id: str, wanted: str, timeout_s: float, restarts: int = 0
                 ) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        row = _run(run_id)
        if row["status"] == wanted and row["restarts"] >= restarts:
            return row
        time.sleep(1)
    raise AssertionError(f"{run_id} never reached {wanted}: {_run(run_id)['status']}")


def _stream_lines(url: str, model: str, into: list[str]) -> None:
    body = {"model": model, "prompt": "a stream in flight", "max_tokens": 60000,
            "ignore_eos": True, "stream": True}
    request = urllib.request.Request(f"{url}/v1/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        for line in response:
            into.append(line.decode().strip())


def test_kill_9_under_supervision_restarts_and_stop_leaves_nothing(sm121_home: Path) -> None:
    """Its own boot: it kills the engine and has it restarted, under its own watchdog and
    gateway, which the session engine must not go through."""
    port, gateway_port = free_port(), free_port()
    # The suite's boot timeout: a boot timeout under supervision is a crash (restarted),
    # which this test does not want.
    run_cli("serve", "tiny-cpu", "--profile", "agent", "--port", str(port), "--supervise",
            "--gateway", "--gateway-port", str(gateway_port), "--timeout", str(BOOT_S),
            timeout=SERVE_S)
    run_id = _latest_run(sm121_home, "tiny-cpu-agent-")
    gateway = f"http://127.0.0.1:{gateway_port}"
    first = _run(run_id)
    engine_pgid, watchdog = first["nodes"][0]["pgid"], first["watchdog_pid"]
    gateway_pgid = next(n["pgid"] for n in first["nodes"] if n["name"] == "gateway")
    try:
        lines: list[str] = []
        stream = threading.Thread(target=_stream_lines, args=(gateway, "tiny", lines))
        stream.start()
        while len(lines) < 5:
            time.sleep(0.2)
        os.killpg(engine_pgid, signal.SIGKILL)

        stream.join(timeout=120)
        data = [line for line in lines if line.startswith("data:")]
        assert data[-1] == "data: [DONE]" and '"error"' in data[-2]  # an error event, then DONE
        # Restarting as soon as the group is gone; the crash is on record once the watchdog
        # noticed (within its health interval).
        assert _wait_status(run_id, "restarting", 60, restarts=1)["restarts"] == 1
        status, headers, body = _post(f"{gateway}/v1/completions",
                                      {"model": "tiny", "prompt": "hi", "max_tokens": 4})
        assert status == 503 and headers.get("Retry-After") == "5", body[:300]

        row = _wait_status(run_id, "ready", BOOT_S)
        assert row["nodes"][0]["pgid"] != engine_pgid and not group_alive(engine_pgid)
        status, _, body = _post(f"{gateway}/v1/completions",
                                {"model": "tiny", "prompt": "hi", "max_tokens": 4})
        assert status == 200 and json.loads(body)["usage"]["completion_tokens"] == 4
        crash = row["crashes"][0]
        assert crash["how"] == "killed by signal 9" and crash["exit_code"] == -9
        assert crash["during"] == "serving" and crash["restarted"] and crash["excerpt"]
        assert "killed by signal 9" in run_cli("logs", run_id, "--crash").stdout
        history = [json.loads(x) for x in
                   (sm121_home / "startup-history.jsonl").read_text().splitlines()]
        restarts = [h for h in history if h["run_id"] == run_id]
        assert [h["restart"] for h in restarts] == [0, 1]
        assert restarts[1]["first_generation_s"] > 0
        sample = json.loads(run_cli("top", run_id, "--once", "--interval", "1").stdout)
        assert sample["targets"][0]["gateway"]["upstream_failures"] is not None
        assert sample["targets"][0]["engine"]["running"] == 0
    finally:
        run_cli("stop", run_id)
    engine_now = _run(run_id)["nodes"][0]["pgid"]
    for pgid in (watchdog, engine_now, gateway_pgid):
        assert not group_alive(pgid), f"process group {pgid} survived `sm121 stop`"
    assert _run(run_id)["status"] == "stopped"


def test_crash_loop_stops_after_max_restarts_and_keeps_every_cause(sm121_home: Path,
                                                                  tmp_path: Path) -> None:
    recipe = tmp_path / "crashy.yaml"
    recipe.write_text(CRASHY)
    # --trust: the stand-in engine is the recipe's own runtime.command.
    result = run_cli("serve", str(recipe), "--port", str(free_port()), "--trust", check=False,
                     timeout=300)
    assert result.returncode == 2 and "never stayed up" in result.stderr
    run_id = _latest_run(sm121_home, "crashy-")
    row = _run(run_id)
    assert row["status"] == "failed" and row["restarts"] == 3
    assert [c["restarted"] for c in row["crashes"]] == [True, True, True, False]
    for crash in row["crashes"]:
        assert crash["exit_code"] == 3 and crash["during"] == "boot"
        assert crash["cause"] == "ValueError: refusing to start (test)"
    assert not group_alive(row["watchdog_pid"])
    assert run_cli("logs", run_id, "--crash").stdout.count("refusing to start") >= 4
