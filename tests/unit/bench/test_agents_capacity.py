"""An agents run's capacity verdict from its own results file: the committed CPU cliff runs
(docs/results/cpu-testbed/capacity/blocks-724) and the H200 tune's (tune-results.tar.gz)."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from dataclasses import replace
from pathlib import Path

from sm121.bench.scenarios.agents.capacity import (
    NOMINAL_PREFIX,
    load_shape,
    pool_of,
    run_pool,
    run_verdict,
    shape_reuse,
)
from sm121.bench.scenarios.agents.models import AgentsSummary, read_run
from sm121.bench.scenarios.agents.workload import fit_to_server, load_workload
from sm121.engines.client import block_size_of
from sm121.memory.capacity_types import Knobs

ROOT = Path(__file__).resolve().parents[3]
CPU = ROOT / "docs" / "results" / "cpu-testbed" / "capacity" / "blocks-724"
H200 = ROOT / "docs" / "results" / "gpu-h200" / "tune-capacity" / "tune-results.tar.gz"
POOL = {"num_gpu_blocks": "724", "block_size": "128"}  # what the engine's /metrics said


def _read(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


def _verdict(data: dict, cache_config: dict, knobs: Knobs | None = None):
    params = data["params"]
    workload = fit_to_server(load_workload(str(ROOT / "benchmarks" / "capacity" /
                                               Path(params["workload"]).name)),
                             data["server"]["max_model_len"], params["turns"])
    return run_verdict(read_run(data["samples"]), AgentsSummary.model_validate(data["summary"]),
                       workload, params["turns"], params["slo"], run_pool(cache_config),
                       knobs=knobs)


def test_the_cpu_cliff_runs_name_kv_past_the_pool_and_nothing_before_it():
    found = {f.name.removesuffix(".json.gz"): _verdict(_read(f), POOL)
             for f in sorted(CPU.glob("sessions-*-agents-*.json.gz"))}
    assert found["sessions-15k-agents-6"].met and found["sessions-15k-agents-6"].resource is None
    past = found["sessions-15k-agents-7"]
    assert past.met is False and past.resource == "KV"
    assert past.line.startswith("missed: KV (evictions: reuse fell to 2")
    assert (past.predicted, past.binding, past.pool_tokens) == (6, "KV", 92_672)
    assert found["sessions-9k-agents-12"].resource == "KV"
    # counted from the run's first prompts (8,600: the tiny template renders the tools and
    # roles in 386 tokens more than the nominal 8,214), and a template margin of 64 a turn
    # where this template adds 24: 9,336 against the sessions' real 9,176, one agent short
    assert found["sessions-9k-agents-10"].met and found["sessions-9k-agents-10"].predicted == 9


def test_the_h200_misses_name_admission_kv_and_the_step_budget():
    with tarfile.open(H200) as tar:
        def load(name: str) -> dict:
            member = tar.extractfile(f"tune/capacity/{name}.json")
            assert member is not None
            return json.load(io.TextIOWrapper(member))

        pool = {"block_size": "16"}  # vLLM 0.21's cache_config_info has no block count
        admission = _verdict_h200(load("reference-agents-4"), pool)
        kv = _verdict_h200(load("chunk-4096-agents-40"), pool)
        step = _verdict_h200(load("agent-admission-agents-28"), pool)
    assert admission.resource == "admission during the long prefill"
    # 20 of its 36 misses re-prefilled their whole context: vLLM reported no cached count
    # for them (it leaves the detail out where nothing was cached), read as 0 (turn_cached)
    assert kv.resource == "KV" and "reuse fell to 83% (expected 97%)" in kv.line, kv.line
    assert kv.miss_causes is not None and kv.miss_causes["evicted"] == 20
    assert step.resource == "step budget"
    assert kv.predicted is None  # no pool in the file: the prediction is not known


def _verdict_h200(data: dict, cache_config: dict):
    params = data["params"]
    workload = fit_to_server(load_workload(params["workload"]), data["server"]["max_model_len"],
                             params["turns"])
    return run_verdict(read_run(data["samples"]), AgentsSummary.model_validate(data["summary"]),
                       workload, params["turns"], params["slo"], run_pool(cache_config),
                       block_size_of(cache_config))


def test_the_shape_of_a_preset_and_what_it_reuses():
    shape = load_shape("coding-agent-with-batch", 5, 131072)
    # no engine counted the first prompt: the longest session (the expected one from the
    # nominal sizes, 17,860, would undercount the rendered tools and over-predict)
    assert shape.last_context_tokens == 19_684 and shape.long_job_tokens == 98_224
    assert shape.prefix_source == NOMINAL_PREFIX
    rendered = load_shape("coding-agent-with-batch", 5, 131072, 17_747)  # the H100's Llama
    assert rendered.last_context_tokens == 20_343 and rendered.first_prompt_tokens == 17_747
    reuse = shape_reuse(shape, 16)
    assert reuse is not None and 0.95 < reuse < 0.98
    assert pool_of({"num_gpu_blocks": "160", "block_size": "128"}).tokens == 20_480
    assert pool_of({"block_size": "16"}) is None


def test_the_long_session_preset_binds_on_kv_at_a_few_agents():
    from sm121.memory.capacity import predict
    from sm121.memory.capacity_types import Pool, Resource

    shape = load_shape("long-session", 6, 131072)  # unscaled in a 128K context
    assert shape.last_context_tokens == 59_048  # the longest session: Claude Code sized
    h100 = predict(Pool(392_032, 16, "H100"), shape, Knobs(41, 4096, 1024))
    assert (h100.predicted, h100.binding) == (6, Resource.KV)  # a bound that errs low
    # the H100's Llama renders its first prompt in 25,517 tokens: 49,729, 7 (measured: 8 met)
    rendered = load_shape("long-session", 6, 131072, 25_517)
    assert predict(Pool(392_032, 16, "H100"), rendered, Knobs(41, 4096, 1024)).predicted == 7


def test_a_runs_verdict_travels_with_its_samples_into_its_headline():
    from sm121.bench.scenarios.agents.models import CapacityVerdict
    from sm121.bench.scenarios.agents.summary import headline

    data = _read(CPU / "sessions-15k-agents-7.json.gz")
    verdict = _verdict(data, POOL)
    assert verdict is not None
    samples = [*data["samples"], verdict.model_dump(mode="json")]  # as the run records it
    run = read_run(samples)
    assert isinstance(run.capacity, CapacityVerdict) and run.capacity.resource == "KV"
    metrics = headline(run)
    assert metrics.verdict == verdict.line and metrics.verdict_resource == "KV"
    assert headline(read_run(data["samples"])).verdict is None  # a run from before it


def _with_verdict(data: dict) -> dict:
    """The run's file as `bench agents` writes it now: its verdict as its last sample and in
    its summary (the committed runs predate the record)."""
    verdict = _verdict(data, data["server"]["cache_config"])
    assert verdict is not None
    record = verdict.model_dump(mode="json")
    return {**data, "samples": [*data["samples"], record],
            "summary": {**data["summary"], "capacity": record}}


def _write(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data))
    return path


def test_bench_report_slo_judges_the_verdict_again_under_the_new_slo(tmp_path):
    """`bench report --slo` re-judges goodput; the verdict line follows it: 11 agents of 9K
    sessions met 2 s while the engine evicted (reuse 66%): under 0.3 s they miss, and the
    verdict names KV; the 15K run that missed 2 s meets 1000 s, its evictions noted."""
    from sm121.bench.report.markdown import render_report

    met = _with_verdict(_read(CPU / "sessions-9k-agents-11.json.gz"))
    missed = _with_verdict(_read(CPU / "sessions-15k-agents-7.json.gz"))
    assert met["summary"]["capacity"]["met"] and not missed["summary"]["capacity"]["met"]
    paths = [_write(tmp_path / "met.json", met), _write(tmp_path / "missed.json", missed)]
    as_run = render_report(paths, tmp_path / "as-run", "t", draw=False).read_text()
    assert "**Verdict**: met at 11" in as_run and "**Verdict**: missed: KV" in as_run
    strict = render_report(paths[:1], tmp_path / "strict", "t", slo="ttft_p95=0.3s",
                           draw=False).read_text()
    assert "**Verdict**: missed: KV (evictions: reuse fell to 66%" in strict
    assert "**Verdict**: met" not in strict
    lax = render_report(paths[1:], tmp_path / "lax", "t", slo="ttft_p95=1000s",
                        draw=False).read_text()
    assert "**Verdict**: met at 7: goodput 100% (evictions: reuse fell to" in lax


def test_a_sweeps_verdicts_follow_the_new_slo_from_their_own_records(tmp_path):
    """A sweep's entries keep no summary: each verdict record carries the engine counters it
    was judged from, so it judges again on its own."""
    from sm121.bench.report.markdown import render_report
    from sm121.bench.results import ResultsFile

    runs = {n: _with_verdict(_read(CPU / f"sessions-9k-agents-{n}.json.gz")) for n in (10, 12)}
    results = ResultsFile(tmp_path / "sweep.json", "sweep", "agents",
                          {**runs[10]["params"], "agents": [10, 12]})
    results.set(server=runs[10]["server"])
    for n, data in runs.items():
        record = data["samples"][-1]
        assert record["engine_metrics"]["vllm:prompt_tokens_total"] > 0
        results.add_sample({"agents": n, "samples": data["samples"], "metrics": {}})
    results.set(summary={"slo": "ttft_p95=2s", "largest_n": None, "points": []})
    results.finish("complete")
    lax = render_report([results.path], tmp_path / "lax", "t", slo="ttft_p95=1000s",
                        draw=False).read_text()
    rows = [line for line in lax.splitlines() if line.startswith(("| 10 |", "| 12 |"))]
    assert len(rows) == 2 and all("met at" in row for row in rows), rows
    assert "evictions: reuse fell to" in rows[1]  # 12 agents: past the pool, within 1000 s


def test_a_verdict_judged_again_keeps_the_pool_knobs_and_gauges_it_was_judged_with():
    """The record names its pool (here a boot log's, not the /metrics the file's server
    says), the profile's knobs and the gauges' peaks: the same SLO gives the same verdict, a
    looser one flips met and keeps them."""
    from sm121.bench.gauges import EngineGauges
    from sm121.bench.scenarios.agents.capacity import rejudged
    from sm121.memory.capacity_types import Pool

    data = _read(CPU / "sessions-15k-agents-7.json.gz")
    gauges = EngineGauges(interval_s=0.5, scrapes=40, kv_usage_peak=1.0, waiting_peak=0,
                          running_peak=7)
    samples = [*data["samples"], gauges.model_dump(mode="json")]
    params = data["params"]
    workload = fit_to_server(load_workload(str(ROOT / "benchmarks" / "capacity" /
                                               Path(params["workload"]).name)),
                             data["server"]["max_model_len"], params["turns"])
    pool = Pool(92_672, 128, "the boot log of run r")
    knobs = Knobs(8, 512, None)
    first = run_verdict(read_run(samples), AgentsSummary.model_validate(data["summary"]),
                        workload, params["turns"], params["slo"], pool, knobs=knobs)
    assert first is not None and first.resource == "KV"
    run = read_run([*samples, first.model_dump(mode="json")])
    again = rejudged(run, params["slo"], {"block_size": "128"})
    assert again is not None
    assert again.model_dump() == first.model_dump()
    lax = rejudged(run, "ttft_p95=1000s", {"block_size": "128"})
    assert lax is not None and lax.met and lax.slo == "ttft_p95=1000s"
    assert (lax.pool_source, lax.max_num_seqs, lax.step_budget, lax.running_peak) == (
        "the boot log of run r", 8, 512, 7)


def _appending_run(agents: int, evicted: dict[tuple[int, int], int] | None = None):
    """A run whose sessions start short and append large tool results (24K, then 500, then
    20K tokens), every turn reusing its previous prompt's whole blocks (of 16), except the
    (agent, turn) pairs `evicted` names, which reuse only that many tokens."""
    from sm121.bench.scenarios.agents.models import SloJudgement

    samples: list[dict] = [{"kind": "config", "agents": agents, "turns": 4, "slo": "ttft_p95=2s"}]
    for agent in range(agents):
        prompt, previous = 1_000, None
        for turn, append in enumerate((None, 24_000, 500, 20_000)):
            if append is not None:
                previous, prompt = prompt, prompt + 300 + append  # the reply, then the result
            cached = 0 if previous is None else (evicted or {}).get(
                (agent, turn), previous // 16 * 16)
            samples.append({"kind": "turn", "agent": agent, "turn": turn, "ttft_s": 0.5,
                            "submitted": float(turn), "prompt_tokens": prompt,
                            "cached_tokens": cached, "reuse": cached / prompt})
    summary = AgentsSummary(agents=agents, judged_from_turn=1, slo=SloJudgement(
        slo="ttft_p95=2s", goodput=0.9, met=False))
    return read_run(samples), summary


def test_large_appends_without_evictions_are_not_read_as_kv():
    """A turn that appends 24K tokens to a 1.3K context reuses 4%: all it could. Held to the
    workload's one mean (52%, what these sessions reuse on average) it read as an eviction
    (25 points under); held to its own expectation, it is none."""
    from sm121.bench.scenarios.agents.capacity import evidence
    from sm121.memory.verdict import judge

    run, summary = _appending_run(4)
    found = evidence(run, summary, 0.52, 625, 2.0, block_size=16)
    assert found.reuse_min is not None and found.reuse_min < 0.05
    assert found.worst_turn_expected == found.worst_turn_reuse  # no turn fell short
    assert found.expected_reuse is not None and abs(found.expected_reuse - found.reuse_mean) < 1e-9
    # what the turns add when cached: their own numbers (about 15K), not the workload's 625
    assert found.turn_new_tokens is not None and 15_000 < found.turn_new_tokens < 15_300
    missed = judge(found)
    assert missed.resource is not None and missed.resource.value == "step budget", missed.line
    met = judge(replace(found, goodput=1.0))
    assert met.met and met.line == "met at 4: goodput 100%"
    one_mean = judge(replace(found, expected_reuse=0.52, worst_turn_reuse=None,
                             worst_turn_expected=None))
    assert one_mean.line.startswith("missed: KV (evictions: a turn's reuse fell to 4% "
                                    "(expected 52%)")  # the verdict before each turn had its own


def test_an_evicted_prefix_among_large_appends_is_still_kv():
    """Turn 2 of one session adds 800 tokens to a 25.3K context: it should reuse 97%; its
    prefix was evicted (1,024 tokens cached): KV, said with that turn's own expectation."""
    from sm121.bench.scenarios.agents.capacity import evidence
    from sm121.memory.verdict import judge

    run, summary = _appending_run(4, evicted={(1, 2): 1_024})
    v = judge(evidence(run, summary, 0.52, 625, 2.0, block_size=16))
    assert v.resource is not None and v.resource.value == "KV"
    assert "a turn's reuse fell to 4% (expected 97%)" in v.line, v.line


