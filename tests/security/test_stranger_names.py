"""Three names a stranger's file holds, typed where the file is read: a recipe's profile names
(`profiles:` keys, names.ProfileName, the type tune's arms have), the names of the engine args
each arm of a resumed tune.json sets (recipes/schema.check_arg_name, the rule of every recipe's
args and `--set`), and the profiles an A/B's results file names (names.AbProfile). Each is
refused through the real command line with exit 2, naming the file, the field, the value
spelled out and the rule, before anything is booted or written."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import invoke_cli
from test_stranger_resume import SITTING, SITTING_ARGS, _env, _listing, _plant, _started_tune

from sm121.display import quoted
from sm121.names import PROFILE_NAME_RULE
from sm121.recipes.schema import ARG_NAME_RULE

HOSTILE = {
    "parent": "../../evil", "slash": "a/b", "newline": "x\n y", "osc": "\x1b]0;pwn\x07",
    "nul": "a\x00b", "bidi": "seqs\u202e-82", "option": "-rf", "empty": "", "long": "a" * 101,
}
SHOWN = "\x00\x07\x1b\u202e"  # what must never reach the terminal as itself
BUILTIN = Path(__file__).resolve().parents[2] / "src" / "sm121" / "recipes" / "builtin"


def _recipe_with_profile(folder: Path, name: str) -> Path:
    """tiny-cpu as a stranger's file, with one more profile named `name`."""
    data = yaml.safe_load((BUILTIN / "tiny-cpu.yaml").read_text())
    data["name"] = "stranger"
    data["profiles"][name] = {"purpose": "planted", "args": {"max-num-seqs": 4}}
    path = folder / "stranger.yaml"
    path.write_text(yaml.safe_dump(data))  # control characters as YAML's escapes
    return path


@pytest.mark.parametrize("name", list(HOSTILE.values()), ids=list(HOSTILE))
def test_a_recipes_bad_profile_name_is_refused_at_load(
        name: str, tmp_path: Path, no_boot: list[str]) -> None:
    """`sm121 tune` on the recipe: refused before OUT exists or the knee boots."""
    recipe = _recipe_with_profile(tmp_path, name)
    out = tmp_path / "out"
    result = invoke_cli("tune", str(recipe), "--out", str(out), "--agents", "2", "--turns",
                        "2", check=False, env=_env(tmp_path))
    text = result.stdout + result.stderr
    assert result.returncode == 2 and not no_boot and "Traceback" not in text, text
    assert f"{recipe}: profiles: {quoted(name, 120)} is not an allowed profile name " \
           f"(allowed: {PROFILE_NAME_RULE})" in result.stderr, result.stderr
    assert not any(c in text for c in SHOWN), text
    assert not out.exists() and not (tmp_path / "sm121").exists()


def test_a_profile_name_of_100_characters_loads(tmp_path: Path) -> None:
    name = "p" * 100
    recipe = _recipe_with_profile(tmp_path, name)
    result = invoke_cli("plan", str(recipe), "--profile", name, "--json", env=_env(tmp_path))
    assert json.loads(result.stdout)["profile"] == name


def _resume_refused(tmp_path: Path, out: Path, booted: list[str]) -> str:
    """`sm121 tune` resumed on a planted OUT/tune.json: exit 2, nothing booted, nothing
    written anywhere under tmp_path, tune.json as planted."""
    planted, before = (out / "tune.json").read_bytes(), _listing(tmp_path)
    result = invoke_cli("tune", "tiny-cpu", "--out", str(out), "--agents", "2", "--turns", "2",
                        check=False, env=_env(tmp_path))
    text = result.stdout + result.stderr
    assert result.returncode == 2 and not booted and "Traceback" not in text, text
    assert f"{out / 'tune.json'} is not a tune.json this sm121 reads" in result.stderr
    assert not any(c in text for c in SHOWN), text
    assert _listing(tmp_path) == before and (out / "tune.json").read_bytes() == planted
    return result.stderr


@pytest.mark.parametrize("key", list(HOSTILE.values()), ids=list(HOSTILE))
def test_a_planted_engine_arg_name_in_tune_json_is_refused_at_load(
        key: str, tmp_path: Path, no_boot: list[str]) -> None:
    out = _started_tune(tmp_path)
    _plant(out, {key: 4})
    stderr = _resume_refused(tmp_path, out, no_boot)
    assert f"field {quoted(f'candidates.0.args.{key}.[key]', 200)}" in stderr, stderr
    assert f"{quoted(key, 120)} is not an allowed engine arg name (allowed: {ARG_NAME_RULE})" \
        in stderr, stderr


