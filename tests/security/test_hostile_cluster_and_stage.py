"""Hostile cluster files and model folders through the real command line, as a user runs it
(issue 30, items 1 and 2): a revision that climbs out of the HF cache, a node's `python`
that is a payload, an ssh_config whose ProxyCommand runs a payload, a model folder with a
symlink out of it. Each is refused before anything is written or run, with an error that
names the field, the value and what is allowed; the payloads would touch a marker file.

Every test here failed on main before the fix (run once with main's sources first on the
path): main wrote the model folder's files to the victim folder, ran the payload python in
`cluster check`, ran the ProxyCommand in `cluster check`, `doctor`, `stage` and `engine
flags`, and copied the file a link named out of the model folder to the node.

Positive controls: with --trust a 40-hex revision stages, a real interpreter path in a
trusted cluster file runs its check, an ssh_config of plain connection settings needs no
trust, and a link that stays in the model folder is staged as the file it names."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from support import invoke_cli

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home of its own: the node's `~` (its default HF cache, ~/.cache) for a local node."""
    folder = tmp_path / "home"
    (folder / ".cache").mkdir(parents=True)
    return folder


def _cluster(tmp_path: Path, node: dict[str, object], **fields: object) -> Path:
    """A one-node cluster file; the node is this machine unless it names `ssh`."""
    path = tmp_path / "cluster.yaml"
    path.write_text(json.dumps({"name": "one", "head": "n1", "nodes": [{"name": "n1", **node}],
                                "state_dir": str(tmp_path / "state"), **fields}))
    return path


def _model(home: Path, name: str) -> tuple[Path, Path]:
    """A model folder under ~/.cache (a recipe may name it without --trust) and its recipe."""
    folder = home / ".cache" / name
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "llama"}')
    (folder / "authorized_keys").write_text("ssh-ed25519 AAAA attacker\n")
    return folder, home.parent / f"{name}.yaml"


def _write_recipe(path: Path, folder_name: str, revision: str | None = None) -> Path:
    model: dict[str, object] = {"id": "m", "source": "path", "path": f"~/.cache/{folder_name}"}
    if revision is not None:
        model["revision"] = revision
    path.write_text(json.dumps({"name": "evil", "model": model}))
    return path


