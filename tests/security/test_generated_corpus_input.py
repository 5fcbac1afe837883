"""The generated corpus, beyond strings: every number a recipe or a cluster file can hold
(read off the schemas, as the string corpus is), fed huge and non-finite values; every string
field given through a YAML alias; and resume files (a tune's arms read back from
OUT/tune.json) fed the hostile strings and names of the string corpus. Each through the real
command line.

- numbers: NaN and infinity are refused naming the field; a huge number is refused naming
  the field or plans (`plan --memory` for recipes, where sizes are computed) without a
  traceback;
- aliases: refused at the alias, whatever field it stands for;
- resume files: a planted arm is refused before anything boots (no knee, no engine)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from schema_strings import (
    KEY,
    SKELETONS,
    Location,
    document,
    number_locations,
    string_locations,
)
from support import invoke_cli
from test_generated_corpus import HOSTILE, NON_UTF8, _cluster_base, _value, hidden_characters

from sm121.cluster.spec import Cluster
from sm121.recipes.schema import Recipe

NUMBERS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "huge-int": 10**30,
           "huge-float": 1e300, "negative": -1}
NON_FINITE = ("nan", "inf", "-inf")
RECIPE_NUMBERS = number_locations(Recipe)
CLUSTER_NUMBERS = number_locations(Cluster)


@pytest.fixture
def box(tmp_path: Path) -> dict[str, Path]:
    folders = {name: tmp_path / name for name in ("home", "sm121", "victim", "work")}
    for folder in folders.values():
        folder.mkdir()
    return {**folders, "mark": tmp_path / "MARK"}


def _env(box: dict[str, Path]) -> dict[str, str]:
    return {"HOME": str(box["home"]), "SM121_HOME": str(box["sm121"])}


def _recipe_doc(location: Location, value: Any) -> dict[str, Any]:
    base = dict(SKELETONS["Recipe"])
    if location.label.startswith("profiles."):
        base["default_profile"] = "p1"
    if location.label.startswith("parallelism."):  # the other counts follow, so the value
        base["parallelism"] = {}                   # itself is what is judged
    return document(location, value, base)


def _judged(code: int, text: str, location: Location, kind: str) -> list[str]:
    problems = []
    if "Traceback" in text:
        problems.append("printed a traceback")
    if code not in (0, 1, 2):
        problems.append(f"exit status {code}")
    if kind in NON_FINITE:
        if code != 2:
            problems.append(f"a non-finite number was not refused (exit {code})")
        elif "NaN and infinity are refused" not in text and "NaN" not in text:
            problems.append(f"the refusal does not name NaN: {text[:300]!r}")
    if code == 2 and location.field not in text and "NaN" not in text:
        problems.append(f"the refusal does not name {location.field}: {text[:300]!r}")
    return problems


@pytest.mark.parametrize("kind", list(NUMBERS))
@pytest.mark.parametrize("location", RECIPE_NUMBERS, ids=lambda loc: loc.label)
def test_recipe_number_field(location: Location, kind: str, box: dict[str, Path]) -> None:
    path = box["work"] / "r.yaml"
    path.write_text(yaml.safe_dump(_recipe_doc(location, NUMBERS[kind]), width=1 << 20))
    problems = []
    for flags in ((), ("--trust",), ("--trust", "--memory")):
        result = invoke_cli("plan", str(path), *flags, check=False, env=_env(box))
        problems += [f"(plan {' '.join(flags)}) {p}" for p in _judged(
            result.returncode, result.stdout + result.stderr, location, kind)]
    assert not problems, f"{location.label} = {kind}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("kind", list(NUMBERS))
@pytest.mark.parametrize("location", CLUSTER_NUMBERS, ids=lambda loc: loc.label)
def test_cluster_number_field(location: Location, kind: str, box: dict[str, Path]) -> None:
    path = box["work"] / "c.yaml"
    data = document(location, NUMBERS[kind], _cluster_base(box))
    path.write_text(yaml.safe_dump(data, width=1 << 20))
    result = invoke_cli("plan", "tiny-cpu", "--cluster", str(path), "--trust", check=False,
                        env=_env(box))
    problems = _judged(result.returncode, result.stdout + result.stderr, location, kind)
    assert not problems, f"{location.label} = {kind}:\n  " + "\n  ".join(problems)


ALIASED = "@ALIASED@"


def _aliased(data: dict[str, Any]) -> str:
    """The document with its hostile value given as an alias to an anchor defined first (on
    a top-level key of its own, which only an alias-reading loader would ever reach)."""
    text = yaml.safe_dump(data, width=1 << 20)
    return "anchor: &v benign0\n" + text.replace(f"'{ALIASED}'", "*v").replace(ALIASED, "*v")


@pytest.mark.parametrize("location", string_locations(Recipe), ids=lambda loc: loc.label)
def test_recipe_string_field_through_an_alias(location: Location, box: dict[str, Path]) -> None:
    if location.steps[-1] == KEY:
        pytest.skip("a mapping key given as an alias is the value case with a key")
    path = box["work"] / "r.yaml"
    path.write_text(_aliased(_recipe_doc(location, ALIASED)))
    assert "*v" in path.read_text()
    result = invoke_cli("plan", str(path), "--trust", check=False, env=_env(box))
    assert result.returncode == 2 and "alias *v" in result.stderr, result.stdout + result.stderr


@pytest.mark.parametrize("location", string_locations(Cluster), ids=lambda loc: loc.label)
def test_cluster_string_field_through_an_alias(location: Location, box: dict[str, Path]) -> None:
    if location.steps[-1] == KEY:
        pytest.skip("a mapping key given as an alias is the value case with a key")
    path = box["work"] / "c.yaml"
    path.write_text(_aliased(document(location, ALIASED, _cluster_base(box))))
    assert "*v" in path.read_text()
    result = invoke_cli("plan", "tiny-cpu", "--cluster", str(path), "--trust", check=False,
                        env=_env(box))
    assert result.returncode == 2 and "alias *v" in result.stderr, result.stdout + result.stderr


# --- resume files: a tune's arms, read back from OUT/tune.json ------------------------------

@pytest.fixture(scope="module")
def started_tune(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """OUT/tune.json as a first `sm121 tune` leaves it (it writes its question first; this one
    stops at an unknown baseline), read once and planted afresh by each case."""
    root = tmp_path_factory.mktemp("tune")
    env = {"HOME": str(root), "SM121_HOME": str(root / "sm121")}
    out = root / "out"
    invoke_cli("tune", "tiny-cpu", "--out", str(out), "--baselines", "nope", "--agents", "2",
               "--turns", "2", check=False, env=env)
    return dict(json.loads((out / "tune.json").read_text()))


RESUME_SHAPES = ("value", "flag-name", "arm-name")


@pytest.mark.parametrize("shape", RESUME_SHAPES)
@pytest.mark.parametrize("kind", [k for k in HOSTILE if HOSTILE[k] != NON_UTF8])
def test_a_planted_tune_arm(kind: str, shape: str, started_tune: dict[str, Any],
                            box: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The hostile string as an allow-listed flag's value, as a flag's name, or as the arm's
    name beside a flag that needs trust. Refused before the first boot, naming what it is,
    every hidden character spelled out."""
    booted: list[str] = []
    # Nothing may boot: were the check to let an arm through, the knee would be next.
    monkeypatch.setattr("sm121.bench.tune.knee_step.knee_on_recipe",
                        lambda *a, **k: booted.append("knee") or (_ for _ in ()).throw(
                            RuntimeError("booted")))
    value = _value(kind, box)
    args = {"value": {"tool-call-parser": value}, "flag-name": {value: True},
            "arm-name": {"trust-remote-code": True}}[shape]
    name = value if shape == "arm-name" else "seqs-64"
    out = box["work"] / "out"
    out.mkdir()
    state = {**started_tune, "candidates": [
        {"name": name, "base": "agent", "args": args, "why": "planted"}]}
    (out / "tune.json").write_text(json.dumps(state))
    result = invoke_cli("tune", "tiny-cpu", "--out", str(out), "--agents", "2", "--turns",
                        "2", check=False, env=_env(box))
    text = result.stdout + result.stderr
    assert not booted, f"{kind} as {shape}: booted the knee"
    assert result.returncode == 2 and "Traceback" not in text, f"{kind} as {shape}: {text}"
    # an arm's name outside its allow-list is refused at load, before its flags are looked at
    assert ("--trust" in text or "not valid" in text or "must be" in text
            or "not an allowed profile name" in text
            or "not an allowed engine arg name" in text), text
    assert not hidden_characters(text), f"{kind} as {shape}: {hidden_characters(text)}"
    assert len(text) < 6000, f"{kind} as {shape}: the refusal is {len(text)} characters"
    assert not box["mark"].exists() and not any(box["victim"].iterdir())
