"""A stranger's cluster file over the real sshd on loopback (issue 42): `sm121 serve R
--cluster C` with HF_TOKEN set and a node the user never trusted sends nothing and names the
host; `sm121 cluster check` with `UserKnownHostsFile` pointed at a file the user owns (the
review used ~/.bashrc; a stand-in here) and `StrictHostKeyChecking accept-new` refuses
without --trust, and with --trust ssh really does append a host key line to that file.

Failed on main: both (serve wrote HF_TOKEN into the node's start script; cluster check
appended the key line without --trust)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from support import free_port, run_cli
from support.sshd import Sshd

pytestmark = [pytest.mark.integration]

TOKEN = "hf_never_leaves_this_machine_4b1d"
RECIPE = {"name": "secret-tiny", "description": "the tiny model with a gated-repo token",
          "model": {"id": "tiny", "source": "tiny", "size_gb": 0.001},
          "engine": {"kind": "vllm"},
          "runtime": {"kind": "native",
                      "command": ["python", "-m", "vllm.entrypoints.openai.api_server"]},
          "args": {"max-model-len": 4096, "enforce-eager": True},
          "env": {"HF_TOKEN": "${HF_TOKEN}", "VLLM_CPU_KVCACHE_SPACE": "1"},
          "readiness": {"timeout_s": 30}}


def _nothing_holds_the_token(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            assert TOKEN not in path.read_text(errors="replace"), path


def test_serve_sends_no_secret_to_a_host_the_user_never_trusted(sshd: Sshd, tmp_path: Path,
                                                                sm121_home: Path) -> None:
    recipe = tmp_path / "secret-tiny.yaml"
    recipe.write_text(json.dumps(RECIPE))
    state = tmp_path / "nodes"
    cluster = sshd.cluster_file(tmp_path / "theirs.yaml",
                                [{"name": "node-a", "python": sys.executable}], state)
    runs_before = set((sm121_home / "runs").glob("*"))
    served = run_cli("serve", str(recipe), "--cluster", str(cluster), "--port",
                     str(free_port()), check=False, timeout=180, env={"HF_TOKEN": TOKEN})
    said = " ".join(served.stderr.split())
    assert served.returncode == 2, served.stdout + served.stderr
    assert f"nodes[0] (node-a).ssh: {sshd.hosts[0]} receives the secrets HF_TOKEN" in said
    assert "--trust" in said and TOKEN not in served.stdout + served.stderr
    assert not state.exists()  # no run folder, no start script: nothing reached the node
    assert set((sm121_home / "runs").glob("*")) == runs_before
    _nothing_holds_the_token(tmp_path)


def test_cluster_check_does_not_let_ssh_write_a_known_hosts_line_without_trust(
        sshd: Sshd, tmp_path: Path) -> None:
    bashrc = tmp_path / "bashrc"  # stands in for ~/.bashrc
    bashrc.write_text("export PATH=$HOME/bin:$PATH\n")
    config = tmp_path / "ssh_config"
    config.write_text(f"Host {sshd.hosts[0]}\n  Port {sshd.port}\n  User {sshd.user}\n"
                      f"  IdentityFile {sshd.folder / 'client_key'}\n  IdentitiesOnly yes\n"
                      f"  UserKnownHostsFile {bashrc}\n  StrictHostKeyChecking accept-new\n"
                      "  BatchMode yes\n  LogLevel ERROR\n")
    cluster = tmp_path / "theirs.yaml"
    cluster.write_text(json.dumps({
        "name": "theirs", "head": "node-a", "ssh_config": str(config),
        "state_dir": str(tmp_path / "nodes"),
        "nodes": [{"name": "node-a", "ssh": sshd.hosts[0], "python": sys.executable}]}))
    refused = run_cli("cluster", "check", str(cluster), "--port", str(free_port()),
                      check=False, timeout=120)
    said = " ".join(refused.stderr.split())
    assert refused.returncode == 2
    assert "UserKnownHostsFile" in said and "StrictHostKeyChecking accept-new" in said
    assert bashrc.read_text() == "export PATH=$HOME/bin:$PATH\n"
    # What the allow-list kept out: with --trust, ssh appends the node's key to the file.
    run_cli("cluster", "check", str(cluster), "--port", str(free_port()), "--trust",
            check=False, timeout=120)
    assert sshd.hosts[0] in bashrc.read_text().splitlines()[-1]
