"""`sm121 serve` of the embedded default on the real vLLM CPU engine: readiness, status, logs,
stop, and the ways a boot goes wrong."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from support import SM121, TinyEngine, free_port, run_cli
from support.timeouts import FAILED_BOOT_S

from sm121.hosts.processes import group_alive

pytestmark = pytest.mark.integration


def test_served_engine_generates(tiny_engine: TinyEngine) -> None:
    body = json.dumps({"model": tiny_engine.model, "max_tokens": 5, "ignore_eos": True,
                       "messages": [{"role": "user", "content": "hello"}]}).encode()
    request = urllib.request.Request(f"{tiny_engine.base_url}/v1/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        assert json.load(response)["usage"]["completion_tokens"] == 5


def test_status_shows_ready_with_startup_facts(tiny_engine: TinyEngine) -> None:
    runs = json.loads(run_cli("status", "--json").stdout)
    (run,) = [r for r in runs if r["run_id"] == tiny_engine.run_id]
    assert run["status"] == "ready"
    timings = run["timings"]
    assert 0 <= timings["process_started_s"] <= timings["port_open_s"] \
        <= timings["first_generation_s"]
    assert run["boot"]["kv_pool_tokens"] == 4_194_304  # VLLM_CPU_KVCACHE_SPACE=2 for this model
    assert run["boot"]["max_concurrency"] == 64.0


def test_run_directory_holds_argv_env_and_pid(tiny_engine: TinyEngine) -> None:
    folder = tiny_engine.run_dir
    # One shape for local and cluster runs: per node name.
    argv = json.loads((folder / "argv.json").read_text())["local"]
    assert "--max-num-batched-tokens=2048" in argv
    env = json.loads((folder / "env.json").read_text())["local"]
    assert env["set"]["VLLM_CPU_KVCACHE_SPACE"] == "2"
    pid = int((folder / "engine.pid").read_text())
    assert group_alive(pid)


def test_logs_print_the_engine_log(tiny_engine: TinyEngine) -> None:
    out = run_cli("logs", tiny_engine.run_id).stdout
    assert "KV cache size" in out and "POST /v1/completions" in out


def test_second_serve_on_a_busy_port_is_refused(tiny_engine: TinyEngine) -> None:
    result = run_cli("serve", "tiny-cpu", "--port", str(tiny_engine.port), check=False)
    assert result.returncode == 2
    assert f"port {tiny_engine.port}" in result.stderr and "already in use" in result.stderr


def test_boot_failure_is_reported_with_its_cause(sm121_home: Path) -> None:
    """Its own (failing) boot: vLLM refuses the engine args, so no engine ever runs."""
    result = run_cli("serve", "tiny-cpu", "--port", str(free_port()),
                     "--set", "max-model-len=99999999", check=False, timeout=FAILED_BOOT_S)
    assert result.returncode == 2
    assert "did not become ready" in result.stderr
    assert "cause:" in result.stderr and "max_model_len" in result.stderr
    run = _latest_run(sm121_home)
    assert run["status"] == "failed" and "max_model_len" in run["failure"]
    assert not group_alive(run["nodes"][0]["pgid"])


def test_stop_during_boot_leaves_no_process(sm121_home: Path) -> None:
    """`sm121 stop` from another shell while the engine boots: the group is gone and the
    waiting serve reports that the engine exited. Its own boot, stopped as soon as the engine
    has a pid: the subject is a boot in progress."""
    serve = subprocess.Popen([*SM121, "serve", "tiny-cpu", "--port", str(free_port())],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=os.environ.copy())
    run = _wait_for_pid(sm121_home, serve)
    run_cli("stop", run["run_id"])
    assert not group_alive(run["nodes"][0]["pgid"])
    _, stderr = serve.communicate(timeout=60)
    assert serve.returncode == 2 and "exited" in stderr


def test_sigterm_during_boot_stops_the_engine(sm121_home: Path) -> None:
    """A supervisor's SIGTERM takes the Ctrl-C path: the booting engine is stopped too. Its
    own boot, stopped as soon as the engine has a pid: the subject is a boot in progress."""
    serve = subprocess.Popen([*SM121, "serve", "tiny-cpu", "--port", str(free_port())],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=os.environ.copy())
    run = _wait_for_pid(sm121_home, serve)
    serve.send_signal(signal.SIGTERM)
    serve.communicate(timeout=90)
    assert serve.returncode == 130
    assert not group_alive(run["nodes"][0]["pgid"])
    stored = json.loads((sm121_home / "runs" / run["run_id"] / "run.json").read_text())
    assert stored["status"] == "stopped"


def _latest_run(home: Path) -> dict:
    files = sorted((home / "runs").glob("*/run.json"), key=lambda p: p.stat().st_mtime)
    return json.loads(files[-1].read_text())


def _wait_for_pid(home: Path, serve: subprocess.Popen[str]) -> dict:
    before = set((home / "runs").glob("*")) if (home / "runs").exists() else set()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for folder in set((home / "runs").glob("*")) - before:
            run_file = folder / "run.json"
            if run_file.exists():
                run = json.loads(run_file.read_text())
                if run["nodes"] and run["nodes"][0]["pgid"]:
                    return run
        assert serve.poll() is None, serve.stderr.read() if serve.stderr else ""
        time.sleep(0.2)
    raise AssertionError("the serve never recorded a pid")

