"""The cluster file's trust items and the checks of its strings at load: what needs --trust
(a node's python, an ssh_config that can run a program, a compile_cache outside ~/.cache),
what is refused outright, and what passes as it is."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sm121.cluster.spec import Cluster
from sm121.cluster.trust import cluster_needs, ssh_config_problem
from sm121.errors import Sm121Error
from sm121.safe_paths import under_root


def _cluster(node: dict[str, object] | None = None, **fields: object) -> Cluster:
    return Cluster.model_validate({"name": "c", "head": "n1",
                                   "nodes": [{"name": "n1", **(node or {})}], **fields})


def test_the_defaults_need_no_trust() -> None:
    assert cluster_needs(_cluster()) == []
    assert cluster_needs(_cluster({"python": sys.executable,
                                   "compile_cache": "~/.cache/vllm"})) == []


@pytest.mark.parametrize(("node", "field"), [
    ({"python": "/tmp/payload.sh"}, "python"),
    ({"python": "python3"}, "python"),
    ({"compile_cache": "~/.ssh"}, "compile_cache"),
    ({"compile_cache": "~/.cache"}, "compile_cache"),
    ({"compile_cache": "/etc/cron.d"}, "compile_cache"),
])
def test_programs_and_a_cache_filled_from_elsewhere_are_trust_items(
        node: dict[str, object], field: str) -> None:
    (need,) = cluster_needs(_cluster(node))
    assert need.startswith(f"nodes[0] (n1).{field}:")


@pytest.mark.parametrize("line", ["ProxyCommand nc %h %p", "proxycommand=sh", "LocalCommand x",
                                  "Match exec true", "Include other", "KnownHostsCommand x",
                                  "ProxyJump bastion", "LocalForward 1 h:2", "SendEnv HF_TOKEN"])
def test_an_ssh_config_off_the_allow_list_needs_trust(tmp_path: Path, line: str) -> None:
    config = tmp_path / "ssh_config"
    config.write_text(f"Host *\n  Port 22\n  {line}\n")
    problem = ssh_config_problem(str(config))
    assert problem is not None and line.replace("=", " ").split()[0] in problem
    (need,) = cluster_needs(_cluster(ssh_config=str(config)))
    assert need.startswith("ssh_config:")


def test_an_unreadable_ssh_config_needs_trust(tmp_path: Path) -> None:
    assert "cannot be read" in (ssh_config_problem(str(tmp_path / "missing")) or "")


@pytest.mark.parametrize(("node", "fields"), [
    ({"home": "/home/../etc"}, {}), ({"hf_cache": "~/../../etc"}, {}),
    ({"compile_cache": "relative/dir"}, {}), ({"python": "-c"}, {}),
    ({"python": "python3 -c 'x'"}, {}), ({"ssh": "-oProxyCommand=x"}, {}),
    ({"ssh": "user@-host"}, {}), ({"ssh": "us er@host"}, {}),
    ({}, {"ssh_user": "-l"}), ({}, {"ssh_config": "-oX"}), ({}, {"state_dir": "/a/../b"}),
    ({}, {"state_dir": "/a\nb"}),
])
def test_stranger_strings_are_refused_at_load(node: dict[str, object],
                                              fields: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        _cluster(node, **fields)


@pytest.mark.parametrize("parts", [("..",), ("a/../..",), ("/etc",), ("",), ("a\nb",),
                                   ("x/../../y",)])
def test_under_root_refuses_a_part_that_leaves_the_root(parts: tuple[str, ...]) -> None:
    with pytest.raises(Sm121Error, match="refused"):
        under_root("/data/hf", "hub", *parts)


def test_under_root_builds_the_normal_path() -> None:
    assert under_root("/data/hf/", "hub", "models--a--b", "snapshots", "abc") == \
        "/data/hf/hub/models--a--b/snapshots/abc"
