"""The scenario registry: one entry per scenario, carrying how it runs, its CLI parameters,
what an A/B compares, its report section and its plots (see `scenario_spec`). `sm121 bench
NAME`, `bench ab --scenario NAME` and `bench report` are built from these entries, so a new
scenario is its module plus one `register(ScenarioSpec(...))` here (or from a plug-in).

This module imports no scenario code: entries name it by reference, loaded when used."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sm121.bench.scenario_spec import Param, ScenarioSpec
from sm121.errors import Sm121Error

SCENARIOS: dict[str, ScenarioSpec] = {}


def register(spec: ScenarioSpec) -> ScenarioSpec:
    """Add a scenario (a plug-in or a test may too); its name is its command's name."""
    SCENARIOS[spec.name] = spec
    return spec


def get(name: str) -> ScenarioSpec:
    if name not in SCENARIOS:
        raise Sm121Error(f"unknown scenario {name!r}", f"one of: {', '.join(SCENARIOS)}")
    return SCENARIOS[name]


_SECTIONS = "sm121.bench.report_sections"
_MODELS = "sm121.bench.sample_models"
_AGENTS_REPORT = "sm121.bench.agents.report"
_N = Param("n", "--n", str, "1,2,4,6", "Concurrency levels.", parse="ints")
SLO_HELP = ("SLO terms METRIC_pQ=VALUE, comma-separated; metrics ttft, e2e, itl (s or ms) "
            "and decode (tok/s). Goodput = share of turns meeting every term.")
_SLO = Param("slo", "--slo", str, "ttft_p95=2s", SLO_HELP)
WORKLOAD_HELP = ("A preset (coding-agent, coding-agent-with-batch, timestamp-first) or a YAML "
                 "file: system_prompt_tokens, task_tokens, tools {count, tokens_each, "
                 "placement}, append_tokens, output_tokens, think_time_s (a number or [min, "
                 "max]), paste {share, tokens}, timestamp_first, background {prompt_tokens, "
                 "context_share, output_tokens, delay_s}, context_share, seed; `preset: NAME` "
                 "starts from a preset. Token sizes shrink to fit the server's max-model-len.")

register(ScenarioSpec(
    "overlap", "sm121.bench.overlap:overlap",
    "Interference and admission: one ongoing stream (its own baseline), a long prefill of "
    "exactly L tokens, short requests during it.",
    params=(Param("prefill_tokens", "--prefill-tokens", int, 32768,
                  "Long prompt length, exact to the token.", short="-L"),
            Param("short_at", "--short-at", str, "0.25,0.5", "Short requests at these "
                  "fractions of the predicted prefill.", parse="floats"),
            Param("before_s", "--before", float, 5.0, "Seconds of undisturbed baseline."),
            Param("reps", "--reps", int, 1, "Repetitions (median and spread).")),
    headline="sm121.bench.overlap_metrics:HEADLINE",
    flatten="sm121.bench.overlap_metrics:flatten_last_valid", rep_stats=True,
    recompute=f"{_SECTIONS}:recompute_overlap", plots=f"{_SECTIONS}:overlap_plots",
    section=f"{_SECTIONS}:overlap_section", sample=f"{_MODELS}:OverlapSample",
    summary=f"{_MODELS}:OverlapSummary"))


def _scaling(kind: str, help: str, size: Param) -> ScenarioSpec:
    """N concurrent requests for each N: decode or prefill (`scaling`)."""
    return ScenarioSpec(
        f"{kind}-scaling", f"sm121.bench.scaling:{kind}_scaling", help, needs_stream=False,
        stream_option=True, params=(_N, size),
        headline=f"sm121.bench.scaling:{kind.upper()}_HEADLINE",
        flatten="sm121.bench.scaling:flatten", plots=f"{_SECTIONS}:scaling_plots",
        section=f"{_SECTIONS}:scaling_section", sample=f"{_MODELS}:ScalingSample",
        summary=f"{_MODELS}:ScalingSummary")


register(_scaling("decode", "Aggregate and per-stream decode rates, TTFT, p50/p95 intervals "
                  "over N streams.", Param("max_tokens", "--max-tokens", int, 256)))
register(_scaling("prefill", "Prompt tokens per second with N concurrent prefills.",
                  Param("prompt_tokens", "--prompt-tokens", int, 4096)))

