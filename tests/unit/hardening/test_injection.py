"""The injection suite: every vector a stranger's recipe or cluster file could carry, given to
`sm121 plan` (the real command, in process). Each is refused with an error that names what is
wrong, and no marker file appears: nothing ran.

The vectors are data (VECTORS), so the count in the closing note is the count of this table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from sm121.cli.main import app
from sm121.errors import Sm121Error

MARK = "@MARK@"  # replaced by the test's marker path
TOUCH = f"touch {MARK}"


@dataclass(frozen=True)
class Vector:
    id: str
    recipe: dict[str, Any] = field(default_factory=dict)  # merged into a plain foreign recipe
    cluster: dict[str, Any] | None = None  # merged into a one-node cluster file (tiny-cpu then)
    node: dict[str, Any] | None = None  # merged into that cluster's node
    sets: tuple[str, ...] = ()
    recipe_arg: str | None = None  # the recipe argument itself, instead of a file
    refused_for: str = ""  # words the error must hold


DOCKER = {"runtime": {"kind": "docker", "image": "example/engine:1"}}
VECTORS = [
    Vector("recipe name: shell", {"name": f'x"; {TOUCH}; echo "'}, refused_for="not a valid name"),
    Vector("recipe name: $()", {"name": f"$({TOUCH})"}, refused_for="not a valid name"),
    Vector("recipe name: ../../x", {"name": "../../x"}, refused_for="not a valid name"),
    Vector("recipe argument: ../../x", recipe_arg="../../x", refused_for="neither a recipe name"),
    Vector("profile name: shell", {"profiles": {f"a; {TOUCH}": {"purpose": "p"}}},
           refused_for="not an allowed profile name"),
    Vector("default_profile: $()", {"default_profile": f"$({TOUCH})"},
           refused_for="not an allowed profile name"),
    Vector("container_name: breaks out of the script's echo",
           {"runtime": {**DOCKER["runtime"],
                        "container_name": f'x"; fi; {TOUCH}; if false; then echo "'}},
           refused_for="not a valid name"),
    Vector("container_name: an option", {"runtime": {**DOCKER["runtime"], "container_name": "-d"}},
           refused_for="not a valid name"),
    Vector("runtime.command: sh -c", {"runtime": {"kind": "native", "command": ["sh", "-c", TOUCH]}},
           refused_for="runtime.command"),
    Vector("runtime.image: a stranger's image", DOCKER, refused_for="runtime.image"),
    Vector("mount: / as /host", {"runtime": {**DOCKER["runtime"],
                                             "mounts": [{"host": "/", "container": "/host"}]}},
           refused_for="exposes the host's /"),
    Vector("mount: out of the cache with ..",
           {"runtime": {**DOCKER["runtime"],
                        "mounts": [{"host": "~/.cache/../../", "container": "/h"}]}},
           refused_for="runtime.mounts"),
    Vector("env: LD_PRELOAD", {"env": {"LD_PRELOAD": "/tmp/evil.so"}}, refused_for="env.LD_PRELOAD"),
    Vector("env: LD_LIBRARY_PATH", {"env": {"LD_LIBRARY_PATH": "/tmp"}},
           refused_for="env.LD_LIBRARY_PATH"),
    Vector("env: PYTHONPATH", {"env": {"PYTHONPATH": "/tmp/evil"}}, refused_for="env.PYTHONPATH"),
    Vector("env: PATH", {"env": {"PATH": "/tmp/evil:/usr/bin"}}, refused_for="env.PATH"),
    Vector("profile env: LD_PRELOAD", {"profiles": {"p": {"purpose": "p", "env": {
        "LD_PRELOAD": "/tmp/evil.so"}}}, "default_profile": "p"}, refused_for="env.LD_PRELOAD"),
    Vector("args: trust-remote-code", {"args": {"trust-remote-code": True}},
           refused_for="args.trust-remote-code"),
    Vector("args: middleware", {"args": {"middleware": "evil.module"}}, refused_for="args.middleware"),
    Vector("hooks.custom", {"hooks": {"before_serve": ["pwn"], "custom": {"pwn": TOUCH}}},
           refused_for="hooks.custom.pwn"),
    Vector("args: api-key in clear", {"args": {"api-key": "sk-canary-1"}}, refused_for="VLLM_API_KEY"),
    Vector("args: hf-token in clear", {"args": {"hf-token": "hf_canary2"}}, refused_for="HF_TOKEN"),
    Vector("--set api-key", sets=("api-key=sk-canary-3",), refused_for="VLLM_API_KEY"),
    Vector("args: host", {"args": {"host": "0.0.0.0"}}, refused_for="sm121's own flag"),
    Vector("--set host", sets=("host=0.0.0.0",), refused_for="sm121's own flag"),
    Vector("node name: shell", node={"name": f"a; {TOUCH}"}, cluster={"head": f"a; {TOUCH}"},
           refused_for="not a valid name"),
    Vector("node name: ../../x", node={"name": "../../x"}, cluster={"head": "../../x"},
           refused_for="not a valid name"),
    Vector("ssh target: -oProxyCommand", node={"ssh": f"-oProxyCommand={TOUCH}"},
           refused_for="starts with '-'"),
    Vector("ssh target: a space then an option", node={"ssh": f"h -oProxyCommand={TOUCH}"},
           refused_for="whitespace"),
    Vector("ssh_user: -oProxyCommand", cluster={"ssh_user": f"-oProxyCommand={TOUCH}"},
           refused_for="starts with '-'"),
    Vector("fabric_if: shell", node={"fabric_if": f"lo; {TOUCH}"}, refused_for="not a valid name"),
    Vector("hcas: $()", node={"hcas": [f"$({TOUCH})"]}, refused_for="not a valid name"),
    Vector("fabric_ip: shell", node={"fabric_ip": f"10.0.0.1; {TOUCH}"},
           refused_for="does not appear to be an IPv4 or IPv6 address"),
    Vector("cluster name: $()", cluster={"name": f"$({TOUCH})"}, refused_for="not a valid name"),
]
# A model under sm121's own model folder: a path elsewhere would need --trust itself.
FOREIGN = {"name": "foreign", "model": {"id": "m", "source": "path", "path": "$SM121_HOME/models/m"}}


def _merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    return {**base, **extra}


def _marked(data: Any, mark: Path) -> Any:
    return yaml.safe_load(yaml.safe_dump(data).replace(MARK, str(mark)))


def _write(path: Path, data: Any, mark: Path) -> str:
    path.write_text(yaml.safe_dump(_marked(data, mark)))
    return str(path)


def plan_argv(vector: Vector, folder: Path) -> list[str]:
    """`sm121 plan ...` for a vector: its recipe file (or tiny-cpu for a cluster vector)."""
    mark = folder / "MARK"
    cluster_vector = vector.cluster is not None or vector.node is not None
    if vector.recipe_arg:
        argv = ["plan", vector.recipe_arg]
    elif cluster_vector:
        argv = ["plan", "tiny-cpu", "--profile", "agent"]
    else:
        argv = ["plan", _write(folder / "recipe.yaml", _merged(FOREIGN, vector.recipe), mark)]
    if cluster_vector:
        node = _merged({"name": "a", "ssh": "127.0.0.1"}, vector.node or {})
        cluster = _merged({"name": "c", "head": "a", "nodes": [node]}, vector.cluster or {})
        argv += ["--cluster", _write(folder / "cluster.yaml", cluster, mark)]
    for item in vector.sets:
        argv += ["--set", item]
    return argv


def run_plan(argv: list[str]) -> BaseException | None:
    """The real `plan` command in this process; the exception it ended with, if any."""
    result = CliRunner().invoke(app, argv, catch_exceptions=True)
    return result.exception if result.exit_code != 0 else None


@pytest.mark.parametrize("vector", VECTORS, ids=[v.id for v in VECTORS])
def test_plan_refuses_the_vector_and_nothing_runs(vector: Vector, tmp_path: Path) -> None:
    refused = run_plan(plan_argv(vector, tmp_path))
    assert isinstance(refused, Sm121Error), f"not refused: {refused!r}"
    assert vector.refused_for in str(refused), str(refused)
    assert "canary" not in str(refused)  # a refused secret is not echoed back
    assert not (tmp_path / "MARK").exists()


def test_the_base_recipe_and_cluster_plan_fine(tmp_path: Path) -> None:
    """The vectors are refused for their payload, not for the files around it."""
    assert run_plan(plan_argv(Vector("plain"), tmp_path)) is None
    assert run_plan(plan_argv(Vector("plain cluster", node={}), tmp_path)) is None


def test_trust_lets_a_foreign_recipe_plan_and_lists_what_it_allowed(tmp_path: Path) -> None:
    vector = next(v for v in VECTORS if v.id == "runtime.command: sh -c")
    argv = plan_argv(vector, tmp_path)
    result = CliRunner().invoke(app, [*argv, "--trust"])
    assert result.exit_code == 0, result.output
    assert "allowed by --trust: runtime.command: runs `sh -c 'touch" in result.output
    assert not (tmp_path / "MARK").exists()  # plan shows it; it never runs it
