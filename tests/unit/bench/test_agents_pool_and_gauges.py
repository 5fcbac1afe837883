"""What an agents run's verdict reads besides its counters: the engine's gauges' peaks (a run
bound by max-num-seqs reads "sequences", not "step budget"), and the KV pool where the
engine's /metrics does not say it (vLLM 0.21: a block size, no block count), from the boot log
of the sm121 run serving the URL, or given (--pool-tokens, which wins).

The runs are the H200 tune sitting's (vLLM 0.21.0; docs/results/gpu-h200/tune-capacity), whose
results files kept the engine's cache config as 0.21 says it. The run serving them is a fake
run (tests/support/fake_run.py: tiny-cpu's plan, the H200's own boot log, a stand-in process),
found by its id and by its URL's port."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from support import free_port
from support.fake_run import H200_LOG, fake_run

from sm121.bench.gauges import EngineGauges
from sm121.bench.scenarios.agents.capacity import run_pool, run_verdict
from sm121.bench.scenarios.agents.models import AgentsSummary, read_run
from sm121.bench.scenarios.agents.run import AgentsRunArgs, _knobs, _pool
from sm121.bench.scenarios.agents.workload import fit_to_server, load_workload
from sm121.memory.capacity_types import Knobs, Pool
from sm121.serving.endpoint_run import endpoint_run, run_at

ROOT = Path(__file__).resolve().parents[3]
H200 = ROOT / "docs" / "results" / "gpu-h200" / "tune-capacity" / "tune-results.tar.gz"


def _h200(name: str) -> dict[str, Any]:
    with tarfile.open(H200) as tar:
        member = tar.extractfile(f"tune/capacity/{name}.json")
        assert member is not None
        data: dict[str, Any] = json.load(io.TextIOWrapper(member))
    return data


def _verdict(data: dict[str, Any], pool: Pool | None, knobs: Knobs | None = None,
             gauges: EngineGauges | None = None):
    params = data["params"]
    workload = fit_to_server(load_workload(params["workload"]), data["server"]["max_model_len"],
                             params["turns"])
    samples = [*data["samples"], *([gauges.model_dump(mode="json")] if gauges else [])]
    return run_verdict(read_run(samples), AgentsSummary.model_validate(data["summary"]),
                       workload, params["turns"], params["slo"], pool, knobs=knobs)


def test_vllm_021_says_no_pool_in_its_metrics() -> None:
    cache = _h200("chunk-4096-agents-40")["server"]["cache_config"]
    assert "num_gpu_blocks" not in cache and cache["block_size"] == "16"
    assert run_pool(cache) is None  # not from /metrics: the verdict has no KV prediction


def test_the_pool_comes_from_the_boot_log_of_the_run_serving_the_url(sm121_home: Path) -> None:
    data = _h200("chunk-4096-agents-40")
    cache = data["server"]["cache_config"]
    url = f"http://127.0.0.1:{free_port()}"
    with fake_run("h200-chunk-4096", url, H200_LOG, ("max-num-seqs", 41)) as run:
        by_id = endpoint_run("http://elsewhere:1", run.run_id)
        by_port = endpoint_run(url.replace("127.0.0.1", "localhost") + "/v1")
        assert by_id is not None and by_port is not None and by_port.run_id == run.run_id
        assert by_id.pool_tokens == 782_032  # "GPU KV cache size: 782,032 tokens"
        pool = _pool(cache, AgentsRunArgs(), by_port)
        assert pool == Pool(782_032, 16, "the boot log of run h200-chunk-4096")
        verdict = _verdict(data, pool, _knobs(by_port))
    assert verdict is not None
    # the H200 run's own first prompts counted: 38 (docs/capacity.md; nominal, 43)
    assert (verdict.predicted, verdict.binding) == (38, "KV")
    assert (verdict.pool_tokens, verdict.pool_source) == (782_032, pool.source)
    assert verdict.resource == "KV" and "predicted at most 38 (KV binds)" in verdict.line
    assert verdict.max_num_seqs == 41  # from the run's plan (--set max-num-seqs=41)
    assert run_at(url) is None  # the run is gone with its process


def test_a_given_pool_wins(sm121_home: Path) -> None:
    data = _h200("chunk-4096-agents-40")
    url = f"http://127.0.0.1:{free_port()}"
    with fake_run("h200-given", url, H200_LOG) as run:
        served = endpoint_run(url, run.run_id)
        pool = _pool(data["server"]["cache_config"], AgentsRunArgs(pool_tokens=392_032), served)
    assert pool == Pool(392_032, 16, "given (--pool-tokens)")
    verdict = _verdict(data, pool)
    assert verdict is not None and verdict.predicted == 19  # the H100's pool: 19 agents


def test_a_url_no_run_serves_has_no_run_and_an_unknown_id_is_an_error(sm121_home: Path) -> None:
    from sm121.errors import Sm121Error

    assert endpoint_run(f"http://127.0.0.1:{free_port()}") is None
    with pytest.raises(Sm121Error):
        endpoint_run("http://127.0.0.1:1", "no-such-run")


def test_requests_waiting_at_max_num_seqs_read_as_sequences() -> None:
    """agent-admission at 28 agents read "step budget" from its counters alone; with gauges
    that show requests waiting while max-num-seqs ran (made up here: the sitting sampled no
    gauges), the verdict names sequences, and without the profile's max-num-seqs it says
    that sequences is not ruled out."""
    data = _h200("agent-admission-agents-28")
    assert _verdict(data, None).resource == "step budget"
    gauges = EngineGauges(interval_s=0.5, scrapes=90, kv_usage_peak=0.71, waiting_peak=6,
                          running_peak=22)
    bound = _verdict(data, None, Knobs(22, None, None), gauges)
    assert bound is not None and bound.resource == "sequences"
    assert bound.line.startswith("missed: sequences (6 waiting while max-num-seqs 22 ran)")
    assert (bound.kv_usage_peak, bound.waiting_peak, bound.running_peak) == (0.71, 6, 22)
    unknown = _verdict(data, None, None, gauges)
    assert unknown is not None and unknown.resource == "step budget"
    assert "max-num-seqs not known: sequences not ruled out" in unknown.line
    unmeasured = EngineGauges(interval_s=0.5, note="the endpoint serves no /metrics")
    assert _verdict(data, None, Knobs(22, None, None), unmeasured).resource == "step budget"


def test_bench_sweep_takes_the_run_and_the_pool_as_bench_agents_does() -> None:
    """`bench sweep` runs the agents scenario at each N: its --run and --pool-tokens are bench
    agents' own (the same flags and help), and reach every run's params, checked alike."""
    import typer
    from support import invoke_cli

    from sm121.cli.bench_agents import register
    from sm121.cli.bench_scenarios import scenario_command

    app = typer.Typer()
    register(app)
    sweep = {p.name: p for p in typer.main.get_command(app).params}
    agents = {p.name: p for p in scenario_command("agents").params}
    for name in ("run", "pool_tokens"):
        assert (sweep[name].opts, sweep[name].help) == (agents[name].opts, agents[name].help)
        assert sweep[name].help
    refused = invoke_cli("bench", "sweep", "--url", f"http://127.0.0.1:{free_port()}",
                         "--pool-tokens", "0", check=False)
    assert refused.returncode == 2 and "--pool-tokens must be at least 1" in refused.stderr + \
        refused.stdout
