"""The capacity model's inputs, gathered for `sm121 plan --agents --workload` and `sm121 memory
plan --solve agents=N,workload=W`: the workload preset's numbers (bench's presets; memory/ may
not import bench/, so they are read here and passed down as plain numbers), the profile's
scheduler knobs (the rendered plan's engine args), and the pool: given, from a boot log, from a
running engine's /metrics, or from the planner."""

from __future__ import annotations

from pathlib import Path

import typer

from sm121.cli.output import console
from sm121.errors import Sm121Error
from sm121.memory.capacity import Capacity
from sm121.memory.capacity_types import Knobs, Pool, SessionShape, Throughput
from sm121.memory.cold_start import FreshRate
from sm121.memory.long_job_window import JobRate

TURNS_HELP = "Turns per session the workload runs (its last turn sets the working set)."
POOL_TOKENS = typer.Option(None, "--pool-tokens", min=1, help="The KV pool in tokens, as the engine "
                           "logged it (`KV cache size: N tokens`): predicts for a device "
                           "without booting.")
BOOT_LOG = typer.Option(None, "--boot-log", help="An engine log to read the KV pool from.")
ENGINE_URL = typer.Option(None, "--engine-url", help="A running engine: its KV pool from "
                          "/metrics (blocks x block size), and the workload's first prompt as "
                          "its /tokenize renders it (else the longest session).")
PREFILL_TOK_S = typer.Option(None, "--prefill-tok-s", min=1.0, help="Prefill throughput at this step "
                             "budget measured at the workload's depth (a calibration figure).")
MAX_INFLIGHT = typer.Option(None, "--max-inflight", min=1, help="The gateway's in-flight "
                            "cap in front of the engine (sm121 gateway --max-inflight): it "
                            "bounds the sequences as max-num-seqs does.")
JOB_PREFILL_TOK_S = typer.Option(None, "--job-prefill-tok-s", min=1.0, help="The workload's "
                                 "long job's prefill rate at its own depth under the profile's "
                                 "long-prefill threshold (a calibration figure): what its "
                                 "window costs the SLO (docs/capacity.md).")
COLD_PREFILL_TOK_S = typer.Option(
    None, "--cold-prefill-tok-s", min=1.0, help="The engine's prefill rate for fresh prompts "
    "of about the workload's first prompt's length at the profile's step budget (a "
    "calibration figure: `sm121 bench knee` on the same stack, its rate at the step nearest "
    "that length): what the cold start, every session's first prompt sent at once, costs "
    "the second turns (docs/capacity.md). Needs the first prompt counted (--engine-url).")
DECODE_TOK_S = typer.Option(None, "--decode-tok-s", min=0.1, help="One stream's decode rate under load "
                            "(with --prefill-tok-s: the step budget's allowance).")


def session_shape(workload_name: str, turns: int, max_model_len: int,
                  engine_url: str | None = None) -> SessionShape:
    """The preset (or YAML file) fitted to the server as a run of `turns` turns sends it, as
    the capacity model's plain numbers (bench reads its own presets). With `engine_url`, its
    first prompt as that engine renders it; else (or where it cannot) the longest session,
    which the prediction says."""
    from sm121.bench.scenarios.agents.capacity import NOMINAL_PREFIX, load_shape
    from sm121.bench.scenarios.agents.first_prompt import rendered_or_why

    if engine_url is None:
        return load_shape(workload_name, turns, max_model_len)
    found = rendered_or_why(engine_url, workload_name, turns, max_model_len)
    if isinstance(found, str):
        return load_shape(workload_name, turns, max_model_len, None,
                          f"{NOMINAL_PREFIX} ({engine_url} did not render it: {found})")
    return load_shape(workload_name, turns, max_model_len, found.first_prompt_tokens,
                      found.source(f"{engine_url}/tokenize"), found.turn_template_tokens)


def knobs_of(engine_args: dict[str, object]) -> Knobs:
    from sm121.bench.scenarios.agents.capacity import knobs_from_args
    from sm121.engines.registry import adapter_of

    engine = adapter_of()
    return knobs_from_args(engine_args, engine.scheduler, engine.memory.kv_cache_dtype)


def given_pool(pool_tokens: int | None, boot_log: Path | None, engine_url: str | None,
               block_size: int) -> Pool | None:
    """The pool from the first source given; None when none was. `block_size`: the profile's
    (a running engine says its own)."""
    if pool_tokens is not None:
        return Pool(pool_tokens, block_size, "given (--pool-tokens)")
    if boot_log is not None:
        from sm121.engines.registry import adapter_of

        if not boot_log.is_file():
            raise Sm121Error(f"no boot log at {boot_log}", "give the engine's log file")
        tokens = adapter_of().parse_boot_log_file(boot_log).kv_pool_tokens
        if tokens is None:
            raise Sm121Error(f"{boot_log} holds no KV pool line", "give the log of a boot that "
                             "came up (vLLM logs `KV cache size: N tokens`)")
        return Pool(tokens, block_size, f"the boot log {boot_log.name}")
    if engine_url is not None:
        from sm121.engines.client import kv_pool
        from sm121.engines.client_sync import SyncEngineClient

        found = kv_pool(SyncEngineClient(engine_url, timeout_s=10).metrics_text())
        if found is None:
            raise Sm121Error(f"{engine_url}/metrics does not say its KV pool",
                             "give --pool-tokens or --boot-log")
        blocks, size = found
        return Pool(blocks * size, size, f"{engine_url}/metrics")
    return None


