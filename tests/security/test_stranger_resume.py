"""What is read back from disk to decide what runs is a stranger's: tune folders are committed
and shared (docs/results), so a planted OUT/tune.json must not boot a built-in recipe with any
engine flag. The args a resume boots get the same trust check and engine-parser check as
`--set` on a foreign recipe, built-in recipes included; `--set` of a flag outside the
allow-list needs --trust for a built-in recipe too. All through the real command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import invoke_cli

HOSTILE_ARGS = {"trust-remote-code": True, "chat-template": "~/.ssh/id_rsa",
                "allowed-local-media-path": "/", "middleware": "os.system"}


def _env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"HOME": str(home), "SM121_HOME": str(tmp_path / "sm121")}


def _started_tune(tmp_path: Path) -> Path:
    """A tune folder as a first invocation leaves it: `sm121 tune` writes OUT/tune.json (its
    question) before anything else, and this one stops there (an unknown baseline)."""
    out = tmp_path / "tune-out"
    result = invoke_cli("tune", "tiny-cpu", "--out", str(out), "--baselines", "nope",
                        "--agents", "2", "--turns", "2", check=False, env=_env(tmp_path))
    assert result.returncode == 2 and (out / "tune.json").is_file(), result.stderr
    return out


@pytest.fixture
def no_boot(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Were a planted arm to get past the check, the knee's boot would come next: made to
    fail at once (and be recorded), so a regression shows without booting an engine."""
    booted: list[str] = []

    def knee(*args: Any, **kwargs: Any) -> None:
        booted.append("knee")
        raise RuntimeError("the tune went on to boot the knee")

    monkeypatch.setattr("sm121.bench.tune.run.knee_on_recipe", knee)
    return booted


def _plant(out: Path, args: dict[str, Any], name: str = "seqs-64") -> None:
    state = json.loads((out / "tune.json").read_text())
    state["candidates"] = [{"name": name, "base": "agent", "args": args, "why": "planted",
                            "source": "step 1", "differs": [], "role": []}]
    (out / "tune.json").write_text(json.dumps(state))


def test_a_planted_tune_json_does_not_boot_trust_flags_without_trust(
        tmp_path: Path, no_boot: list[str]) -> None:
    """The issue's High: a resumed tune of a built-in recipe booted `--trust-remote-code
    --chat-template=~/.ssh/id_rsa --allowed-local-media-path=/ --middleware=os.system` with
    `needs_trust: []`. Refused before anything boots (no knee, no run), naming each flag."""
    out = _started_tune(tmp_path)
    _plant(out, HOSTILE_ARGS)
    result = invoke_cli("tune", "tiny-cpu", "--out", str(out), "--agents", "2", "--turns",
                        "2", check=False, env=_env(tmp_path))
    text = result.stdout + result.stderr
    assert not no_boot and result.returncode == 2, text
    for flag in HOSTILE_ARGS:
        assert f"--set {flag}" in text, text
    assert "--trust" in text and "Traceback" not in text
    assert not (out / "knee.json").exists()  # nothing booted
    assert not (tmp_path / "sm121" / "runs").exists() or not any(
        (tmp_path / "sm121" / "runs").iterdir())


def test_a_planted_tune_json_with_an_abbreviation_is_refused(
        tmp_path: Path, no_boot: list[str]) -> None:
    """A name the allow-list does not hold but vLLM's parser reads as another flag
    (`--trust-remote` abbreviates --trust-remote-code): refused, naming what vLLM reads."""
    out = _started_tune(tmp_path)
    _plant(out, {"trust-remote": True})
    result = invoke_cli("tune", "tiny-cpu", "--out", str(out), "--agents", "2", "--turns",
                        "2", check=False, env=_env(tmp_path))
    assert not no_boot and result.returncode == 2, result.stdout + result.stderr
    assert "trust-remote-code" in result.stderr


def test_set_of_a_flag_outside_the_allow_list_needs_trust_on_a_built_in_recipe(
        tmp_path: Path) -> None:
    refused = invoke_cli("plan", "tiny-cpu", "--set", "trust-remote-code=true", "--json",
                         check=False, env=_env(tmp_path))
    assert refused.returncode == 2 and "--set trust-remote-code" in refused.stderr
    allowed = invoke_cli("plan", "tiny-cpu", "--set", "trust-remote-code=true", "--trust",
                         "--json", env=_env(tmp_path))
    plan = json.loads(allowed.stdout)
    assert "--trust-remote-code" in plan["nodes"][0]["argv"]
    assert any("trust-remote-code" in item for item in plan["needs_trust"])


