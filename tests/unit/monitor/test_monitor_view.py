"""The rich view of a sample, and what top watches for a URL."""

from __future__ import annotations

import pytest
from rich.console import Console

from sm121.engines.metrics_snapshot import Snapshot
from sm121.errors import Sm121Error
from sm121.hosts.host_panel import host_panel
from sm121.monitor.engine import engine_panel
from sm121.monitor.targets import from_url
from sm121.monitor.view import render

RUNNING = 'vllm:num_requests_running{engine="0"} 3\nvllm:kv_cache_usage_perc{engine="0"} 0.5\n'


def _screen(view: str) -> str:
    panel = engine_panel(Snapshot.parse(RUNNING, 0.0), Snapshot.parse(RUNNING, 2.0))
    sample = {"time": "2026-01-01T00:00:00+00:00",
              "targets": [{"name": "run-1", "engine": panel, "gateway": None, "errors": []}],
              "hosts": [host_panel("spark1", {"MemAvailable": 2**20, "MemFree": 2**19},
                                   [0.5, 0.2, 0.1]) | {"age_s": 3.0}]}
    console = Console(record=True, width=200)
    console.print(render(sample, view, 2.0))
    return console.export_text()


def test_runs_view_shows_the_engine_and_nodes_view_the_hosts() -> None:
    runs = _screen("runs")
    assert "engine (last interval)" in runs and "run-1" in runs and "50.0" in runs
    nodes = _screen("nodes")
    assert "MemAvailable" in nodes and "spark1" in nodes and "1.00" in nodes


def test_url_targets() -> None:
    target = from_url("http://127.0.0.1:8000/v1")
    assert target.urls == ("http://127.0.0.1:8000",) and target.nodes[0].name == "local"
    assert from_url("http://spark1:8000").nodes == ()  # a remote URL: no host to probe
    with pytest.raises(Sm121Error):
        from_url("spark1:8000")
