"""`sm121 stage --what weights` over a real sshd on loopback: four "nodes" (127.0.0.2-5, each
with its own cache folder), a made-up model of a few shards. The copies go node to node over
ssh (rsync where installed, else tar), as a tree; a rerun copies nothing; a node missing part
of its copy gets only that part; a corrupted shard is caught by its checksum and copied
again."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import invoke_cli
from support.sshd import Sshd, sshd_available, start_sshd

from sm121.hosts.transport import LocalTransport, SshTransport
from sm121.models.tiny import ARCHITECTURE
from sm121.stage.check import stage_check
from sm121.stage.job import Job

pytestmark = [pytest.mark.integration, pytest.mark.own_engines]
SHARDS = {f"model-0000{i}-of-00003.safetensors": (1_000_000 + 250_000 * i) for i in range(1, 4)}
SNAPSHOT = "hub/models--sm121-local--toy/snapshots/local"


STANDIN = Path(__file__).resolve().parents[1] / "support" / "standin"


@pytest.fixture(scope="module")
def docker_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("standin-docker")


@pytest.fixture(scope="module")
def sshd4(tmp_path_factory: pytest.TempPathFactory, docker_root: Path) -> Iterator[Sshd]:
    """Four loopback nodes (the fan-out needs 4 to be a tree), whose sessions find the
    stand-in docker first on their PATH (there is no docker daemon on the testbed)."""
    if not sshd_available():
        pytest.skip("sshd is not installed (`make test` installs it via scripts/ensure-sshd.sh)")
    path = f"{STANDIN}:/usr/local/bin:/usr/bin:/bin"
    server = start_sshd(tmp_path_factory.mktemp("sshd4"), nodes=4,
                        extra_config=f"SetEnv PATH={path} STANDIN_DOCKER_ROOT={docker_root}\n")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A model folder (three shards of random bytes and a config) and a recipe serving it."""
    folder = tmp_path_factory.mktemp("models") / "toy"
    folder.mkdir()
    for name, size in SHARDS.items():
        (folder / name).write_bytes(os.urandom(size))
    # the tiny model's architecture: the doctor's memory plan reads it
    (folder / "config.json").write_text(json.dumps({**ARCHITECTURE, "model_type": "llama",
                                                    "dtype": "bfloat16"}))
    recipe = folder.parent / "toy.yaml"
    recipe.write_text(json.dumps({"name": "toy", "model": {"id": "toy", "source": "path",
                                                            "path": str(folder)}}))
    return folder, recipe


def cluster(sshd: Sshd, tmp_path: Path, count: int) -> Path:
    nodes = [{"name": f"spark{i + 1}", "fabric_ip": host,
              "hf_cache": str(tmp_path / f"node{i + 1}" / "hf")}
             for i, host in enumerate(sshd.hosts[:count])]
    return sshd.cluster_file(tmp_path / "cluster.yaml", nodes, tmp_path / "state")


def stage(recipe: Path, cluster_file: Path, *extra: str) -> dict:
    # --trust: the toy recipe's model folder lies outside sm121's model folder
    done = invoke_cli("stage", str(recipe), "--cluster", str(cluster_file), "--json", "--trust",
                      *extra)
    return json.loads(done.stdout)["weights"] | {"stderr": done.stderr}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def by_node(result: dict) -> dict[str, dict]:
    return {n["node"]: n for n in result["nodes"]}