def test_set_of_an_allow_listed_flag_on_a_built_in_recipe_needs_no_trust(
        tmp_path: Path) -> None:
    result = invoke_cli("plan", "tiny-cpu", "--set", "max-num-seqs=4", "--json",
                        env=_env(tmp_path))
    assert json.loads(result.stdout)["needs_trust"] == []


@pytest.mark.parametrize("value", ["4 --trust-remote-code", "-1", "1e999"])
def test_set_of_an_allow_listed_flag_with_a_bad_value_needs_trust(value: str,
                                                                   tmp_path: Path) -> None:
    result = invoke_cli("plan", "tiny-cpu", "--set", f"max-num-seqs={value}", check=False,
                        env=_env(tmp_path))
    assert result.returncode == 2, result.stdout
    assert "max-num-seqs" in result.stderr


def test_a_flag_given_twice_by_two_spellings_is_an_error_naming_both(tmp_path: Path) -> None:
    result = invoke_cli("plan", "tiny-cpu", "--set", "max_num_seqs=4", "--set",
                        "max-num-seqs=8", check=False, env=_env(tmp_path))
    assert result.returncode == 2
    assert "max_num_seqs" in result.stderr and "max-num-seqs" in result.stderr


def test_a_planted_tune_json_with_two_spellings_of_one_flag_is_refused(
        tmp_path: Path, no_boot: list[str]) -> None:
    out = _started_tune(tmp_path)
    _plant(out, {"max_num_seqs": 4, "max-num-seqs": 8})
    result = invoke_cli("tune", "tiny-cpu", "--out", str(out), "--agents", "2", "--turns",
                        "2", check=False, env=_env(tmp_path))
    assert not no_boot and result.returncode == 2, result.stdout + result.stderr
    assert "max_num_seqs" in result.stderr and "max-num-seqs" in result.stderr


@pytest.mark.parametrize("content", [
    '[{"recipe": "tiny-cpu", "profile": "agent", "source": "x", "gmu": NaN}]',
    '[{"recipe": "tiny-cpu", "profile": "agent"}]',  # no source: not an observation
    '{"not": "a list"}',
    "[[[[",
])
def test_a_planted_calibration_file_is_refused_by_name(content: str, tmp_path: Path) -> None:
    """$SM121_HOME/calibration/RECIPE/PROFILE.json steers the memory plan; a bad one (copied
    in, hand-edited) is named, not a traceback."""
    env = _env(tmp_path)
    folder = Path(env["SM121_HOME"]) / "calibration" / "tiny-cpu"
    folder.mkdir(parents=True)
    (folder / "agent.json").write_text(content)
    result = invoke_cli("plan", "tiny-cpu", "--memory", check=False, env=env)
    text = result.stdout + result.stderr
    assert result.returncode == 2 and "Traceback" not in text, text
    assert "calibration file" in text and "agent.json" in text


def _ab_file(path: Path, recipe: str, samples: list[Any]) -> None:
    path.write_text(json.dumps({
        "schema": "sm121.bench.results", "schema_version": 1, "kind": "ab",
        "scenario": "overlap", "sm121_version": "0", "created": "2026-01-01T00:00:00+00:00",
        "status": "interrupted", "params": {"recipe": recipe, "profiles": ["agent"]},
        "server": {}, "probe": None, "samples": samples, "summary": {}, "error": None}))


@pytest.mark.parametrize(("recipe", "samples", "named"), [
    ("tiny-cpu", [{"profile": "agent"}], "not an A/B entry"),  # no rep
    ("tiny-cpu", [{"profile": ["agent"], "rep": "0; rm"}], "not an A/B entry"),
    ("other", [], "not an A/B of tiny-cpu"),  # another A/B's file: its skips are not ours
], ids=["no-rep", "wrong-types", "another-recipe"])
def test_a_planted_ab_resume_file_is_refused_before_a_boot(
        recipe: str, samples: list[Any], named: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    booted: list[str] = []
    monkeypatch.setattr("sm121.bench.ab.booted", lambda *a, **k: booted.append("boot")
                        or (_ for _ in ()).throw(RuntimeError("booted")))
    out = tmp_path / "ab.json"
    _ab_file(out, recipe, samples)
    result = invoke_cli("bench", "ab", "tiny-cpu", "--profiles", "agent", "--reps", "1",
                        "--out", str(out), "--resume", check=False, env=_env(tmp_path))
    text = result.stdout + result.stderr
    assert not booted and result.returncode == 2 and "Traceback" not in text, text
    assert named in text