def _payload(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "PWNED"
    script = tmp_path / "payload.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    return script, marker


def _stage(recipe: Path, cluster: Path, home: Path, *extra: str):
    return invoke_cli("stage", str(recipe), "--cluster", str(cluster), *extra, check=False,
                      env={"HOME": str(home)})


def test_a_revision_that_climbs_out_of_the_cache_is_refused_by_stage(
        tmp_path: Path, home: Path) -> None:
    """Failed on main: `stage` exited 0 and the victim folder held the model's files."""
    victim = tmp_path / "v"
    # Just enough `../` to climb from the snapshot folder to `/` (main capped a revision at
    # 128 characters, so the climb has to fit).
    snapshots = home / ".cache/huggingface/hub/models--sm121-local--evilmodel/snapshots/x"
    revision = "x/" + "../" * (len(snapshots.parts) - 1) + str(victim).lstrip("/")
    assert len(revision) <= 128
    _, recipe = _model(home, "evilmodel")
    _write_recipe(recipe, "evilmodel", revision)
    done = _stage(recipe, _cluster(tmp_path, {}), home)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "model.revision" in done.stderr and revision in done.stderr
    assert "no '/' and no '..'" in done.stderr
    assert not victim.exists()
    assert not (home / ".cache" / "huggingface").exists()


def test_a_revision_cannot_start_with_a_dash_or_hold_dot_dot(tmp_path: Path,
                                                              home: Path) -> None:
    """Failed on main: `a/../b`, `a..b` and `refs/pr/1` were accepted (main refused only `-x`
    and `..`), and `a/../b` staged into snapshots/b."""
    _, recipe = _model(home, "evilmodel")
    for revision in ("-x", "a/../b", "..", "a..b", "refs/pr/1"):
        _write_recipe(recipe, "evilmodel", revision)
        done = _stage(recipe, _cluster(tmp_path, {}), home)
        assert done.returncode == 2 and "model.revision" in done.stderr, revision
    assert not (home / ".cache" / "huggingface").exists()


def test_a_commit_revision_still_stages_with_trust(tmp_path: Path, home: Path) -> None:
    folder, recipe = _model(home, "goodmodel")
    _write_recipe(recipe, "goodmodel", COMMIT)
    done = _stage(recipe, _cluster(tmp_path, {}), home, "--trust", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    snapshot = (home / ".cache" / "huggingface" / "hub" / "models--sm121-local--goodmodel"
                / "snapshots" / COMMIT)
    assert (snapshot / "config.json").read_text() == (folder / "config.json").read_text()
    assert json.loads(done.stdout)["weights"]["revision"] == COMMIT


def test_a_cluster_python_payload_is_a_trust_item_and_never_runs(tmp_path: Path) -> None:
    """Failed on main: `plan` rendered the payload as argv[0] with nothing to trust, and
    `cluster check` ran it (the marker appeared); `serve` would have started it."""
    payload, marker = _payload(tmp_path)
    cluster = _cluster(tmp_path, {"python": str(payload)})
    planned = invoke_cli("plan", "tiny-cpu", "--cluster", str(cluster), check=False)
    assert planned.returncode == 2, planned.stdout + planned.stderr
    assert "nodes[0] (n1).python" in planned.stderr and str(payload) in planned.stderr
    assert "--trust" in planned.stderr
    for command in (["cluster", "check", str(cluster)],
                    ["doctor", "--cluster", str(cluster)],
                    ["serve", "tiny-cpu", "--cluster", str(cluster)],
                    ["engine", "flags", "tiny-cpu", "--cluster", str(cluster)],
                    ["stage", "tiny-cpu", "--cluster", str(cluster), "--what", "cache"]):
        done = invoke_cli(*command, check=False)
        assert done.returncode == 2 and "n1).python" in done.stderr, (command, done.stderr)
    assert not marker.exists()
    # With --trust the plan shows what would run: the payload is argv[0], listed, not run.
    trusted = json.loads(invoke_cli("plan", "tiny-cpu", "--cluster", str(cluster), "--trust",
                                    "--json").stdout)
    assert trusted["nodes"][0]["argv"][0] == str(payload)
    assert any("python" in need for need in trusted["needs_trust"])
    assert not marker.exists()


def test_a_real_interpreter_in_a_trusted_cluster_file_runs_its_check(tmp_path: Path) -> None:
    python = tmp_path / "venv-python"
    python.symlink_to(sys.executable)
    cluster = _cluster(tmp_path, {"python": str(python)})
    done = invoke_cli("cluster", "check", str(cluster), "--trust", "--json", check=False)
    rows = {r["check"]: r for r in json.loads(done.stdout)}
    assert rows["python"]["status"] == "ok" and str(python) in rows["python"]["detail"]
    # The interpreter running sm121 is the built-in default: no trust needed.
    default = _cluster(tmp_path, {"python": sys.executable})
    assert invoke_cli("plan", "tiny-cpu", "--cluster", str(default)).returncode == 0


def test_an_ssh_config_that_runs_a_command_is_refused_everywhere(tmp_path: Path) -> None:
    """Failed on main: `cluster check` (and doctor, stage, engine flags) ran ssh -F with the
    file, and its ProxyCommand touched the marker."""
    marker = tmp_path / "PWNED"
    config = tmp_path / "ssh_config"
    config.write_text(f"Host *\n  ProxyCommand sh -c 'touch {marker}'\n  BatchMode yes\n")
    cluster = _cluster(tmp_path, {"ssh": "h1"}, ssh_config=str(config))
    for command in (["plan", "tiny-cpu", "--cluster", str(cluster)],
                    ["cluster", "check", str(cluster)],
                    ["doctor", "--cluster", str(cluster)],
                    ["stage", "tiny-cpu", "--cluster", str(cluster)],
                    ["engine", "flags", "tiny-cpu", "--cluster", str(cluster)]):
        done = invoke_cli(*command, check=False)
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert "ssh_config" in done.stderr and "ProxyCommand" in done.stderr, command
        assert "--trust" in done.stderr, command
    assert not marker.exists()


def test_an_ssh_config_of_plain_settings_needs_no_trust(tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text("Host h1\n  HostName 127.0.0.2\n  Port 2222\n  User ops\n"
                      "  BatchMode yes\n  StrictHostKeyChecking yes\n")
    cluster = _cluster(tmp_path, {"ssh": "h1"}, ssh_config=str(config))
    planned = json.loads(invoke_cli("plan", "tiny-cpu", "--cluster", str(cluster),
                                    "--json").stdout)
    assert planned["needs_trust"] == [] and planned["nodes"][0]["ssh_config"] == str(config)


def test_a_symlink_out_of_the_model_folder_is_refused_by_stage(
        tmp_path: Path, home: Path) -> None:
    """Failed on main: rsync -L copied the file the link named (outside the model folder)
    into the node's snapshot."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "id_ed25519").write_text("PRIVATE KEY\n")
    folder, recipe = _model(home, "linkmodel")
    (folder / "tokenizer.json").symlink_to(outside / "id_ed25519")
    (folder / "extra").symlink_to(outside)
    _write_recipe(recipe, "linkmodel")
    done = _stage(recipe, _cluster(tmp_path, {}), home)
    assert done.returncode == 2, done.stdout + done.stderr
    message = " ".join(done.stderr.split())
    assert "tokenizer.json" in message and "through symlinks" in message
    assert str(folder) in message
    assert not (home / ".cache" / "huggingface").exists()  # nothing staged, not even a folder


def test_a_link_inside_the_model_folder_is_staged_as_its_file(
        tmp_path: Path, home: Path) -> None:
    folder, recipe = _model(home, "innermodel")
    (folder / "generation_config.json").symlink_to("config.json")
    _write_recipe(recipe, "innermodel")
    done = _stage(recipe, _cluster(tmp_path, {}), home, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    snapshot = home / ".cache" / "huggingface" / "hub" / "models--sm121-local--innermodel" \
        / "snapshots" / "local"
    copied = snapshot / "generation_config.json"
    assert copied.is_file() and not copied.is_symlink()
    assert copied.read_text() == (folder / "config.json").read_text()
    assert os.path.realpath(copied).startswith(str(snapshot))