register(ScenarioSpec(
    "locality", "sm121.bench.locality:locality",
    "Cost of a mutating field at clean/bottom/middle/top over several turns.",
    params=(Param("turns", "--turns", int, 4),
            Param("base_words", "--base-words", int, 1200, "Size of the first prompt.")),
    section=f"{_SECTIONS}:locality_section", sample=f"{_MODELS}:LocalitySample"))

register(ScenarioSpec(
    "retrieval", "sm121.bench.retrieval:retrieval",
    "Needles at depths with distractor codes: found and distractors returned.",
    needs_stream=False, stream_option=True,
    params=(Param("lengths", "--lengths", str, "4096,16384", "Context lengths (tokens).",
                  parse="ints", nonempty="4096,16384"),
            Param("depths", "--depths", str, "0.08,0.5,0.92", parse="floats")),
    section=f"{_SECTIONS}:retrieval_section", sample=f"{_MODELS}:RetrievalSample"))



register(ScenarioSpec(
    "knee", "sm121.bench.knee:knee",
    "The prefill knee and decode saturation on one engine: one exact prompt of N tokens per "
    "step size (alone, max_tokens 1: one step of N tokens), rate in the engine's window (its "
    "prefill-time histogram) and the client's (TTFT); decode tok/s by batch; repetitions "
    "with spread. The engine's max-num-batched-tokens must hold the largest step (--chunk "
    "drops larger ones); `sm121 tune` boots one that does.",
    api_option=False,  # its prompts are token ids: completions only
    params=(Param("steps", "--steps", str, "128,256,512,1024,2048,4096,8192,16384",
                  "Tokens per step.", parse="ints", nonempty="128,2048"),
            Param("batches", "--batches", str, "1,2,4,8,16,32", "Decode batch sizes.",
                  parse="ints", nonempty="1,8"),
            Param("reps", "--reps", int, 3, "Measured repetitions per size."),
            Param("decode_tokens", "--decode-tokens", int, 128, "Tokens per decode stream."),
            Param("chunk", "--chunk", int | None, None, "The engine's max-num-batched-tokens "
                  "(larger steps are dropped).")),
    headline="sm121.bench.knee:HEADLINE", flatten="sm121.bench.knee:flatten",
    console="sm121.bench.knee_text:console"))


def _agent_scenario(name: str, run: str, help: str, **fields: Any) -> ScenarioSpec:
    """An agent workload scenario: chat by default, judged and reported from its turns."""
    return ScenarioSpec(
        name, run, help, api="chat", headline="sm121.bench.agents.summary:HEADLINE",
        flatten="sm121.bench.agents.summary:flatten", recompute=f"{_AGENTS_REPORT}:recompute",
        rejudge=f"{_AGENTS_REPORT}:rejudge", plots=f"{_AGENTS_REPORT}:plots_of",
        section=f"{_AGENTS_REPORT}:section", console=f"{_AGENTS_REPORT}:console",
        sample=f"{_MODELS}:AgentsSample", summary=f"{_MODELS}:AgentsSummary", **fields)


register(_agent_scenario(
    "agents", "sm121.bench.agents.scenario:agents",
    "N concurrent coding-agent sessions, each on its own clock: append-only multi-turn chat "
    "with tools, exact token sizes, per-turn TTFT, decode, prefix reuse and goodput against "
    "the SLO. Results are written as turns end (Ctrl-C keeps them).",
    params=(Param("agents", "--agents", int, 4, "Concurrent agent sessions.", short="-n"),
            Param("turns", "--turns", int | None, None, "Turns per session (default 6).",
                  short="-t"),
            Param("duration", "--duration", float | None, None, "Seconds instead of "
                  "--turns: sessions keep taking turns until then."),
            Param("workload", "--workload", str, "coding-agent", WORKLOAD_HELP, short="-w"),
            _SLO),
    prepare="sm121.bench.agents.params:agents_params",
    verdict="sm121.bench.agents.choose:verdict"))

register(_agent_scenario(
    "replay", "sm121.bench.agents.replay:replay",
    "Replay a gateway capture: sessions keyed by the gateway's session id, each in its "
    "original order with the original inter-arrival gaps (over --speed). A redacted capture "
    "replays with text regenerated to the captured token lengths.",
    api_option=False,
    params=(Param("capture_dir", "capture_dir", Path, ...,
                  "The folder of `sm121 gateway --capture`.", argument=True),
            Param("speed", "--speed", float, 1.0, "Replay faster (2 = half the gaps) or "
                  "slower (0.5)."),
            _SLO),
    prepare="sm121.bench.agents.params:replay_params"))
