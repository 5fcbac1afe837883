"""Every bench scenario, briefly, against the real tiny vLLM engine: the CLI runs, the results
JSON is complete, versioned and holds raw samples, the probe and the server's config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import TinyEngine, invoke_cli, run_cli

from sm121.bench import scenarios
from sm121.bench.report.markdown import render_report
from sm121.bench.result_models import Open
from sm121.bench.scenario import Params, Scenario, option
from sm121.bench.scenarios import parse_results

pytestmark = pytest.mark.integration


def _bench(engine: TinyEngine, tmp_path: Path, scenario: str, *args: str) -> dict:
    out = tmp_path / f"{scenario}.json"
    run_cli("bench", scenario, "--url", engine.base_url, "--out", str(out), *args, timeout=600)
    data = json.loads(out.read_text())
    assert data["schema"] == "sm121.bench.results" and data["schema_version"] == 1
    assert data["status"] == "complete" and data["sm121_version"] and data["created"]
    assert parse_results(data).to_json() == data  # the scenario's models read what it wrote
    return data


def _server_recorded(data: dict) -> None:
    assert data["probe"]["safe"] and data["probe"]["token_ids"]
    assert data["server"]["models"]["data"][0]["id"] == "tiny"
    assert data["server"]["cache_config"]["enable_prefix_caching"] == "True"


def test_probe_reports_token_ids_and_a_chunk_histogram(tiny_engine, tmp_path):
    out = tmp_path / "probe.json"
    result = run_cli("bench", "probe", "--url", tiny_engine.base_url, "--out", str(out),
                     "--json")
    report = json.loads(result.stdout)
    assert report["safe"] and report["token_ids"] and report["usage_matches"]
    assert sum(report["histogram"].values()) > 0 and report["tokens_per_chunk"] >= 1
    assert json.loads(out.read_text())["probe"] == report


def test_probe_exits_1_when_streams_cannot_be_counted(tmp_path):
    result = run_cli("bench", "probe", "--url", "http://127.0.0.1:9", check=False)
    assert result.returncode != 0


def test_overlap_measures_one_repetition(tiny_engine, tmp_path):
    data = _bench(tiny_engine, tmp_path, "overlap", "-L", "8192", "--before", "3",
                  "--short-at", "0.3")
    _server_recorded(data)
    samples = data["samples"]
    # a stream that ended inside the window is kept as invalid and retried once
    assert len(samples) == (1 if samples[0]["metrics"]["outlived"] else 2)
    sample = samples[-1]
    assert sample["long"]["prompt_tokens"] == 8192  # exact to the token
    assert sample["ongoing"]["completion_tokens"] > 0
    metrics = sample["metrics"]
    assert metrics["prompt_tokens_exact"]
    assert set(metrics["windows"]) == {"client", "engine"}
    assert metrics["headline_window"] == "engine"
    assert metrics["idle_ttft_s"] > 0
    # valid means: the stream outlived the window, L was exact, and a baseline existed
    assert metrics["valid"] == (metrics["outlived"] and bool(metrics["before_tok_s"]))
    assert data["summary"]["valid_reps"] == sum(s["metrics"]["valid"] for s in data["samples"])


def test_decode_scaling(tiny_engine, tmp_path):
    data = _bench(tiny_engine, tmp_path, "decode-scaling", "--n", "1,2", "--max-tokens", "32")
    rows = data["summary"]["rows"]
    assert [r["n"] for r in rows] == [1, 2]
    assert rows[1]["tokens"] == 64 and rows[1]["aggregate_tok_s"] > 0
    assert rows[1]["ttft_max_s"] >= rows[1]["ttft_min_s"]


def test_prefill_scaling(tiny_engine, tmp_path):
    data = _bench(tiny_engine, tmp_path, "prefill-scaling", "--n", "1,2",
                  "--prompt-tokens", "1024")
    rows = data["summary"]["rows"]
    assert rows[1]["prompt_tokens"] == 2048 and rows[1]["prefill_tok_s"] > 0


def test_decode_scaling_without_streaming(tiny_engine, tmp_path):
    data = _bench(tiny_engine, tmp_path, "decode-scaling", "--n", "1", "--max-tokens", "16",
                  "--no-stream")
    assert data["summary"]["rows"][0]["tokens"] == 16


def test_locality_reuses_the_prefix_unless_the_field_is_on_top(tiny_engine, tmp_path):
    data = _bench(tiny_engine, tmp_path, "locality", "--turns", "2", "--base-words", "600")
    placements = data["summary"]["placements"]
    assert set(placements) == {"clean", "bottom", "middle", "top"}
    assert placements["clean"][1]["cached_tokens"] > 0
    assert placements["top"][1]["cached_tokens"] == 0  # the first block differs every turn
    assert placements["bottom"][1]["cached_tokens"] > placements["middle"][1]["cached_tokens"]


def test_retrieval_scores_every_case(tiny_engine, tmp_path):
    data = _bench(tiny_engine, tmp_path, "retrieval", "--lengths", "1024")
    assert data["summary"]["cases"] == 3
    assert all("found" in s and s["prompt_tokens"] > 900 for s in data["samples"])


class EchoParams(Params):
    words: str = option("a,b", "--words")
    max_tokens: int = option(4, "--max-tokens")


class EchoSummary(Open):
    requests: int


class Echo(Scenario[Open, EchoSummary]):  # a scenario of this module: one request per word
    name = "echo"
    help = "One request per word."
    params = EchoParams
    summary = EchoSummary
    needs_stream = False

    async def run(self, ctx, params):
        for word in params.words.split(","):
            record = await ctx.client.complete(word, params.max_tokens, f"echo-{word}")
            ctx.add({"word": word, "completion_tokens": record.tokens})
        return EchoSummary(requests=len(params.words.split(",")))

    def section(self, results, files):
        return [f"Echoed {results.summary.requests} words.", ""]


def test_a_scenario_registered_here_runs_through_the_cli_and_reports(tiny_engine, tmp_path):
    """A new scenario is one class plus one table line: nothing else changes."""
    scenarios.register("echo", Echo())
    try:
        out = tmp_path / "echo.json"
        invoke_cli("bench", "echo", "--url", tiny_engine.base_url, "--words", "x,y,z",
                   "--max-tokens", "3", "--out", str(out))
        data = json.loads(out.read_text())
        assert data["scenario"] == "echo" and data["status"] == "complete"
        assert data["params"] == {"words": "x,y,z", "max_tokens": 3}
        assert [s["completion_tokens"] for s in data["samples"]] == [3, 3, 3]
        report = render_report([out], tmp_path / "r", "t").read_text()
        assert "Echoed 3 words." in report
    finally:
        scenarios.unregister("echo")


def test_the_hand_commanded_entries_run_through_run_scenario_too(tiny_engine, tmp_path):
    """probe, agent-check and soak have commands of their own in cli/, and run through the
    one typed call like every other scenario: a complete results file in their models."""
    import asyncio

    from sm121.bench.context import Target
    from sm121.bench.runner import run_scenario

    given = {"probe": {}, "agent-check": {"only": ["api.models"]},
             "soak": {"workload": "chat-loop", "agents": 1, "duration": "6s",
                      "report_every": "3s", "max_tokens": 4}}
    for name, params in given.items():
        scenario = scenarios.get(name)
        out = tmp_path / f"{name}.json"
        target = Target(tiny_engine.base_url, api=scenario.api)
        run = asyncio.run(run_scenario(scenario, target, params, out))
        assert run.status == "complete" and isinstance(run.summary, scenario.summary), name
        assert parse_results(json.loads(out.read_text())).to_json() == run.to_json()
    soak = [json.loads(line) for line in (tmp_path / "soak.jsonl").read_text().splitlines()]
    assert soak[0]["kind"] == "soak-start" and soak[-1]["kind"] == "soak-end"
