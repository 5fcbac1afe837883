"""A new scenario is one class plus one table line: a toy scenario registered here gets its
`sm121 bench toy` command with its own parameters, its report section and its plot, and no
other file changes. The built-in commands come from the same table, which lists them
without importing their modules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import invoke_cli

from sm121.bench import scenarios
from sm121.bench.report.markdown import render_report
from sm121.bench.result_models import Open, ScenarioResults
from sm121.bench.results import ResultsFile
from sm121.bench.scenario import Params, Results, Scenario, option
from sm121.errors import Sm121Error

SEEN: list[dict[str, Any]] = []


class ToyParams(Params):
    size: int = option(1, "--size", "How big.")
    levels: list[int] = option([1, 2], "--levels", "Levels.", nonempty="1,2")


class ToySample(Open):
    size: int


class Toy(Scenario[ToySample, Open]):
    name = "toy"
    help = "A toy scenario (registered by a test)."
    params = ToyParams
    sample = ToySample

    async def run(self, ctx: Any, params: Params) -> Open:
        return Open(size=params.size)  # type: ignore[attr-defined]

    def prepare(self, values: Params) -> Params:
        SEEN.append(values.model_dump())
        if values.size < 0:  # type: ignore[attr-defined]
            raise Sm121Error("--size must not be negative", "example: --size 3")
        return values

    def plots(self, results: Results, out: Path, stem: str) -> list[Path]:
        path = out / f"{stem}-toy.png"
        path.write_bytes(b"\x89PNG toy")
        return [path]

    def section(self, results: Results, files: list[Path]) -> list[str] | None:
        sizes = ", ".join(str(s.size) for s in results.samples)
        return [f"Toy sizes: {sizes}.", "", *[f"![{f.stem}]({f.name})" for f in files], ""]


@pytest.fixture
def registered():
    scenarios.register("toy", Toy())
    SEEN.clear()
    yield
    scenarios.unregister("toy")


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
    typed = scenarios.load_typed(tmp_path / "toy.json")
    assert isinstance(typed, ScenarioResults) and typed.samples[1].size == 5


def test_an_unregistered_scenario_is_gone_again():
    assert "toy" not in scenarios.TABLE
    assert "toy" not in invoke_cli("bench", "--help").stdout.split()


def test_every_builtin_command_comes_from_its_table_line():
    out = invoke_cli("bench", "--help").stdout
    for name in scenarios.TABLE:
        assert name in out
    assert "--no-stream" in invoke_cli("bench", "retrieval", "--help").stdout
    assert "--no-stream" not in invoke_cli("bench", "overlap", "--help").stdout
    assert "capture_dir" in invoke_cli("bench", "replay", "--help").stdout


def test_an_empty_list_parameter_is_refused_by_name():
    result = invoke_cli("bench", "retrieval", "--url", "http://127.0.0.1:9", "--lengths", "",
                        check=False)
    assert result.returncode == 2 and "--lengths is empty" in result.stderr


def test_every_table_line_loads_a_scenario_of_that_name():
    for name, entry in scenarios.TABLE.items():
        scenario = scenarios.get(name)
        assert isinstance(scenario, Scenario) and scenario.name == name, entry
        assert type(scenario).__module__ == entry.module and entry.summary


def test_an_unknown_scenario_is_a_clear_error():
    with pytest.raises(Sm121Error, match="unknown scenario 'nothing'"):
        scenarios.get("nothing")


def test_bench_help_loads_no_scenario_module():
    """`sm121 bench --help` lists the table; no scenario's module (nor aiohttp) is imported."""
    code = ("import json, sys\nfrom typer.testing import CliRunner\n"
            "from sm121.cli.main import app\n"
            "result = CliRunner().invoke(app, ['bench', '--help'])\n"
            "assert result.exit_code == 0, result.output\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('sm121.bench')"
            " or m == 'aiohttp')))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                       text=True, check=True).stdout)
    assert "sm121.bench.scenarios" in loaded
    heavy = {e.module for e in scenarios.TABLE.values()} | {
        "aiohttp", "sm121.bench.runner", "sm121.bench.report.markdown"}
    assert not heavy & set(loaded), loaded


def test_every_table_entry_runs_through_the_contract():
    """Each scenario of the table implements `run` (none raises in place of one), has a
    params model, and names itself as the table does."""
    for name in scenarios.names():
        scenario = scenarios.get(name)
        assert type(scenario).run is not Scenario.run, name
        assert issubclass(scenario.params, Params) and scenario.name == name