def throughput(prefill_tok_s: float | None, decode_tok_s: float | None) -> Throughput | None:
    if prefill_tok_s is None or decode_tok_s is None:
        return None
    return Throughput(prefill_tok_s, decode_tok_s, "given (--prefill-tok-s, --decode-tok-s)")


def job_rate(tok_s: float | None) -> JobRate | None:
    return None if tok_s is None else JobRate(tok_s, "given (--job-prefill-tok-s)")


def fresh_rate(tok_s: float | None) -> FreshRate | None:
    return None if tok_s is None else FreshRate(tok_s, "given (--cold-prefill-tok-s)")


def slo_ttft(slo: str | None) -> float | None:
    """The TTFT threshold of an SLO such as ttft_p95=2s (None: no TTFT term)."""
    from sm121.bench.scenarios.agents.capacity import slo_ttft as threshold

    return threshold(slo)


def print_capacity(capacity: Capacity) -> None:
    """The prediction's lines; a workload file's name and a pool's source are the user's
    strings, so every line goes through the one display function."""
    from sm121.display import plain

    console.print(plain(f"capacity: {capacity.headline()}"))
    for line in capacity.lines()[1:]:
        console.print(plain(f"  {line}"))


def capacity_json(c: Capacity) -> dict[str, object]:
    return {"workload": c.workload, "agents": c.agents, "predicted": c.predicted,
            "binding": None if c.binding is None else c.binding.value, "margin": c.margin,
            "pool": None if c.pool is None else {
                "tokens": c.pool.tokens, "block_size": c.pool.block_size,
                "source": c.pool.source},
            "working_set_tokens": c.working_set_tokens,
            "working_set_blocks": c.working_set_blocks,
            "allowances": [{"resource": a.resource.value, "agents": a.agents, "how": a.how}
                           for a in c.allowances],
            "unknown": [r.value for r in c.unknown], "transient_from": c.transient_from,
            "window": None if c.window is None else {
                "agents": c.window.agents, "deficit_tokens": round(c.window.deficit_tokens),
                "misses": round(c.window.misses, 1), "judged": c.window.judged,
                "met": c.window.met},
            "cold_start": None if c.cold_start is None else {
                "agents": c.cold_start.agents, "duration_s": round(c.cold_start.duration_s, 2),
                "release_s": round(c.cold_start.release_s, 2),
                "misses": round(c.cold_start.misses, 1), "judged": c.cold_start.judged,
                "met": c.cold_start.met},
            "headline": c.headline()}


def capacity_of(engine_args: dict[str, object], planned_pool: int | None, block_size: int,
                max_model_len: int, *, workload: str, turns: int, agents: int | None,
                pool: Pool | None, slo: str | None, rate: Throughput | None,
                max_inflight: int | None = None, engine_url: str | None = None,
                job_rate: JobRate | None = None,
                fresh_rate: FreshRate | None = None) -> Capacity:
    """The prediction for a rendered profile: `pool` when one was given, else the planner's;
    `max_inflight`: the gateway's in-flight cap in front of the engine, if any; `engine_url`:
    a running engine that renders the workload's first prompt (else the longest session);
    `job_rate`: the long job's prefill rate at its depth (what its window costs the SLO);
    `fresh_rate`: the prefill rate of fresh first prompts (what the cold start costs)."""
    from dataclasses import replace

    from sm121.memory.capacity import predict

    if pool is None and planned_pool is not None:
        pool = Pool(planned_pool, block_size, "the memory planner")
    shape = session_shape(workload, turns, max_model_len, engine_url)
    knobs = replace(knobs_of(engine_args), inflight_cap=max_inflight)
    return predict(pool, shape, knobs, rate, slo_ttft(slo), agents, job_rate, fresh_rate)


def parse_capacity_load(text: str) -> tuple[int, str, int | None]:
    """`agents=24,workload=coding-agent-with-batch[,turns=5]` -> (agents, workload, turns)."""
    values = dict(part.partition("=")[::2] for part in text.split(","))
    values = {k.strip(): v.strip() for k, v in values.items()}
    if not set(values) <= {"agents", "workload", "turns"} or "workload" not in values \
            or not values.get("agents", "").isdigit() \
            or not values.get("turns", "0").isdigit():
        raise Sm121Error(f"--solve {text!r} is not agents=N,workload=W[,turns=T]",
                         "example: --solve agents=24,workload=coding-agent-with-batch")
    turns = values.get("turns")
    return int(values["agents"]), values["workload"], int(turns) if turns else None
