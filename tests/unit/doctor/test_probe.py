"""The host probe on sample trees and on real files (real mincore)."""

from __future__ import annotations

import os
from pathlib import Path

from doctor_hosts import probe_tree

from sm121.hosts.facts import HostFacts
from sm121.hosts.probe import file_residency, resident


def test_meminfo_mounts_routes_and_devices_of_a_gb10_tree(head: HostFacts) -> None:
    assert round(head.gib("MemTotal"), 1) == 119.6
    assert round(head.gib("MemAvailable") - head.gib("MemFree"), 1) == 18.6
    assert any(m["fstype"] == "nfs4" for m in head.mounts)
    assert {"iface": "enP7s7", "destination": "0.0.0.0", "gateway": "192.168.88.1",
            "mask": "0.0.0.0"} in head.routes
    assert head.rdma == {"rocep1s0f0": ["enp1s0f0np0"], "rocep1s0f1": ["enp1s0f1np1"]}
    assert head.hosts == {"192.168.88.16": "192.168.88.16"}  # NFS servers, resolved
    assert head.paths["hf-cache"]["realpath"] == "/root/.cache/huggingface"


def test_asymmetric_worker_has_its_own_cx7_names(worker: HostFacts) -> None:
    assert set(worker.rdma) == {"roceP2p1s0f0", "roceP2p1s0f1"}
    assert "enp1s0f0np0" not in worker.interfaces


def _evict(path: Path) -> None:
    with path.open("rb") as handle:
        os.fsync(handle.fileno())
        os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def test_mincore_sees_a_file_enter_and_leave_the_page_cache(tmp_path: Path) -> None:
    shard = tmp_path / "model-00001-of-00001.safetensors"
    shard.write_bytes(os.urandom(4 << 20))
    _evict(shard)
    size, cold = file_residency(str(shard))
    shard.read_bytes()
    _, warm = file_residency(str(shard))
    assert size == 4 << 20
    assert cold < size // 2 and warm == size


def test_weights_directory_sums_its_safetensors(tmp_path: Path) -> None:
    for index in range(3):
        (tmp_path / f"model-{index}.safetensors").write_bytes(b"\0" * 8192 * (index + 1))
    (tmp_path / "config.json").write_text("{}")
    found = resident([str(tmp_path)])
    assert found["files"] == 3 and found["bytes"] == 8192 * 6
    facts = probe_tree("gb10-head", weights=[str(tmp_path / "*.safetensors")])
    assert facts.weights["files"] == 3