def test_a_planted_engine_arg_value_that_is_not_finite_is_refused_at_load(
        tmp_path: Path, no_boot: list[str]) -> None:
    """The values have a recipe's type (ArgValue, finite numbers only): `NaN` is JSON to
    Python's reader, and was read as a float."""
    out = _started_tune(tmp_path)
    _plant(out, {"max-num-seqs": float("nan")})
    # (pydantic names the union's first member it tried: str)
    assert "field 'candidates.0.args.max-num-seqs" in _resume_refused(tmp_path, out, no_boot)


def _ab_file(path: Path, profiles: list[str], samples: list[Any],
             **more: Any) -> None:
    path.write_text(json.dumps({
        "schema": "sm121.bench.results", "schema_version": 1, "kind": "ab",
        "scenario": "overlap", "sm121_version": "0", "created": "2026-01-01T00:00:00+00:00",
        "status": "interrupted", "server": {}, "probe": None, "summary": {}, "error": None,
        "params": {"recipe": "tiny-cpu", "profiles": profiles, "reps": 1},
        "samples": samples, **more}))


def _ab_refused(tmp_path: Path, out: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """`sm121 bench ab --resume` on a planted results file: exit 2, nothing booted, the file
    not written back."""
    booted: list[str] = []
    monkeypatch.setattr("sm121.bench.ab.booted", lambda *a, **k: booted.append("boot")
                        or (_ for _ in ()).throw(RuntimeError("booted")))
    env = _env(tmp_path)
    planted, before = out.read_bytes(), _listing(tmp_path)
    result = invoke_cli("bench", "ab", "tiny-cpu", "--profiles", "agent", "--reps", "1",
                        "--out", str(out), "--resume", check=False, env=env)
    text = result.stdout + result.stderr
    assert result.returncode == 2 and not booted and "Traceback" not in text, text
    assert not any(c in text for c in SHOWN), text
    assert out.read_bytes() == planted and _listing(tmp_path) == before
    return result.stderr


@pytest.mark.parametrize("name", list(HOSTILE.values()), ids=list(HOSTILE))
def test_a_planted_ab_profile_is_refused_at_load(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sample's profile names the repetition's file (`ab/NAME-rep1.json`) and is skipped
    or measured by it."""
    out = tmp_path / "ab.json"
    _ab_file(out, ["agent"], [{"profile": name, "rep": 0, "error": "planted"}])
    stderr = _ab_refused(tmp_path, out, monkeypatch)
    assert f"{out}: field 'samples.0.profile': Value error, {quoted(name, 120)} is not an " \
           f"allowed profile name (allowed: {PROFILE_NAME_RULE})" in stderr, stderr


@pytest.mark.parametrize(("where", "field"), [
    ("params", "params.profiles.0"), ("boots", "boots.0.name"),
    ("pair", "params.profiles.1"), ("pair-recipe", "params.profiles.1"),
])
def test_an_ab_profile_is_checked_wherever_the_file_holds_one(
        where: str, field: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The A/B's own list, each boot's record, and an A/B across recipes (RECIPE:PROFILE, each
    side a profile name; `tiny-cpu:agent` is a committed one)."""
    out = tmp_path / "ab.json"
    evil = "../../evil"
    profiles = {"params": [evil], "pair": ["tiny-cpu:agent", "tiny-cpu:../x"],
                "pair-recipe": ["tiny-cpu:agent", "-rf:agent"]}.get(where, ["agent"])
    boots = [{"run_id": "r", "name": evil}] if where == "boots" else []
    _ab_file(out, profiles, [], boots=boots)
    stderr = _ab_refused(tmp_path, out, monkeypatch)
    assert f"field '{field}'" in stderr, stderr
    assert ("or RECIPE:PROFILE, two such names" if where.startswith("pair")
            else PROFILE_NAME_RULE) in stderr


def test_a_planted_ab_profile_in_a_finished_tune_is_refused_before_the_report(
        tmp_path: Path) -> None:
    """tune's A/B (OUT/ab-agents.json) read back on the H200 sitting: refused when read,
    before the report or any arm's file is written; nothing boots (the sitting is done)."""
    with tarfile.open(SITTING) as tar:
        tar.extractall(tmp_path, filter="data")
    out = tmp_path / "tune"
    ab = json.loads((out / "ab-agents.json").read_text())
    ab["samples"][0]["profile"] = "\x1b]0;pwn\x07"
    (out / "ab-agents.json").write_text(json.dumps(ab))
    report, planted = (out / "report.md").read_bytes(), (out / "ab-agents.json").read_bytes()
    result = invoke_cli(*SITTING_ARGS, "--no-write", "--out", str(out), check=False,
                        env={"SM121_HOME": str(tmp_path / "home")})
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "field 'samples.0.profile'" in result.stderr and "'\\x1b]0;pwn\\x07'" in result.stderr
    assert not any(c in result.stdout + result.stderr for c in SHOWN)
    assert (out / "report.md").read_bytes() == report
    assert (out / "ab-agents.json").read_bytes() == planted
