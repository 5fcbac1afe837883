"""Gather a node's facts by running the host probe there: this machine, or over SSH.

The probe's source is piped to the node's Python (`python3 -`), so a node needs nothing of
sm121 installed. The request travels as one JSON argument, quoted by the transport."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from sm121.errors import Sm121Error
from sm121.hosts.python import interpreter
from sm121.hosts.transport import LocalTransport, Transport

PROBE_SOURCE = Path(__file__).resolve().parent / "probe.py"


class HostFacts(BaseModel):
    node: str
    hostname: str
    meminfo: dict[str, int]  # kB
    mounts: list[dict[str, str]]
    routes: list[dict[str, str]]
    interfaces: dict[str, dict[str, str]]
    rdma: dict[str, list[str]]
    paths: dict[str, dict[str, Any]]
    weights: dict[str, int]
    hosts: dict[str, str]
    env: dict[str, str]
    loadavg: list[float] = []  # 1, 5, 15 minutes
    tools: dict[str, bool] = {}  # rsync, tar, sha256sum: what `sm121 stage` copies with

    def gib(self, key: str) -> float:
        return self.meminfo.get(key, 0) / (1024 * 1024)


class ProbeRequest(BaseModel):
    root: str = "/"  # a sample tree in tests; / on a real node
    paths: dict[str, str] = {}  # label -> path to locate (HF cache, JIT cache)
    weights: list[str] = []  # weight files, directories or globs to mincore


def gather(node: str, transport: Transport, request: ProbeRequest) -> HostFacts:
    python = interpreter(isinstance(transport, LocalTransport), elsewhere="python3")
    result = transport.run([python, "-", request.model_dump_json()],
                           input=PROBE_SOURCE.read_text(), timeout=300)
    if not result.ok:
        raise Sm121Error(f"{node}: the host probe failed: {result.stderr.strip()[-500:]}",
                         "the node needs python3; check `ssh NODE python3 --version`")
    try:
        data = json.loads(result.stdout)
    except json.JSONDecodeError as exc:
        raise Sm121Error(f"{node}: the host probe printed no JSON: {result.stdout[-300:]}",
                         "check the node's shell start-up files for output") from exc
    return HostFacts(node=node, **data)