def _cold_run(long_job: tuple[float, float] | None):
    """Four sessions whose first prompts (10,000 tokens) are sent at once at t=0 and run
    until t=5; each second turn adds 300 tokens and reuses its first prompt's whole blocks.
    The turns over the SLO (2 s): agent 0's second turn at t=3 (during the first prompts),
    agent 1's third at t=11 (its prefix evicted: 1,024 tokens cached), agent 2's third at
    t=12 and agent 3's third at t=20. `long_job`: its submission and first token."""
    from sm121.bench.scenarios.agents.models import BackgroundSplit, SloJudgement

    samples: list[dict] = [{"kind": "config", "agents": 4, "turns": 3, "slo": "ttft_p95=2s"}]
    late = {(0, 1): 3.0, (1, 2): 11.0, (2, 2): 12.0, (3, 2): 20.0}
    for agent in range(4):
        samples.append({"kind": "turn", "agent": agent, "turn": 0, "submitted": 0.0,
                        "ttft_s": 4.0, "first_token": 4.0, "finished": 5.0,
                        "prompt_tokens": 10_000, "cached_tokens": 0, "reuse": 0.0})
        for turn in (1, 2):
            prompt = 10_000 + 300 * turn
            cached = 1_024 if (agent, turn) == (1, 2) else (prompt - 300) // 16 * 16
            sent = late.get((agent, turn), 6.0 + 7 * turn)
            samples.append({"kind": "turn", "agent": agent, "turn": turn, "submitted": sent,
                            "ttft_s": 3.0 if (agent, turn) in late else 0.2,
                            "finished": sent + 3.5, "prompt_tokens": prompt,
                            "cached_tokens": cached, "reuse": cached / prompt})
    background = None
    if long_job is not None:
        submitted, first = long_job
        samples.append({"kind": "background", "agent": -1, "submitted": submitted,
                        "first_token": first, "ttft_s": first - submitted})
        background = BackgroundSplit(submitted=submitted, first_token=first)
    summary = AgentsSummary(agents=4, judged_from_turn=1, background=background,
                            slo=SloJudgement(slo="ttft_p95=2s", goodput=0.5, met=False))
    return read_run(samples), summary


