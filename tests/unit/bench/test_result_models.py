"""Every results file bench writes has a model, and the committed results under docs/results
(.json and .json.gz, measured by earlier sm121 versions) still load into theirs, with the same
keys when written back."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from sm121.bench.result_models import AbSummary, ScenarioResults
from sm121.bench.results import ResultsFile, load_results
from sm121.bench.scenarios import load_typed, parse_results
from sm121.bench.scenarios.agent_check.report_file import AgentCheckReport
from sm121.bench.scenarios.overlap.models import OverlapSample
from sm121.bench.scenarios.soak.records import SoakLine, SoakSummary
from sm121.errors import Sm121Error

RESULTS = Path(__file__).resolve().parents[3] / "docs" / "results"
# Committed JSON that `sm121 bench` did not write, and what did: not bench results.
NOT_BENCH = {
    "gpu-h200/gateway": "benchmarks/gateway_overhead.py",
    "cpu-testbed/relay": "benchmarks/ (relay overhead and head ejection)",
    "cpu-testbed/routing": "benchmarks/routing_chat.py",
    "cpu-testbed/sessions/gateway": "the gateway's /sm121/sessions around each run "
                                    "(benchmarks/sessions_ab.sh)",
    "cpu-testbed/sessions/stagger/gateway": "the same, for the staggered starts",
    "gpu-h200/calibration": "`sm121 memory calibrate --json`, with its command line",
    "gpu-h200/ab-reps/calibration-ab.json": "`sm121 memory calibrate --json`, with its "
                                            "command line",
    "cpu-testbed/soak/run.json": "the run's state (`sm121 status RUN --json`)",
    "cpu-testbed/soak/startup.json": "`sm121 startup --json`",
    "cpu-testbed/stage": "benchmarks/stage_weights.py; cache-demo.sh (`sm121 startup --json`, "
                         "a node's sm121-cache.json)",
    "cpu-testbed/tune/tune.json": "`sm121 tune`'s state file (sm121/bench/tune/state.py)",
    "gpu-h200/tune/tune.json": "`sm121 tune`'s state file (sm121/bench/tune/state.py)",
    "gpu-h200/tune-capacity/tune.json": "`sm121 tune`'s state file (sm121/bench/tune/state.py)",
    "cpu-testbed/tune-fp8/tune.json": "`sm121 tune`'s state file (sm121/bench/tune/state.py)",
    "cpu-testbed/capacity/blocks-724/capacity.json": "benchmarks/capacity_cliff.py's summary",
    "cpu-testbed/capacity/blocks-760/capacity.json": "benchmarks/capacity_cliff.py's summary",
    "cpu-testbed/capacity/blocks-724-quieter/capacity.json": "benchmarks/capacity_cliff.py's "
                                                             "summary",
    "gpu-h100/capacity/capacity-tuned/capacity.json": "benchmarks/capacity_cliff.py's summary "
                                                      "(the sitting's last call)",
    "gpu-h100/capacity/coding-capacity.json": "benchmarks/capacity_cliff.py's summary",
    "gpu-h100/capacity/long-session-capacity.json": "benchmarks/capacity_cliff.py's summary",
    "gpu-h100/capacity/baseline-coding-capacity.json": "benchmarks/capacity_cliff.py's summaries "
                                                       "of two calls, joined (its README)",
    "gpu-h100/capacity/baseline-long-session-capacity.json": "benchmarks/capacity_cliff.py's "
                                                             "summary",
    "cpu-testbed/capacity/gauges/sampler-cost.json": "each run's headline figures, gathered "
                                                     "for its README (its command there)",
}


def _committed() -> list[Path]:
    return sorted(p for p in RESULTS.rglob("*") if p.name.endswith((".json", ".json.gz")))


def _read(path: Path) -> Any:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return json.loads(raw)


def _not_bench(path: Path) -> bool:
    name = path.relative_to(RESULTS).as_posix()
    return any(name == k or name.startswith(k + "/") for k in NOT_BENCH)


def _dump(model: Any) -> Any:
    return model.to_json()


def _bench_files() -> list[Path]:
    return [p for p in _committed() if not _not_bench(p)]


@pytest.mark.parametrize("path", _bench_files(),
                         ids=lambda p: p.relative_to(RESULTS).as_posix())
def test_a_committed_results_file_loads_into_its_model_with_the_same_keys(path):
    data = _read(path)
    if isinstance(data, dict) and data.get("schema") == "sm121.bench.results":
        model: Any = load_typed(path)
    elif data.get("kind") == "agent-check":  # bench agent-check --out
        model = AgentCheckReport.model_validate(data)
    elif path.name == "soak-summary.json":  # bench soak --json
        model = SoakSummary.model_validate(data)
    elif set(data) >= {"baseline", "metrics"}:  # bench ab --json: the comparison
        model = AbSummary.model_validate(data)
    else:
        pytest.fail(f"{path}: no model reads this file; add one (or list it in NOT_BENCH "
                    "with what wrote it)")
    assert _dump(model) == data


def test_the_committed_files_cover_every_kind():
    kinds = {(d["kind"], d["scenario"]) for d in map(_read, _bench_files())
             if isinstance(d, dict) and d.get("schema") == "sm121.bench.results"}
    assert {("ab", "overlap"), ("ab", "agents"), ("scenario", "agents"),
            ("scenario", "replay"), ("scenario", "overlap"), ("scenario", "decode-scaling"),
            ("scenario", "prefill-scaling")} <= kinds


def test_samples_are_typed_by_the_scenario():
    results = load_typed(RESULTS / "gpu-h200" / "ab-overlap" / "agent-rep1.json.gz")
    assert isinstance(results, ScenarioResults)
    assert all(isinstance(s, OverlapSample) for s in results.samples)
    assert results.samples[0].long.prompt_tokens == results.params.to_json()["prefill_tokens"]
    assert results.probe is not None and results.probe.safe


def test_every_soak_line_has_a_model():
    lines = (RESULTS / "cpu-testbed" / "soak" / "soak.jsonl").read_text().splitlines()
    adapter = TypeAdapter(SoakLine)
    kinds = {adapter.validate_json(line).kind for line in lines if line.strip()}
    assert kinds == {"soak-start", "soak", "event", "soak-end"}


def test_a_file_bench_writes_parses_and_round_trips(tmp_path):
    results = ResultsFile(tmp_path / "o.json", "scenario", "overlap", {"reps": 1})
    results.add_sample({"rep": 0, "metrics": {"valid": False}})
    results.finish("complete")
    data = load_results(tmp_path / "o.json")
    assert parse_results(data).to_json() == data


def test_a_broken_file_names_the_field(tmp_path):
    path = tmp_path / "bad.json"
    results = ResultsFile(path, "scenario", "overlap", {})
    results.finish("complete")
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "status": "half-done"}))
    with pytest.raises(Sm121Error, match="'status'"):
        load_results(path)
