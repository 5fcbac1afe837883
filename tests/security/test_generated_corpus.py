"""The generated hostile corpus: every string a recipe or a cluster file can hold (read off the
schemas by schema_strings.py, so the corpus grows with the surface), fed each hostile input,
through the real command line in process.

Each case must end one of two ways:
- **refused**: exit status 2, no traceback, and a message that names the field; or
- **harmless**: the plan (and, for cluster files, `cluster check`, which runs commands on the
  node; for weight sources, `stage`, which writes files) treats the value as data. Read as
  each consumer reads it:
  - exec: no node's argv[0], and no process sm121 starts, is or holds the value;
  - argv: the value sits inside the elements a plain value sits in (`benign0` in the same
    place gives the same argv with the value swapped), and never stands alone as an option;
  - shell: in every rendered start script and every `sh -c`/ssh command line, the value's
    shell metacharacters are inside single quotes (a small reader of POSIX quoting);
  - paths: a traversal or an absolute path never lands in a path sm121 builds, and the victim
    folders it points at stay empty;
  - the `touch MARK` the shell inputs carry never ran.

Without --trust, a value a foreign recipe may not use must be refused before anything runs;
with --trust, the quoting and path rules still hold (trust allows a recipe's own command, never
an injection through a field)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from schema_strings import KEY, SKELETONS, Location, document, string_locations
from support import invoke_cli

from sm121.cluster.spec import Cluster
from sm121.launch import runtimes
from sm121.plan.model import NodePlan
from sm121.recipes.schema import Recipe

BENIGN = "benign0"
NON_UTF8 = "@NON-UTF8@"  # replaced by raw bytes in the file
# The inputs; the shell ones carry a marker command, so "never ran" is a file check.
HOSTILE = {
    "dash": "-x",
    "semicolon": "a;touch @MARK@",
    "command-substitution": "$(touch @MARK@)",
    "backticks": "`touch @MARK@`",
    "newline": "a\ntouch @MARK@",
    "dotdot": "..",
    "traversal": "x/../../../../../../../../../../../..@VICTIM@",
    "absolute": "@VICTIM@",
    "long": "x" * 10_000,
    "non-utf8": NON_UTF8,
    # What a terminal reads: an ESC sequence that clears the screen and draws a fake line, a
    # bidi override that reverses what follows, zero-width characters that hide a difference.
    "escape-sequence": "a\x1b[H\x1b[2J\x1b]0;t\x07- fake: `sync`",
    "bidi": "a\u202etxt.hs\u202c\u2066b\u2069",
    "zero-width": "ben\u200bign\u200d0\ufeff",
}
SHELL_INPUTS = ("semicolon", "command-substitution", "backticks", "newline")
# Printed to a person: every hidden character must reach the screen spelled out.
DISPLAY_INPUTS = ("escape-sequence", "bidi", "zero-width", "newline")
PATH_INPUTS = ("dotdot", "traversal", "absolute")
RECIPE_LOCATIONS = string_locations(Recipe)
CLUSTER_LOCATIONS = string_locations(Cluster)


@pytest.fixture
def sandbox(tmp_path: Path) -> dict[str, Path]:
    folders = {name: tmp_path / name for name in ("home", "sm121", "victim", "work")}
    for folder in folders.values():
        folder.mkdir()
    model = folders["home"] / ".cache" / "model"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    return {**folders, "mark": tmp_path / "MARK", "model": model}


def _value(kind: str, box: dict[str, Path]) -> str:
    return (HOSTILE[kind].replace("@MARK@", str(box["mark"]))
            .replace("@VICTIM@", str(box["victim"] / "v")))


def _write(data: dict[str, Any], path: Path) -> Path:
    text = yaml.safe_dump(data, allow_unicode=True, width=1 << 20)
    raw = text.encode().replace(NON_UTF8.encode(), b"m\xff\xfe")
    path.write_bytes(raw)
    return path


def _env(box: dict[str, Path]) -> dict[str, str]:
    return {"HOME": str(box["home"]), "SM121_HOME": str(box["sm121"])}


def _cluster_base(box: dict[str, Path]) -> dict[str, Any]:
    return {"name": "c", "head": "n1", "nodes": [{"name": "n1"}],
            "state_dir": str(box["home"] / ".sm121")}


def _cluster_doc(location: Location, value: str, box: dict[str, Path]) -> dict[str, Any]:
    data = document(location, value, _cluster_base(box))
    # A node's name and the head name each other: move both, so the value is what is wrong.
    if location.label == "nodes[0].name":
        data["head"] = value
    if location.label == "head":
        data["nodes"][0]["name"] = value
    return data


def _recipe_doc(location: Location, value: str) -> dict[str, Any]:
    """The recipe, with the neighbours that make the field live (a path model for
    model.path, an HF model for its id and revision, docker for the runtime's image)."""
    base = SKELETONS["Recipe"]
    label = location.label
    if label == "model.path":
        base = {**base, "model": {"id": "m", "source": "path"}}
    elif label in ("model.hf_id", "model.revision"):
        base = {**base, "model": {"id": "m", "source": "hf", "hf_id": "org/m"}}
    elif label.startswith("runtime.") and label not in ("runtime.kind", "runtime.command[0]"):
        base = {**base, "runtime": {"kind": "docker", "image": "vllm/vllm-openai:v0.32.0"}}
    elif label.startswith("hooks.custom"):
        base = {**base, "hooks": {"before_serve": ["myhook"]}}
    data = document(location, value, base)
    if label.startswith("profiles."):
        # The profile is the one served: its fields reach the plan.
        data["default_profile"] = value if location.steps[1] == KEY else "p1"
    return data


# --- reading the rendered result as its consumer does ---------------------------------------

def live_characters(script: str) -> list[bool]:
    """For each character of a POSIX shell script: does the shell read it as syntax or expand
    it (outside single quotes, not backslash-escaped)? Double quotes count as live: `$` and
    backticks expand there."""
    live: list[bool] = []
    state, index = "plain", 0
    while index < len(script):
        char = script[index]
        if state == "single":
            live.append(False)
            state = "plain" if char == "'" else "single"
        elif char == "\\" and index + 1 < len(script):
            live += [state == "double", False]
            index += 2
            continue
        elif state == "double":
            live.append(True)
            state = "plain" if char == '"' else "double"
        else:
            live.append(char not in "'")
            state = {"'": "single", '"': "double"}.get(char, "plain")
        index += 1
    return live


def unquoted_at(script: str, value: str) -> list[int]:
    """Offsets where the value's text occurs with a shell metacharacter left live."""
    live = live_characters(script)
    bad, start = [], script.find(value)
    while start != -1:
        if any(live[start + i] for i, c in enumerate(value) if c in "$`;\n&|()<>"):
            bad.append(start)
        start = script.find(value, start + 1)
    return bad


def _remote_line(argv: list[str]) -> str | None:
    """The shell line a process hands to a shell: `sh -c LINE`, or ssh's remote command (the
    words after the destination, joined with spaces as ssh joins them)."""
    name = os.path.basename(argv[0]) if argv else ""
    if name in ("sh", "bash", "dash") and "-c" in argv:
        return argv[argv.index("-c") + 1]
    if name == "ssh":
        index = 1
        while index < len(argv) and argv[index].startswith("-"):
            index += 2 if argv[index] in ("-o", "-p", "-F", "-S", "-l", "-i", "-J", "-E") else 1
        return " ".join(argv[index + 1:]) or None
    return None


def _alone_as_option(argv: list[str], value: str) -> bool:
    return value.startswith("-") and any(
        word == value and (i == 0 or argv[i - 1] != "--") for i, word in enumerate(argv))


def _path_holds(word: str, value: str) -> bool:
    """A path sm121 built out of the value (the value joined to other parts with `/`)."""
    return value in word and word != value and "/" in word.replace(value, BENIGN)


@contextmanager
def processes_started() -> Iterator[list[list[str]]]:
    """Every process started in this process (subprocess, asyncio's subprocesses, thread
    pools all go through Popen), as argv lists."""
    started: list[list[str]] = []
    real_init = subprocess.Popen.__init__

    def recording(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        started.append([args] if isinstance(args, str | bytes) else [str(a) for a in args])
        real_init(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = recording  # type: ignore[method-assign]
    try:
        yield started
    finally:
        subprocess.Popen.__init__ = real_init  # type: ignore[method-assign]


def _start_script(node: dict[str, Any]) -> str:
    plan = NodePlan.model_validate(node)
    files = runtimes.node_files("/home/u/.sm121", "/home/u", "r1", "n1")
    argv = runtimes.resolved_argv(plan, "/home/u")
    if plan.runtime == "docker":
        return runtimes.docker_start_script(argv, plan.container or "c", files)
    return runtimes.native_start_script(argv, plan.env, files)


def _plan_problems(plan: dict[str, Any], benign: dict[str, Any] | None, value: str,
                   kind: str, trusted: bool) -> list[str]:
    problems = []
    for index, node in enumerate(plan["nodes"]):
        argv: list[str] = node["argv"]
        if not trusted and argv and value in argv[0]:
            problems.append(f"node {index} execs the value: argv[0] {argv[0][:80]!r}")
        if _alone_as_option(argv[1:] if trusted else argv, value):
            problems.append(f"node {index}'s argv holds the value alone, as an option")
        if benign is not None and index < len(benign["nodes"]):
            swapped = [w.replace(value, BENIGN) for w in argv]
            if len(swapped) != len(benign["nodes"][index]["argv"]):
                problems.append(f"node {index}'s argv changed shape: {argv[:12]}")
        if kind in PATH_INPUTS and not trusted:  # trust may expose a path, by definition
            problems += [f"node {index} builds a path from it: {w[:120]!r}" for w in argv
                         if _path_holds(w, value)]
        if kind in SHELL_INPUTS:
            script = _start_script(node)
            if unquoted_at(script, value):
                problems.append(f"node {index}'s start script leaves it unquoted")
    return problems


def _process_problems(started: list[list[str]], value: str, kind: str) -> list[str]:
    problems = []
    for argv in started:
        if value in argv[0]:
            problems.append(f"started a process from the value: {argv[0][:80]!r}")
        if _alone_as_option(argv, value):
            problems.append(f"passed it alone as an option: {shlex.join(argv)[:200]}")
        line = _remote_line(argv)
        if kind in SHELL_INPUTS and line and unquoted_at(line, value):
            problems.append(f"left it unquoted in a shell line: {line[:200]!r}")
    return problems


def hidden_characters(text: str) -> list[str]:
    """Characters a terminal would act on or hide (what display.escape spells out), in text
    sm121 printed for a person; newlines and tabs are its own layout."""
    return sorted({repr(c) for c in text if c not in "\n\t" and (
        unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"))})


def _display_problems(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The human form of the plan (or of its refusal): nothing hidden reaches the screen."""
    found = hidden_characters(result.stdout + result.stderr)
    return [f"printed hidden characters {', '.join(found)} to the terminal"] if found else []


def _victims_untouched(box: dict[str, Path]) -> list[str]:
    problems = [f"wrote {p}" for p in box["victim"].rglob("*")]
    if box["mark"].exists():
        problems.append("the marker command ran")
    return problems


def _refusal_problems(result: subprocess.CompletedProcess[str], location: Location,
                      benign_refused: bool) -> list[str]:
    """A refusal's form; it must name the field unless the file is refused without the value
    too (a docker runtime's image needs --trust whatever its mounts hold)."""
    text = result.stdout + result.stderr
    problems = []
    if result.returncode != 2:
        problems.append(f"exit status {result.returncode}, not 2 (a refusal)")
    if "Traceback" in text:
        problems.append("printed a traceback")
    names = {location.field, "head", "name"} if location.label in ("head", "nodes[0].name") \
        else {location.field}
    if (result.returncode == 2 and not benign_refused and not any(n in text for n in names)
            and "UTF-8" not in text):
        problems.append(f"the refusal does not name {location.field}: {text[:300]!r}")
    if len(text) > 4000:
        problems.append(f"the refusal is {len(text)} characters long (it echoes the value)")
    return problems


# --- the cases ------------------------------------------------------------------------------

def _recipe_plan(location: Location, value: str, box: dict[str, Path], trusted: bool
                 ) -> tuple[subprocess.CompletedProcess[str], Path]:
    path = _write(_recipe_doc(location, value), box["work"] / f"r-{len(value)}.yaml")
    args = [str(path), *(["--trust"] if trusted else [])]
    return invoke_cli("plan", *args, "--json", check=False, env=_env(box)), path


def _planned(result: subprocess.CompletedProcess[str],
             benign_run: subprocess.CompletedProcess[str], benign: dict[str, Any] | None,
             location: Location, value: str, kind: str, trusted: bool
             ) -> tuple[list[str], bool]:
    """The problems of one `sm121 plan` of the hostile file, and whether it planned (then the
    deeper commands run too): a refusal's form, or the plan read as its consumers read it."""
    if result.returncode != 0:
        found = _refusal_problems(result, location, benign_run.returncode != 0)
    else:
        found = _plan_problems(json.loads(result.stdout), benign, value, kind, trusted)
    return [f"(trust={trusted}) {p}" for p in found], result.returncode == 0


@pytest.mark.parametrize("kind", list(HOSTILE))
@pytest.mark.parametrize("location", RECIPE_LOCATIONS, ids=lambda loc: loc.label)
def test_recipe_string_field(location: Location, kind: str, sandbox: dict[str, Path]) -> None:
    value = _value(kind, sandbox)
    benign_runs = {t: _recipe_plan(location, BENIGN, sandbox, t)[0] for t in (False, True)}
    benign = json.loads(benign_runs[True].stdout) if benign_runs[True].returncode == 0 else None
    problems: list[str] = []
    for trusted in (False, True):
        result, path = _recipe_plan(location, value, sandbox, trusted)
        found, planned = _planned(result, benign_runs[trusted], benign, location, value, kind,
                                  trusted)
        problems += found
        if planned and location.label in ("model.path", "model.hf_id", "model.revision") and not trusted:
            problems += _staged_problems(path, value, kind, sandbox)
        if kind in DISPLAY_INPUTS:  # the plan as a person reads it (or its refusal)
            shown = invoke_cli("plan", str(path), *(["--trust"] if trusted else []),
                               check=False, env=_env(sandbox))
            problems += [f"(trust={trusted}, human) {p}" for p in _display_problems(shown)]
    problems += _victims_untouched(sandbox)
    assert not problems, f"{location.label} = {kind}:\n  " + "\n  ".join(problems)


def _staged_problems(recipe: Path, value: str, kind: str, box: dict[str, Path]) -> list[str]:
    """`sm121 stage` of a recipe that planned without trust, onto this machine as a node."""
    cluster = _write(_cluster_base(box), box["work"] / "stage-cluster.yaml")
    with processes_started() as started:
        result = invoke_cli("stage", str(recipe), "--cluster", str(cluster), "--from",
                            str(box["model"]), check=False, env=_env(box))
    problems = _process_problems(started, value, kind)
    if "Traceback" in result.stdout + result.stderr:
        problems.append("stage printed a traceback")
    return problems


@pytest.mark.parametrize("kind", list(HOSTILE))
@pytest.mark.parametrize("location", CLUSTER_LOCATIONS, ids=lambda loc: loc.label)
def test_cluster_string_field(location: Location, kind: str, sandbox: dict[str, Path]) -> None:
    value = _value(kind, sandbox)
    benign_path = _write(_cluster_doc(location, BENIGN, sandbox), sandbox["work"] / "b.yaml")
    benign_runs = {t: invoke_cli("plan", "tiny-cpu", "--cluster", str(benign_path),
                                 *(["--trust"] if t else []), "--json", check=False,
                                 env=_env(sandbox)) for t in (False, True)}
    benign = json.loads(benign_runs[True].stdout) if benign_runs[True].returncode == 0 else None
    path = _write(_cluster_doc(location, value, sandbox), sandbox["work"] / "c.yaml")
    problems: list[str] = []
    for trusted in (False, True):
        flags = ["--trust"] if trusted else []
        result = invoke_cli("plan", "tiny-cpu", "--cluster", str(path), *flags, "--json",
                            check=False, env=_env(sandbox))
        found, planned = _planned(result, benign_runs[trusted], benign, location, value, kind,
                                  trusted)
        problems += found
        if planned and not trusted:
            with processes_started() as started:
                check = invoke_cli("cluster", "check", str(path), check=False,
                                   env=_env(sandbox))
            problems += _process_problems(started, value, kind)
            if "Traceback" in check.stdout + check.stderr:
                problems.append("cluster check printed a traceback")
            if kind in DISPLAY_INPUTS:
                problems += [f"(cluster check) {p}" for p in _display_problems(check)]
        if kind in DISPLAY_INPUTS:
            shown = invoke_cli("plan", "tiny-cpu", "--cluster", str(path), *flags,
                               check=False, env=_env(sandbox))
            problems += [f"(trust={trusted}, human) {p}" for p in _display_problems(shown)]
    problems += _victims_untouched(sandbox)
    assert not problems, f"{location.label} = {kind}:\n  " + "\n  ".join(problems)


def test_the_corpus_covers_both_schemas() -> None:
    """The count the closing note gives, and a floor: a schema walk that found nothing would
    make every case above pass vacuously."""
    assert len(RECIPE_LOCATIONS) >= 45 and len(CLUSTER_LOCATIONS) >= 15
    assert any(loc.steps[-1] == KEY for loc in RECIPE_LOCATIONS)
    labels = {loc.label for loc in RECIPE_LOCATIONS + CLUSTER_LOCATIONS}
    assert {"model.revision", "nodes[0].python", "ssh_config", "env.<key>"} <= labels


def test_the_shell_reader_tells_quoted_from_live() -> None:
    value = "$(touch M)"
    assert unquoted_at(f"echo {shlex.quote(value)}", value) == []
    assert unquoted_at(f"echo {value}", value) == [5]
    assert unquoted_at(f'echo "{value}"', value) == [6]
    assert unquoted_at("echo 'a'" + value, value) == [8]
