"""A llama.cpp recipe of two nodes: sm121 serves llama.cpp on one node (its RPC backend is not
rendered), and says so once, alike, wherever the recipe is used: `plan`, `plan --cluster`,
`serve` on this machine and `serve --cluster` over a real sshd on loopback, each the same
message and exit status, before anything starts (no run recorded, nothing written on the
nodes: a one-node recipe served the same way writes its run under the cluster's state_dir
first). Boots nothing: the refusal is the recipe's validation."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from support import free_port, run_cli
from support.sshd import Sshd

from sm121.recipes.loader import load_recipe

pytestmark = [pytest.mark.integration, pytest.mark.own_engines]

REFUSAL = ("parallelism.nodes: 2 nodes, but sm121 serves llama.cpp on one node: llama.cpp "
           "spreads a model over machines only through its RPC backend")


def test_plan_and_serve_refuse_a_two_node_llama_cpp_recipe_alike_before_anything_starts(
        sshd: Sshd, tmp_path: Path, sm121_home: Path) -> None:
    data = load_recipe("tiny-llamacpp").recipe.model_dump(mode="json", exclude_defaults=True)
    data.update(name="tiny-llamacpp-2node", parallelism={"nodes": 2})
    recipe = tmp_path / "tiny-llamacpp-2node.yaml"
    recipe.write_text(yaml.safe_dump(data))
    state_dir = tmp_path / "nodes"  # where the nodes would keep their runs, over ssh
    nodes = [{"name": name, "fabric_if": "lo", "fabric_ip": "127.0.0.1", "hcas": [hca],
              "python": sys.executable} for name, hca in (("node-a", "roce-a0"),
                                                          ("node-b", "roce-b0"))]
    cluster = sshd.cluster_file(tmp_path / "cluster.yaml", nodes, state_dir,
                                master_port=free_port())
    port = str(free_port())
    calls = {"plan": ("plan", str(recipe)),
             "plan --cluster": ("plan", str(recipe), "--cluster", str(cluster)),
             "serve": ("serve", str(recipe), "--port", port),
             # Its ssh_config needs --trust to be used: the refusal comes first either way.
             "serve --cluster": ("serve", str(recipe), "--cluster", str(cluster), "--port",
                                 port),
             "serve --cluster --trust": ("serve", str(recipe), "--cluster", str(cluster),
                                         "--port", port, "--trust", "--supervise")}
    results = {name: run_cli(*args, check=False, timeout=120) for name, args in calls.items()}
    for name, result in results.items():
        assert result.returncode == 2, (name, result.stdout, result.stderr)
        assert REFUSAL in " ".join(result.stderr.split()), (name, result.stderr)
        assert "(1 error)" in result.stderr, (name, result.stderr)  # the engine's, alone
    assert len({r.stderr for r in results.values()}) == 1  # one message, word for word
    # Nothing started: no run here, nothing on the nodes, nothing in status.
    assert not list((sm121_home / "runs").glob("tiny-llamacpp-2node-*"))
    assert not state_dir.exists()
    status = json.loads(run_cli("status", "--json").stdout)
    assert "tiny-llamacpp-2node" not in json.dumps(status)