def test_weights_reach_four_nodes_as_a_tree_verified_and_resumable(
        sshd4: Sshd, toy: tuple[Path, Path], tmp_path: Path) -> None:
    folder, recipe = toy
    file = cluster(sshd4, tmp_path, 4)
    model_bytes = sum(f.stat().st_size for f in folder.iterdir())

    first = stage(recipe, file)
    nodes = by_node(first)
    assert [n["status"] for n in first["nodes"]] == ["staged"] * 4, first
    # rsync where both ends have it (`make test` installs it), else tar over ssh
    assert {n["method"] for n in first["nodes"]} == {"rsync" if shutil.which("rsync") else "tar"}
    # the head: its own copy, and at most two over the network; a staged node sent the rest
    assert first["copies_sent"]["spark1"] <= 2
    assert sum(first["copies_sent"].values()) == 3
    assert first["bytes_sent"]["spark1"] <= 2.1 * model_bytes
    assert any(n["sender"] not in ("spark1", None) for n in first["nodes"])
    for i in range(1, 5):
        staged = tmp_path / f"node{i}" / "hf" / SNAPSHOT
        assert {p.name: digest(p) for p in staged.iterdir() if p.is_file()} == \
            {p.name: digest(p) for p in folder.iterdir()}
        manifest = json.loads((tmp_path / f"node{i}" / "hf" / "sm121-stage" /
                               "models--sm121-local--toy@local.json").read_text())
        assert manifest["weights"]["bytes"] == model_bytes
        assert manifest["weights"]["files"]["config.json"]["sha256"] == \
            digest(folder / "config.json")
    assert "stage" in first["stderr"] and "ETA" in first["stderr"]
    assert nodes["spark2"]["bytes_sent"] >= model_bytes * 0.9

    # A rerun copies nothing, and the source is not read again for its checksums.
    again = stage(recipe, file)
    assert [n["status"] for n in again["nodes"]] == ["already"] * 4
    assert again["source_read_for_sums"] == 0 and again["bytes_sent"] == {}

    # spark3 as a killed copy leaves it: one shard cut short, one missing.
    node3 = tmp_path / "node3" / "hf" / SNAPSHOT
    names = sorted(SHARDS)
    with open(node3 / names[1], "r+b") as shard:
        shard.truncate(SHARDS[names[1]] // 2)
    (node3 / names[2]).unlink()
    missing = SHARDS[names[1]] // 2 + SHARDS[names[2]]
    resumed = by_node(stage(recipe, file))
    assert resumed["spark3"]["status"] == "staged"
    assert missing * 0.9 <= resumed["spark3"]["bytes_sent"] < model_bytes
    assert {n: resumed[n]["status"] for n in ("spark1", "spark2", "spark4")} == \
        dict.fromkeys(("spark1", "spark2", "spark4"), "already")
    assert digest(node3 / names[2]) == digest(folder / names[2])

    # A flipped byte in a shard of spark4, size and mtime kept: a plain rerun trusts the
    # manifest; --verify checksums it, catches it and copies that shard again.
    shard4 = tmp_path / "node4" / "hf" / SNAPSHOT / names[0]
    info = shard4.stat()
    with open(shard4, "r+b") as shard:
        shard.seek(1000)
        byte = shard.read(1)
        shard.seek(1000)
        shard.write(bytes([byte[0] ^ 0xFF]))
    os.utime(shard4, ns=(info.st_atime_ns, info.st_mtime_ns))
    verified = by_node(stage(recipe, file, "--verify"))
    assert verified["spark4"]["status"] == "staged"
    assert verified["spark4"]["recopied"] == [names[0]]
    assert digest(shard4) == digest(folder / names[0])


def test_tar_over_ssh_where_rsync_is_not_used(sshd4: Sshd, toy: tuple[Path, Path],
                                              tmp_path: Path) -> None:
    folder, recipe = toy
    file = cluster(sshd4, tmp_path, 2)
    result = stage(recipe, file, "--via", "tar", "--from", str(folder))
    assert [n["method"] for n in result["nodes"]] == ["tar", "tar"]
    assert result["copies_sent"] == {"local": 2}
    for i in (1, 2):
        staged = tmp_path / f"node{i}" / "hf" / SNAPSHOT
        assert digest(staged / "config.json") == digest(folder / "config.json")
    shown = invoke_cli("stage", str(recipe), "--cluster", str(file), "--from", str(folder),
                       "--via", "tar", "--trust")  # the table a person reads
    assert "spark1" in shown.stdout and "already" in shown.stdout
    assert "full copies sent to other nodes: none" in shown.stdout


def test_a_copy_to_a_node_without_a_fabric_address_is_refused(
        sshd4: Sshd, toy: tuple[Path, Path], tmp_path: Path) -> None:
    _, recipe = toy
    nodes = [{"name": "spark1", "fabric_ip": sshd4.hosts[0],
              "hf_cache": str(tmp_path / "n1")}, {"name": "spark2",
                                                  "hf_cache": str(tmp_path / "n2")}]
    file = sshd4.cluster_file(tmp_path / "c.yaml", nodes, tmp_path / "state")
    untrusted = invoke_cli("stage", str(recipe), "--cluster", str(file), check=False)
    assert untrusted.returncode == 2 and "--trust" in untrusted.stderr
    assert not (tmp_path / "n1").exists()
    done = invoke_cli("stage", str(recipe), "--cluster", str(file), "--trust", check=False)
    assert done.returncode == 2
    assert "spark2: no fabric_ip" in done.stderr and "--link mgmt" in done.stderr
    assert not (tmp_path / "n2").exists()
    mgmt = invoke_cli("stage", str(recipe), "--cluster", str(file), "--link", "mgmt", "--json",
                      "--trust")
    assert by_node(json.loads(mgmt.stdout)["weights"])["spark2"]["status"] == "staged"


def test_a_stopped_remote_job_leaves_no_process(sshd4: Sshd, tmp_path: Path) -> None:
    transport = SshTransport(target=sshd4.hosts[1], config=str(sshd4.ssh_config))
    pid_file = tmp_path / "pid"
    job = Job(transport, f"sleep 300 & echo $! > {pid_file}; wait")
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        time.sleep(0.05)
    pid = int(pid_file.read_text())
    job.stop()
    for _ in range(100):
        if not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists() or \
        Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] == "Z"


