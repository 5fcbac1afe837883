"""A new scenario is one module plus one registry entry: a toy scenario registered here (its
code is this module) gets its `sm121 bench toy` command with its own parameters, its report
section and its plot, and no other file changes. The built-in commands come from the same
entries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support import invoke_cli

from sm121.bench import scenarios
from sm121.bench.report_md import render_report
from sm121.bench.results import ResultsFile
from sm121.bench.scenario_spec import Param, ScenarioSpec
from sm121.errors import Sm121Error

SEEN: list[dict[str, Any]] = []


async def toy(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:  # runner.Scenario
    return {"size": params["size"]}


def toy_prepare(values: dict[str, Any]) -> dict[str, Any]:
    SEEN.append(values)
    if values["size"] < 0:
        raise Sm121Error("--size must not be negative", "example: --size 3")
    return values


def toy_plots(data: dict[str, Any], out: Path, stem: str) -> list[Path]:
    path = out / f"{stem}-toy.png"
    path.write_bytes(b"\x89PNG toy")
    return [path]


def toy_section(data: dict[str, Any], files: list[Path]) -> list[str]:
    sizes = ", ".join(str(s["size"]) for s in data["samples"])
    return [f"Toy sizes: {sizes}.", "", *[f"![{f.stem}]({f.name})" for f in files], ""]


TOY = ScenarioSpec(
    "toy", toy, "A toy scenario (registered by a test).",
    params=(Param("size", "--size", int, 1, "How big."),
            Param("levels", "--levels", str, "1,2", "Levels.", parse="ints", nonempty="1,2")),
    prepare=toy_prepare, plots=toy_plots, section=toy_section)


@pytest.fixture
def registered():
    scenarios.register(TOY)
    SEEN.clear()
    yield TOY
    scenarios.SCENARIOS.pop("toy")


def test_a_registered_scenario_gets_its_command_and_parameters(registered):
    assert "toy" in invoke_cli("bench", "--help").stdout
    help_text = invoke_cli("bench", "toy", "--help").stdout
    assert "--size" in help_text and "--levels" in help_text and "--url" in help_text
    result = invoke_cli("bench", "toy", "--url", "http://127.0.0.1:9", "--size", "-1",
                        "--levels", "4,8", check=False)
    assert result.returncode == 2 and "--size must not be negative" in result.stderr
    assert SEEN == [{"size": -1, "levels": [4, 8]}]  # parsed, checked before anything is sent
    result = invoke_cli("bench", "toy", "--url", "http://127.0.0.1:9", "--levels", ",",
                        check=False)
    assert result.returncode == 2 and "--levels is empty" in result.stderr


def test_a_registered_scenario_gets_its_report_section_and_plots(registered, tmp_path):
    results = ResultsFile(tmp_path / "toy.json", "scenario", "toy", {"size": 3})
    results.add_sample({"size": 3})
    results.add_sample({"size": 5})
    results.finish("complete")
    text = render_report([tmp_path / "toy.json"], tmp_path / "r", "t").read_text()
    assert "## toy (scenario)" in text and "Toy sizes: 3, 5." in text
    assert "![toy-toy](toy-toy.png)" in text and (tmp_path / "r" / "toy-toy.png").is_file()


def test_an_unregistered_scenario_is_gone_again():
    assert "toy" not in scenarios.SCENARIOS
    assert "toy" not in invoke_cli("bench", "--help").stdout.split()


def test_every_builtin_command_comes_from_its_entry():
    out = invoke_cli("bench", "--help").stdout
    for name in scenarios.SCENARIOS:
        assert name in out
    assert "--no-stream" in invoke_cli("bench", "retrieval", "--help").stdout
    assert "--no-stream" not in invoke_cli("bench", "overlap", "--help").stdout
    assert "capture_dir" in invoke_cli("bench", "replay", "--help").stdout


def test_an_empty_list_parameter_is_refused_by_name():
    result = invoke_cli("bench", "retrieval", "--url", "http://127.0.0.1:9", "--lengths", "",
                        check=False)
    assert result.returncode == 2 and "--lengths is empty" in result.stderr


def test_every_reference_in_the_registry_resolves():
    from sm121.bench.scenario_spec import resolve

    for spec in scenarios.SCENARIOS.values():
        for ref in (spec.run, spec.prepare, spec.headline, spec.flatten, spec.verdict,
                    spec.recompute, spec.rejudge, spec.plots, spec.section, spec.console,
                    spec.sample, spec.summary):
            if ref is not None:
                assert resolve(ref) is not None, (spec.name, ref)


def test_a_bad_reference_is_a_clear_error():
    from sm121.bench.scenario_spec import resolve

    with pytest.raises(Sm121Error, match="cannot load 'sm121.bench.nothing:here'"):
        resolve("sm121.bench.nothing:here")