def test_each_miss_is_named_by_the_first_cause_it_met():
    """With a long job (sent at t=10, prefilled until t=13): the evicted turn is evicted
    though it waited inside the window, t=12's is the window's, t=3's was sent before the
    long job (the cold start), t=20's queued. The resource named is still KV."""
    from sm121.bench.scenarios.agents.capacity import evidence
    from sm121.memory.verdict import MissCause, judge

    run, summary = _cold_run((10.0, 13.0))
    found = evidence(run, summary, None, 300, 2.0, block_size=16)
    assert found.misses == 4 and found.misses_during_long == 2  # as before: the window's
    assert found.miss_causes == {MissCause.EVICTED: 1, MissCause.LONG_PREFILL: 1,
                                 MissCause.COLD_START: 1, MissCause.QUEUED: 1}
    v = judge(found)
    assert v.resource is not None and v.resource.value == "KV"
    assert ("; misses: 1 of 4 on evicted turns, 1 inside the long prefill's window, 1 in the "
            "cold start (turns queued behind the sessions' first prompts), 1 queued in a full "
            "engine") in v.line, v.line


def test_without_a_long_job_the_cold_start_is_while_a_first_turn_runs():
    """No long job: t=3 is sent while the first prompts run (until t=5), the cold start;
    t=12 and t=20 queued."""
    from sm121.bench.scenarios.agents.capacity import evidence
    from sm121.memory.verdict import MissCause

    run, summary = _cold_run(None)
    found = evidence(run, summary, None, 300, 2.0, block_size=16)
    assert found.miss_causes == {MissCause.EVICTED: 1, MissCause.COLD_START: 1,
                                 MissCause.QUEUED: 2}


