"""Probe the sample /proc and /sys trees with the real probe."""

from __future__ import annotations

from pathlib import Path

from sm121.hosts.facts import HostFacts, ProbeRequest, gather
from sm121.hosts.transport import LocalTransport

HOSTS = Path(__file__).resolve().parents[2] / "fixtures" / "hosts"


def probe_tree(name: str, **request: object) -> HostFacts:
    paths = {"hf-cache": "~/.cache/huggingface", "jit-cache": "~/.cache/vllm"}
    return gather(name, LocalTransport(), ProbeRequest(root=str(HOSTS / name), paths=paths,
                                                       **request))  # type: ignore[arg-type]
