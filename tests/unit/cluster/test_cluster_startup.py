"""Start-up phases from engine logs, the history file, and the native start/stop scripts run
for real through the local transport."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from sm121.engines.vllm.adapter import VllmAdapter
from sm121.engines.vllm.phases import parse_phases
from sm121.hosts import processes
from sm121.hosts.transport import LocalTransport, SshTransport
from sm121.launch import runtimes
from sm121.launch.startup_history import build_record, load_history, node_startup, record
from sm121.runs.state import NodeProcess, RunInfo, Timings, create_run_dir

GPU_LOG = """\
(APIServer pid=1) INFO 08-14 10:00:00 [api_server.py:1] vLLM API server version 0.21
Loading safetensors checkpoint shards: 100% Completed | 78/78 [11:22<00:00, 8.75s/it]
(Worker pid=2) INFO 08-14 10:13:00 [default_loader.py:1] Loading weights took 682.50 seconds
(Worker pid=2) INFO 08-14 10:13:01 [gpu_model_runner.py:1] Model loading took 77.70 GiB memory and 690.000000 seconds
(Worker pid=2) INFO 08-14 10:14:00 [backends.py:1] Compiling a graph for compile range (1, 2048) takes 41.50 s
(Worker pid=2) INFO 08-14 10:15:00 [monitor.py:1] torch.compile takes 88.20 s in total
(Worker pid=2) INFO 08-14 10:16:00 [gpu_model_runner.py:1] Graph capturing finished in 35 secs, took 1.20 GiB
(EngineCore pid=3) INFO 08-14 10:16:05 [core.py:1] init engine (profile, create kv cache, warmup model) took 180.00 seconds
(APIServer pid=1) INFO 08-14 10:16:10 [entry.py:140] Starting vLLM server on http://0.0.0.0:8000
"""

CPU_WARM_LOG = """\
(APIServer pid=1) INFO 11-29 19:56:32 [model.py:1] Using max model len 4096
(Worker_TP0 pid=2) INFO 11-29 19:57:05 [default_loader.py:501] Loading weights took 0.01 seconds
(Worker_TP0 pid=2) INFO 11-29 19:57:06 [cpu_model_runner.py:87] Warming up model for the compilation...
(Worker_TP0 pid=2) INFO 11-29 19:57:07 [decorators.py:320] [backbone] Directly load AOT compilation from path /root/.cache/vllm/x
(Worker_TP0 pid=2) INFO 11-29 19:57:16 [cpu_model_runner.py:91] Warming up done.
(APIServer pid=1) INFO 11-29 19:57:30 [entry.py:140] Starting vLLM server on http://127.0.0.1:8610
"""


def test_gpu_phases_with_the_per_shard_rate() -> None:
    phases = parse_phases(GPU_LOG)
    assert phases.weights_s == 690.0 and phases.weights_gib == 77.7 and phases.shards == 78
    assert phases.s_per_shard == pytest.approx(690 / 78, abs=0.001)
    assert phases.compile_s == 88.2 and phases.compile_cache == "miss"
    assert phases.start_kind == "cold"
    assert phases.graph_capture_s == 35 and phases.init_engine_s == 180
    assert phases.api_up_log_s == 16 * 60 + 10


def test_cpu_warm_start_from_its_compile_cache() -> None:
    phases = parse_phases(CPU_WARM_LOG)
    assert phases.compile_cache == "hit" and phases.start_kind == "warm"
    assert phases.compile_s == 10  # from the warm-up bracket's timestamps
    assert phases.api_up_log_s == 58 and phases.weights_s == 0.01


def test_a_compile_cache_that_fails_to_load_is_a_cold_start() -> None:
    failed = CPU_WARM_LOG.replace(
        "Directly load AOT compilation from path /root/.cache/vllm/x",
        "Compiling model again due to a load failure from /root/.cache/vllm/x, reason: boom")
    phases = parse_phases(failed + "[backbone] saved AOT compiled function to /x\n")
    assert phases.compile_cache == "load-failed" and phases.start_kind == "cold"


def test_an_empty_log_has_unknown_phases() -> None:
    phases = parse_phases("")
    assert phases.start_kind == "unknown" and phases.weights_s is None


def _run(run_id: str) -> RunInfo:
    create_run_dir(run_id)
    return RunInfo(run_id=run_id, recipe="r", profile="agent", created="2026-11-29T00:00:00",
                   base_url="http://x", model="m", nodes=[],
                   timings=Timings(hooks_s=1, process_started_s=2, port_open_s=50,
                                   first_generation_s=52))


def test_history_keeps_runs_side_by_side_and_one_cold_node_makes_a_cold_start(
        sm121_home: Path) -> None:
    cold = _run("r-cold")
    vllm = VllmAdapter()
    nodes = [node_startup("a", "head", CPU_WARM_LOG, 1.0, 2.0, vllm),
             node_startup("b", "worker", GPU_LOG, 1.5, 2.5, vllm)]
    record(cold, build_record(cold, nodes, ["before_serve warm-read on a: ok"], vllm))
    warm = _run("r-warm")
    record(warm, build_record(warm, [node_startup("a", "head", CPU_WARM_LOG, 1.0, 2.0, vllm)], [],
                              vllm))
    history = load_history("r", last=2)
    assert [(h.run_id, h.start) for h in history] == [("r-cold", "cold"), ("r-warm", "warm")]
    assert history[0].nodes[1].phases.shards == 78 and history[0].first_generation_s == 52
    saved = json.loads((cold.directory / "startup.json").read_text())
    assert saved["hooks"] == ["before_serve warm-read on a: ok"]
    assert load_history("other") == []


def test_native_start_and_stop_scripts_own_a_process_group(tmp_path: Path) -> None:
    files = runtimes.NodeFiles(run_dir=str(tmp_path / "run"))
    script = runtimes.native_start_script(
        ["sh", "-c", 'echo "hca=$NCCL_IB_HCA token=$HF_TOKEN"; exec sleep 60'],
        {"NCCL_IB_HCA": "roce a'b"}, files, secrets=True)
    assert "s3cret" not in script
    started = LocalTransport().run(["sh", "-c", script], input="HF_TOKEN=s3cret\n")
    assert started.ok, started.stderr
    pgid, boot_id, start_time = started.stdout.split()
    pgid = int(pgid)
    assert int(Path(files.pid_file).read_text()) == pgid
    assert boot_id == processes.boot_id() and start_time == processes.start_time(pgid)
    alive = LocalTransport().run_shell(runtimes.group_alive_script(pgid, boot_id, start_time))
    assert alive.stdout.strip() == "alive"
    # Another start time (a reused pid) or another boot: neither alive nor signalled.
    for other in ((boot_id, "1"), ("another-boot", start_time), (None, None)):
        assert LocalTransport().run_shell(
            runtimes.group_alive_script(pgid, *other)).stdout.strip() == "gone"
        assert LocalTransport().run_shell(
            runtimes.group_stop_script(pgid, *other, grace_s=5)).stdout.strip() == "gone"
        assert processes.group_alive(pgid)
    stopped = LocalTransport().run_shell(runtimes.group_stop_script(pgid, boot_id, start_time,
                                                                    grace_s=5))
    assert stopped.stdout.strip().endswith("gone")
    assert Path(files.log).read_text().strip() == "hca=roce a'b token=s3cret"


def test_ssh_commands_multiplex_and_quote() -> None:
    transport = SshTransport(target="ops@spark2", port=2222, config="/etc/sm121/ssh_config")
    argv = transport.ssh_argv()
    assert argv[0] == "ssh" and argv[-1] == "ops@spark2"
    assert "ControlMaster=auto" in argv and "ControlPersist=60" in argv and "BatchMode=yes" in argv
    assert argv[argv.index("-F") + 1] == "/etc/sm121/ssh_config"
    assert argv[argv.index("-p") + 1] == "2222"
    control = next(a for a in argv if a.startswith("ControlPath="))
    assert len(control) < 100  # unix socket paths are short
    remote = shlex.join(["cat", "/run/x; rm -rf /"])
    assert remote == "cat '/run/x; rm -rf /'"


def test_a_node_process_remembers_how_to_reach_it() -> None:
    node = NodeProcess(name="b", ssh="127.0.0.3", ssh_port=2222, ssh_config="/c", log="/l",
                       pid_file="/p", pgid=5, role="worker")
    from sm121.launch.remote import node_transport

    transport = node_transport(node)
    assert isinstance(transport, SshTransport)
    assert (transport.target, transport.port, transport.config) == ("127.0.0.3", 2222, "/c")
