"""What is read back from disk to decide what runs is a stranger's: tune folders are committed
and shared (docs/results), so a planted OUT/tune.json must not boot a built-in recipe with any
engine flag. The args a resume boots get the same trust check and engine-parser check as
`--set` on a foreign recipe, built-in recipes included; `--set` of a flag outside the
allow-list needs --trust for a built-in recipe too. All through the real command line."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from support import invoke_cli

from sm121.display import escape

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
        "status": "interrupted", "params": {"recipe": recipe, "profiles": ["agent"], "reps": 1},
        "server": {}, "probe": None, "samples": samples, "summary": {}, "error": None}))


@pytest.mark.parametrize(("recipe", "samples", "named"), [
    ("tiny-cpu", [{"profile": "agent"}], "field 'samples.0.rep'"),  # not an A/B entry
    ("tiny-cpu", [{"profile": ["agent"], "rep": "0; rm"}], "field 'samples.0.profile'"),
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
    planted = out.read_bytes()
    result = invoke_cli("bench", "ab", "tiny-cpu", "--profiles", "agent", "--reps", "1",
                        "--out", str(out), "--resume", check=False, env=_env(tmp_path))
    text = result.stdout + result.stderr
    assert not booted and result.returncode == 2 and "Traceback" not in text, text
    assert named in text
    assert out.read_bytes() == planted  # refused before the file is written back


# Arm names read back from a resumed tune.json become file names in the tune's folder
# (capacity/NAME-agents-N.json, confirm/..., ab-agents/NAME-rep1.json), progress lines and
# the written recipe's comments: a name outside the profile-name allow-list (names.ProfileName)
# is refused at load.
PLANTED_NAMES = {
    "parent": "../../evil", "slash": "a/b", "newline": "x\n y", "osc": "\x1b]0;pwn\x07",
    "trailing-newline": "chunk-4096\n", "nul": "a\x00b", "option": "-rf", "dot": ".hidden",
    "empty": "", "long": "a" * 101, "bidi": "seqs\u202e-82",
}
SITTING = (Path(__file__).resolve().parents[2] / "docs" / "results" / "gpu-h200"
           / "tune-capacity" / "tune-results.tar.gz")
SITTING_ARGS = ("tune", "gpu-llama", "--workload", "coding-agent-with-batch", "--slo",
                "ttft_p95=2s", "--agents", "16", "--max-agents", "40", "--turns", "5",
                "--reps", "1", "--budget", "46m", "--baselines", "agent-admission",
                "--sweep-points", "2", "--boots", "3")


def _listing(root: Path) -> list[tuple[str, int]]:
    """Every path under root (links not followed) with its size: what a write would change."""
    return sorted((str(p.relative_to(root)), p.lstat().st_size) for p in root.rglob("*"))


def _resume(tmp_path: Path, out: Path) -> Any:
    return invoke_cli("tune", "tiny-cpu", "--out", str(out), "--agents", "2", "--turns", "2",
                      check=False, env=_env(tmp_path))


def _refused(tmp_path: Path, out: Path, booted: list[str], field: str) -> str:
    """`sm121 tune` resumed on `out`: exit 2 naming the field and the rule, nothing booted,
    nothing written anywhere under tmp_path (OUT's parent), tune.json as planted."""
    planted, before = (out / "tune.json").read_bytes(), _listing(tmp_path)
    result = _resume(tmp_path, out)
    text = result.stdout + result.stderr
    assert not booted and result.returncode == 2, text
    assert "Traceback" not in text
    assert f"field '{field}" in result.stderr and "is not an allowed profile name" in result.stderr
    assert "letters, digits, '_', '.' and '-', starting with a letter or digit, at most 100 " \
           "characters" in result.stderr
    assert "--fresh" in result.stderr
    assert not any(c in text for c in "\x00\x07\x1b\u202e"), text  # shown escaped
    assert _listing(tmp_path) == before and (out / "tune.json").read_bytes() == planted
    return result.stderr


@pytest.mark.parametrize("name", list(PLANTED_NAMES.values()), ids=list(PLANTED_NAMES))
def test_a_planted_arm_name_is_refused_before_any_path_or_boot(
        name: str, tmp_path: Path, no_boot: list[str]) -> None:
    out = _started_tune(tmp_path)
    _plant(out, {}, name=name)
    stderr = _refused(tmp_path, out, no_boot, "candidates.0.name")
    assert escape(repr(name[:120]), None) in stderr  # the name, spelled out


@pytest.mark.parametrize("where", ["base", "sweeps", "confirm", "capacity", "exclusive",
                                   "predictions", "skipped", "plans", "finalists"])
def test_an_arm_name_is_checked_wherever_tune_json_holds_one(
        where: str, tmp_path: Path, no_boot: list[str]) -> None:
    """Every field that names an arm, its dicts' keys included (sweeps[NAME] is looked up by
    the arm tune measures next, and its name makes the probe's file)."""
    out = _started_tune(tmp_path)
    _plant(out, {})
    state = json.loads((out / "tune.json").read_text())
    evil = "../../evil"
    probe = {"agents": 4, "slo_met": True}
    field = {"base": "candidates.0.base", "plans": "plans.0.before",
             "finalists": "confirm_plan.finalists.0", "skipped": "skipped.0"}.get(where, where)
    if where == "base":
        state["candidates"][0]["base"] = evil
    elif where in ("sweeps", "confirm"):
        state[where] = {evil: [probe]}
    elif where == "capacity":
        state[where] = {evil: {"lo": 4, "hi": None, "text": "t", "tested": [[4, True]]}}
    elif where == "exclusive":
        state[where] = {evil: [{"ttft_s": 1.0}]}
    elif where == "predictions":
        state[where] = {evil: {"predicted": 4}}
    elif where == "skipped":
        state[where] = [evil]
    elif where == "plans":
        state[where] = [{"before": evil, "left_s": 1, "boot_s": 1, "rep_s": 1, "arms_left": 1,
                         "arms": 1, "reps": 1, "probes": 1, "fits": True}]
    else:
        state["confirm_plan"] = {"finalists": [evil, "seqs-64"], "second_n": None, "boots": 3}
    (out / "tune.json").write_text(json.dumps(state))
    _refused(tmp_path, out, no_boot, field)


def _h200_sitting(tmp_path: Path) -> Path:
    with tarfile.open(SITTING) as tar:
        tar.extractall(tmp_path, filter="data")
    return tmp_path / "tune"


def test_the_committed_sittings_names_pass() -> None:
    """Every arm name sm121 made and committed passes the allow-list (docs/results; the
    sittings re-rendered whole are tests/unit/tune's)."""
    from sm121.names import check_profile_name

    found = sorted((SITTING.parents[2]).glob("*/*/tune.json"))
    assert len(found) >= 4
    for path in found:
        state = json.loads(path.read_text())
        names = [n for c in state["candidates"] for n in (c["name"], c["base"])]
        names += [n for key in ("predictions", "sweeps", "capacity", "confirm", "exclusive")
                  for n in state.get(key, {})]
        names += state.get("skipped", []) + [p["before"] for p in state.get("plans", [])]
        names += state["result"]["ranking"]
        assert len(names) > 8 and all(check_profile_name(n) == n for n in names)


def test_a_linked_report_in_a_tune_folder_is_not_written_through(tmp_path: Path) -> None:
    """The second line under the names' type: every file tune writes by name in OUT is
    resolved first, and one that a link sends outside OUT is refused (a handed-over folder
    may hold links; git keeps them). Here the finished H200 sitting re-renders its report,
    whose report.md links to a file of the user's."""
    out = _h200_sitting(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's file\n")
    (out / "report.md").unlink()
    (out / "report.md").symlink_to(victim)
    result = invoke_cli(*SITTING_ARGS, "--no-write", "--out", str(out), check=False,
                        env={"SM121_HOME": str(tmp_path / "home")})
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "refused to write" in result.stderr and "report.md" in result.stderr
    assert victim.read_text() == "the user's file\n"


def test_a_resumed_arms_reasons_reach_the_console_as_one_line_each(tmp_path: Path) -> None:
    """What a progress line quotes from tune.json (why an arm was put last, an arm's reason)
    cannot start a line of its own: a planted arm on the spent H200 sitting is dropped with
    its reason, shown spelled out."""
    out = _h200_sitting(tmp_path)
    state = json.loads((out / "tune.json").read_text())
    state["candidates"].append({"name": "planted", "base": "agent-admission", "args": {},
                                "why": "w\nFAKE why", "source": "step 1"})
    state.setdefault("predictions", {})["planted"] = {"predicted": 3, "below": "x\nFAKE below\x1b[2J"}
    (out / "tune.json").write_text(json.dumps(state))
    result = invoke_cli(*SITTING_ARGS, "--no-write", "--out", str(out),
                        env={"SM121_HOME": str(tmp_path / "home")})
    assert "dropped planted: x\\nFAKE below\\x1b[2J; " in result.stderr, result.stderr
    lines = (result.stdout + result.stderr).splitlines()
    assert not any(line.lstrip().startswith("FAKE") for line in lines)


def test_a_strangers_device_and_reason_are_comments_in_the_written_recipe(
        tmp_path: Path) -> None:
    """`--write` copies the sitting's device and the chosen arm's reason into YAML comments:
    a control character there made the file unreadable YAML (and the write fail); now each is
    spelled out on its comment line, and the recipe reads back with the profile."""
    import yaml

    out = _h200_sitting(tmp_path)
    state = json.loads((out / "tune.json").read_text())
    device = "NVIDIA H200\x1b]0;pwn\x07\x7f\u2028profiles: {}"
    state["sitting"] = {"device": device, "date": "2026-12-05"}
    for c in state["candidates"]:
        if c["name"] == "chunk-4096":
            c["why"] = "w\x85x\x00 # y"
    (out / "tune.json").write_text(json.dumps(state))
    home = tmp_path / "home"
    invoke_cli(*SITTING_ARGS, "--out", str(out), env={"SM121_HOME": str(home)})
    text = (home / "recipes" / "gpu-llama.yaml").read_text()
    # (a line separator, U+2028 or NEL, is whitespace: one space, as a newline is)
    assert "# Sitting: NVIDIA H200\\x1b]0;pwn\\x07\\x7f profiles: {}, vLLM" in text
    assert ": chunk-4096, w x\\x00 # y.\n" in text
    assert not any(not c.isprintable() and c != "\n" for c in text)
    assert yaml.safe_load(text)["profiles"]["tuned"]["args"]["max-num-batched-tokens"] == 4096
