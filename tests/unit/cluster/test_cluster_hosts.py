"""The hosts a cluster file names (issue 42): a remote node that would receive the user's
secrets (serve) or weights (stage) is a trust item naming its address, the HostName an
ssh_config gives it included, unless the file lies under $SM121_HOME/clusters/; and the ssh
directives that write files or accept host keys need --trust. `sm121 plan` through the real
CLI shows the items (the serve and cluster check reproductions are in
tests/integration/test_cluster_trust_hosts.py, over the real sshd).

Failed on main: every test here but the first two (no host was a trust item;
UserKnownHostsFile and StrictHostKeyChecking accept-new were on the allow-list)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import invoke_cli

from sm121.cluster.trust import ssh_config_problem

RECIPE = {"name": "secret-tiny", "model": {"id": "tiny", "source": "tiny", "size_gb": 0.001},
          "engine": {"kind": "vllm"},
          "runtime": {"kind": "native",
                      "command": ["python", "-m", "vllm.entrypoints.openai.api_server"]},
          "args": {"max-model-len": 4096}, "env": {"HF_TOKEN": "${HF_TOKEN}"}}


def _files(folder: Path, ssh_config: str | None = None, env: dict | None = None
           ) -> tuple[Path, Path]:
    recipe = folder / "recipe.yaml"
    recipe.write_text(json.dumps({**RECIPE, "env": env if env is not None else RECIPE["env"]}))
    cluster = folder / "cluster.yaml"
    data = {"name": "c", "head": "n1", "nodes": [{"name": "n1", "ssh": "spark-a"}],
            "state_dir": str(folder / "state")}
    if ssh_config:
        config = folder / "ssh_config"
        config.write_text(ssh_config)
        data["ssh_config"] = str(config)
    cluster.write_text(json.dumps(data))
    return recipe, cluster


def _needs(recipe: Path, cluster: Path) -> list[str]:
    shown = invoke_cli("plan", str(recipe), "--cluster", str(cluster), "--json", "--trust")
    return json.loads(shown.stdout)["needs_trust"]


@pytest.mark.parametrize("line", ["IdentityFile ~/.ssh/id_ed25519", "StrictHostKeyChecking yes",
                                  "identityfile=%d/.ssh/id_rsa", "UpdateHostKeys no",
                                  "CheckHostIP no", "HashKnownHosts yes"])
def test_directives_that_neither_run_nor_write_need_no_trust(tmp_path: Path, line: str) -> None:
    config = tmp_path / "ssh_config"
    config.write_text(f"Host spark-a\n  HostName 10.0.0.5\n  {line}\n")
    assert ssh_config_problem(str(config)) is None


def test_a_secret_free_recipe_sends_nothing_to_name(tmp_path: Path, sm121_home: Path) -> None:
    recipe, cluster = _files(tmp_path, env={})
    assert _needs(recipe, cluster) == []


@pytest.mark.parametrize("line", ["UserKnownHostsFile ~/.bashrc",
                                  "StrictHostKeyChecking accept-new", "StrictHostKeyChecking no",
                                  "GlobalKnownHostsFile /etc/profile", "UpdateHostKeys yes",
                                  "CheckHostIP yes", "IdentityFile /etc/shadow",
                                  "IdentityFile ~/.ssh/../.aws/credentials",
                                  "ControlPath ~/.bashrc", "ControlMaster auto",
                                  "ControlPersist yes", "CertificateFile /tmp/cert"])
def test_directives_that_write_or_read_elsewhere_need_trust(tmp_path: Path,
                                                            sm121_home: Path,
                                                            line: str) -> None:
    recipe, cluster = _files(tmp_path, f"Host *\n  {line}\n", env={})
    refused = invoke_cli("plan", str(recipe), "--cluster", str(cluster), check=False)
    said = " ".join(refused.stderr.split())
    assert refused.returncode == 2 and line.split()[0] in said and "--trust" in said


def test_a_host_that_receives_secrets_is_named_with_its_hostname(tmp_path: Path,
                                                                 sm121_home: Path) -> None:
    recipe, cluster = _files(tmp_path, "Host spark-*\n  HostName %h.attacker.example\n"
                                       "Host *\n  HostName 10.9.9.9\n")
    refused = invoke_cli("plan", str(recipe), "--cluster", str(cluster), check=False)
    said = " ".join(refused.stderr.split())
    assert refused.returncode == 2
    assert "spark-a (HostName spark-a.attacker.example in" in said and "HF_TOKEN" in said
    (need,) = _needs(recipe, cluster)
    assert need.startswith("nodes[0] (n1).ssh: spark-a") and "receives the secrets HF_TOKEN" in need


def test_a_cluster_file_under_sm121_home_clusters_is_the_users_own(tmp_path: Path,
                                                                  sm121_home: Path) -> None:
    recipe, cluster = _files(tmp_path, "Host spark-a\n  HostName 10.0.0.5\n")
    assert len(_needs(recipe, cluster)) == 1
    own = sm121_home / "clusters"
    own.mkdir(exist_ok=True)
    mine = own / "mine.yaml"
    shutil.copy(cluster, mine)
    assert _needs(recipe, mine) == []
    printed = invoke_cli("plan", str(recipe), "--cluster", str(mine))  # no --trust needed
    assert "ssh spark-a (HostName 10.0.0.5)" in printed.stdout  # plan names the real host
    # A link into the folder is not a file the user put there.
    link = own / "link.yaml"
    link.symlink_to(cluster)
    assert len(_needs(recipe, link)) == 1


def test_stage_names_the_hosts_that_would_receive_the_weights(tmp_path: Path,
                                                              sm121_home: Path) -> None:
    recipe, cluster = _files(tmp_path, env={})
    refused = invoke_cli("stage", "tiny-cpu", "--cluster", str(cluster), check=False)
    said = " ".join(refused.stderr.split())
    assert refused.returncode == 2
    assert "nodes[0] (n1).ssh: spark-a receives the staged weights" in said
    assert not (tmp_path / "state").exists()