def test_a_turn_that_cached_nothing_and_says_no_count_is_an_evicted_one():
    """vLLM leaves usage.prompt_tokens_details out of a reply whose prompt found nothing
    cached: agent 2's third turn (t=12, inside the window) re-prefilled its whole context and
    recorded no count. The run's other turns have counts, so it cached 0: evicted, the first
    cause it met. Where no turn of a run has a count (the engine reports none), not known."""
    from sm121.bench.scenarios.agents.capacity import evidence, turn_reuse
    from sm121.bench.scenarios.agents.reused import turn_cached
    from sm121.memory.verdict import MissCause

    run, summary = _cold_run((10.0, 13.0))
    blank = {"cached_tokens": None, "reuse": None}
    run = run.model_copy(update={"turns": [
        t.model_copy(update=blank) if (t.agent, t.turn) == (2, 2) else t for t in run.turns]})
    found = evidence(run, summary, None, 300, 2.0, block_size=16)
    assert found.miss_causes == {MissCause.EVICTED: 2, MissCause.COLD_START: 1,
                                 MissCause.QUEUED: 1}
    assert found.worst_turn_reuse == 0.0
    silent = run.model_copy(update={"turns": [t.model_copy(update=blank) for t in run.turns]})
    assert turn_cached(silent.turns[-1], reported=False) is None
    assert turn_reuse(silent, silent.turns, 16, 0.9) == []


def test_the_verdict_record_keeps_the_miss_causes_and_an_older_one_loads():
    from sm121.bench.scenarios.agents.models import CapacityVerdict

    kept = _verdict(_read(CPU / "sessions-15k-agents-7.json.gz"), POOL)
    assert kept is not None and kept.resource == "KV"
    assert kept.miss_causes and sum(kept.miss_causes.values()) > 0
    assert set(kept.miss_causes) <= {"evicted", "long prefill", "cold start", "queued"}
    assert "misses: " in kept.line
    older = CapacityVerdict.model_validate({"kind": "capacity", "line": "met at 4"})
    assert older.miss_causes == {}