def test_an_image_is_streamed_to_the_nodes_that_lack_its_id(
        sshd4: Sshd, docker_root: Path, tmp_path: Path) -> None:
    image, image_id = "vllm/vllm-openai:test", "sha256:" + "c0ffee" * 10 + "abcd"
    layers = os.urandom(300_000)
    for host in (sshd4.hosts[0], sshd4.hosts[2]):  # the head has it, and so has spark3
        state = docker_root / host
        state.mkdir(parents=True, exist_ok=True)
        entry = {"id": image_id, "size": len(layers)}
        (state / "images.json").write_text(json.dumps({image: entry, image_id: entry}))
        (state / image_id.replace(":", "_")).write_bytes(layers)
    recipe = tmp_path / "docker.yaml"
    recipe.write_text(json.dumps({"name": "dock", "model": {"id": "m", "source": "path",
                                                            "path": "/models/m"},
                                  "runtime": {"kind": "docker", "image": image}}))
    result = json.loads(invoke_cli("stage", str(recipe), "--cluster",
                                   str(cluster(sshd4, tmp_path, 4)), "--what", "image",
                                   "--json", "--trust").stdout)["image"]
    status = {n["node"]: n["status"] for n in result["nodes"]}
    assert status == {"spark1": "already", "spark2": "loaded", "spark3": "already",
                      "spark4": "loaded"}
    for host in (sshd4.hosts[1], sshd4.hosts[3]):
        (loaded,) = (docker_root / host / "loads.log").read_text().splitlines()
        assert loaded == f"{image_id} {image} {len(layers)}"
    assert not (docker_root / sshd4.hosts[2] / "loads.log").exists()
    assert all(n["bytes_sent"] > len(layers) for n in result["nodes"] if n["status"] == "loaded")
    assert sum(result["copies_sent"].values()) == 2


def test_serve_reads_the_staged_copy_and_stage_check_refuses_a_changed_one(
        sshd4: Sshd, toy: tuple[Path, Path], tmp_path: Path, sm121_home: Path) -> None:
    """The head's argv names its staged snapshot, not the recipe's path; once a shard changed
    since it was verified, the stage-check hook refuses the node and the argv falls back to
    the recipe's path (no engine boots here)."""
    folder, recipe = toy
    file = cluster(sshd4, tmp_path, 2)
    stage(recipe, file)
    # plan, doctor and cluster check read each node's staged manifest
    planned = json.loads(invoke_cli("plan", str(recipe), "--cluster", str(file), "--staged",
                                    "--trust", "--json").stdout)["staged"]
    assert "the staged copy" in planned["spark1"]["reads"]
    doctored = invoke_cli("doctor", "--recipe", str(recipe), "--cluster", str(file), "--json",
                          "--trust", check=False)
    assert doctored.stdout, doctored.stderr
    doctor = json.loads(doctored.stdout)
    for node in doctor["nodes"]:
        route = next(c for c in node["checks"] if c["check"] == "weights-route")
        assert route["summary"].startswith("reads weights locally: staged copy"), route
        assert any(c["check"] == "stage-copy" for c in node["checks"])
    checked = json.loads(invoke_cli("cluster", "check", str(file), "--recipe", str(recipe),
                                    "--json", "--trust", check=False).stdout)
    staged_rows = [c for c in checked if c["check"] == "staged"]
    assert len(staged_rows) == 2 and all(c["status"] == "ok" for c in staged_rows), staged_rows
    # A custom hook after stage-check refuses every serve, so nothing boots here: what the
    # launch would have run is in the run's argv.json.
    served = tmp_path / "served.yaml"
    served.write_text(json.dumps({
        "name": "toy-served", "model": {"id": "toy", "source": "path", "path": str(folder)},
        "runtime": {"kind": "native",
                    "command": ["python", "-m", "vllm.entrypoints.openai.api_server"]},
        "hooks": {"before_serve": ["stage-check", "refuse"],
                  "custom": {"refuse": "echo refused by the test; exit 1"}}}))
    staged = tmp_path / "node1" / "hf" / SNAPSHOT

    def serve() -> tuple[str, list[str]]:
        before = set((sm121_home / "runs").glob("*"))
        done = invoke_cli("serve", str(served), "--cluster", str(file), "--trust", check=False)
        assert done.returncode == 2, done.stdout + done.stderr
        (run_dir,) = set((sm121_home / "runs").glob("*")) - before
        return done.stderr, json.loads((run_dir / "argv.json").read_text())["spark1"]

    err, argv = serve()
    assert "stage-check on spark1: ok" in err and "refused by the test" in err
    assert str(staged) in argv and str(folder) not in argv  # the staged copy, not the path

    shard = staged / sorted(SHARDS)[0]
    shard.write_bytes(shard.read_bytes()[::-1])  # same size, new mtime
    err, argv = serve()
    assert "stage-check on spark1: failed" in err
    assert "does not match its verified checksums" in err and shard.name in err
    assert "changed since it was verified" in err
    assert str(folder) in argv and str(staged) not in argv  # back to the recipe's path

    # Told to: SM121_STAGE_CHECK=warn lets it pass (the finding stays in the hook's message).
    hf = str(tmp_path / "node1" / "hf")
    assert stage_check(LocalTransport(), hf, "models--sm121-local--toy", None)[0] == "failed"
    os.environ["SM121_STAGE_CHECK"] = "warn"
    try:
        status, message = stage_check(LocalTransport(), hf, "models--sm121-local--toy", None)
    finally:
        del os.environ["SM121_STAGE_CHECK"]
    assert status == "skipped" and "started anyway" in message
    stage(recipe, file)  # the changed shard is caught (its mtime moved) and copied again
    assert stage_check(LocalTransport(), hf, "models--sm121-local--toy", None)[0] == "ok"


def test_a_compile_cache_goes_only_to_nodes_of_the_same_key(
        sshd4: Sshd, toy: tuple[Path, Path], tmp_path: Path) -> None:
    """spark1 booted warm (its cache folder has files); spark2 has the same GPU, engine and
    image and receives the cache; spark3's interpreter imports another engine version, so
    its cache is never copied."""
    _, recipe = toy
    other = tmp_path / "other-python"
    other.write_text("#!/bin/sh\necho 9.9.9\n")
    other.chmod(0o755)
    nodes = [{"name": f"spark{i + 1}", "fabric_ip": host, "hf_cache": str(tmp_path / f"n{i}"),
              "compile_cache": str(tmp_path / f"c{i}")}
             for i, host in enumerate(sshd4.hosts[:3])]
    nodes[2]["python"] = str(other)
    file = sshd4.cluster_file(tmp_path / "c.yaml", nodes, tmp_path / "state")
    warm = tmp_path / "c0" / "torch_compile_cache" / "abc" / "rank_0_0"
    warm.mkdir(parents=True)
    (warm / "graph.py").write_text("compiled")
    (warm / "kernel.so").write_bytes(os.urandom(20_000))
    # --trust: spark3's python is the cluster file's own program (a trust item)
    result = json.loads(invoke_cli("stage", str(recipe), "--cluster", str(file), "--what",
                                   "cache", "--json", "--trust").stdout)["cache"]
    status = {n["node"]: n["status"] for n in result["nodes"]}
    assert status == {"spark1": "source", "spark2": "staged", "spark3": "mismatch"}
    received = tmp_path / "c1" / "torch_compile_cache" / "abc" / "rank_0_0" / "kernel.so"
    assert received.read_bytes() == (warm / "kernel.so").read_bytes()
    assert not (tmp_path / "c2").exists()
    mismatch = next(n for n in result["nodes"] if n["node"] == "spark3")
    assert "engine" in mismatch["error"] and "9.9.9" in mismatch["error"]
    for folder in ("c0", "c1"):
        key = json.loads((tmp_path / folder / "sm121-cache.json").read_text())["key"]
        assert key == result["key"]


def test_an_hf_model_is_staged_at_its_commit_without_reading_its_lfs_blobs(
        sshd4: Sshd, tmp_path: Path) -> None:
    """The head's HF cache holds the model (snapshot symlinks into blobs named by sha256): the
    head's copy is already in place, spark2 gets the snapshot and a `main` ref naming the
    commit, and only the small non-LFS file is read for a checksum."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "node1" / "hf" / "hub" / "models--org--toy"
    (repo / "blobs").mkdir(parents=True)
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    shard = os.urandom(600_000)
    for name, data, blob in (("model.safetensors", shard, hashlib.sha256(shard).hexdigest()),
                             ("config.json", b"{}", "9e26dfeeb6e641a33dae4961196235bdb965b21b")):
        (repo / "blobs" / blob).write_bytes(data)
        (repo / "snapshots" / commit / name).symlink_to(f"../../blobs/{blob}")
    recipe = tmp_path / "hf.yaml"
    recipe.write_text(json.dumps({"name": "hf-toy", "model": {"id": "toy", "hf_id": "org/toy"}}))
    result = stage(recipe, cluster(sshd4, tmp_path, 2))
    nodes = by_node(result)
    assert result["revision"] == commit and result["source_read_for_sums"] == 2
    assert nodes["spark1"]["method"] == "none" and nodes["spark2"]["status"] == "staged"
    copy = tmp_path / "node2" / "hf" / "hub" / "models--org--toy"
    assert (copy / "snapshots" / commit / "model.safetensors").read_bytes() == shard
    assert (copy / "refs" / "main").read_text() == commit
