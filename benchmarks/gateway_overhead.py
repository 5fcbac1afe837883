"""What a proxy costs an agent: added time to first token and streamed chunk throughput.

Three paths run side by side, interleaved round by round in one run, against the same
upstream: direct, through the sm121 gateway, and through LiteLLM's proxy (the one sparkrun
uses) configured to drop repetition_penalty. On a shared, noisy machine only figures from
the same run compare, so the output is differences and ratios against direct.

    .venv/bin/python benchmarks/gateway_overhead.py                  # the fast SSE emitter
    .venv/bin/python benchmarks/gateway_overhead.py --upstream-url http://127.0.0.1:8000 \\
        --model tiny --chunks 64 --levels 1,4                         # a real engine

Targets (issue 14): added TTFT p50 under 1 ms at 1 stream and under 5 ms at 16 streams; chunk
throughput at 64 streams at least 90% of direct. The machine's load average is printed and
stored beside the figures: on a shared machine a proxy's added latency includes its wait for a
CPU, and its CPU time per request and per chunk is the steadier measure of what it costs.
LiteLLM gets its own virtual environment on first use
(benchmarks/.venv-litellm): its pins must not touch the vLLM environment.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from sm121.free_ports import free_port
from sm121.hosts.processes import group_members
from sm121.protocols.sse import SSEParser

HERE = Path(__file__).resolve().parent
LITELLM_VENV = HERE / ".venv-litellm"
DIRECT, GATEWAY, LITELLM = "direct", "sm121-gateway", "litellm"
BASELINE = "sm121-baseline"  # the gateway from another checkout (--baseline-src), for before/after
# Both proxies check an API key, as they would in front of a shared engine; direct ignores it.
BENCH_KEY = "sk-sm121-bench-only"
SETTLE_S = 0.5  # between trials, so one path's leftovers do not land in the next one's


@dataclass
class Samples:
    ttft_s: list[float] = field(default_factory=list)
    events: int = 0
    seconds: float = 0.0
    errors: int = 0
    cpu_s: float = 0.0  # CPU time the path's proxy process used (none for direct)

    def add(self, other: Samples) -> None:
        self.ttft_s += other.ttft_s
        self.events += other.events
        self.seconds += other.seconds
        self.errors += other.errors
        self.cpu_s += other.cpu_s

    @property
    def chunks_per_s(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    rank = q / 100 * (len(ordered) - 1)
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


# ---- the client -------------------------------------------------------------------------

async def one_stream(http: aiohttp.ClientSession, url: str, body: dict) -> tuple[float, int]:
    """(TTFT, SSE events with data) of one streamed request; TTFT ends at the first event."""
    started = time.perf_counter()
    ttft, events, parser = math.nan, 0, SSEParser()
    async with http.post(f"{url}/v1/chat/completions", json=body) as response:
        if response.status != 200:
            raise RuntimeError(f"{url}: {response.status} {(await response.text())[:200]}")
        async for chunk in response.content.iter_any():
            for event in parser.feed(chunk):
                if event.is_done:
                    continue
                if events == 0:
                    ttft = time.perf_counter() - started
                events += 1
    return ttft, events


async def trial(http: aiohttp.ClientSession, url: str, model: str, level: int, requests: int,
                chunks: int, extra: dict) -> Samples:
    """`level` concurrent streams, each sending `requests` requests back to back."""
    samples = Samples()

    async def worker() -> None:
        for _ in range(requests):
            body = {"model": model, "stream": True, "max_tokens": chunks,
                    "repetition_penalty": 1.1, **extra,
                    "messages": [{"role": "user", "content": f"bench {uuid.uuid4().hex}"}]}
            try:
                ttft, events = await one_stream(http, url, body)
            except (aiohttp.ClientError, RuntimeError) as exc:
                samples.errors += 1
                print(f"  error on {url}: {exc}", file=sys.stderr)
                continue
            samples.ttft_s.append(ttft)
            samples.events += events

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(level)))
    samples.seconds = time.perf_counter() - started
    return samples


def cpu_seconds(pgid: int | None) -> float:
    """CPU time used so far by a process group: on a machine shared with busy neighbours it
    is the steadiest measure of what a proxy costs, where wall-clock latency is not."""
    if pgid is None:
        return 0.0
    total = 0
    for pid in group_members(pgid):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


async def measure(paths: dict[str, str], pgids: dict[str, int | None], model: str,
                  levels: list[int], rounds: int, chunks: int, min_samples: int,
                  extra: dict) -> dict[int, dict[str, Samples]]:
    results: dict[int, dict[str, Samples]] = {}
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=600)
    headers = {"Authorization": f"Bearer {BENCH_KEY}"}
    async with aiohttp.ClientSession(connector=connector, timeout=timeout,
                                     headers=headers) as http:
        for url in paths.values():  # warm-up: connections, caches, LiteLLM's first-call setup
            await trial(http, url, model, 2, 2, min(chunks, 8), extra)
        for level in levels:
            requests = max(2, math.ceil(min_samples / level / rounds))
            per_path = {name: Samples() for name in paths}
            for round_no in range(rounds):
                order = list(paths)[round_no % len(paths):] + list(paths)[:round_no % len(paths)]
                for name in order:  # rotate who goes first, so drift hits every path alike
                    await asyncio.sleep(SETTLE_S)
                    cpu = cpu_seconds(pgids.get(name))
                    samples = await trial(http, paths[name], model, level, requests, chunks,
                                          extra)
                    samples.cpu_s = cpu_seconds(pgids.get(name)) - cpu
                    per_path[name].add(samples)
            results[level] = per_path
            print(f"  {level} streams done", file=sys.stderr)
    return results


# ---- the processes ----------------------------------------------------------------------

def spawn(argv: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    with open(log, "ab") as handle:
        return subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                env={**os.environ, **(env or {})})


def stop(process: subprocess.Popen) -> None:
    """By process group, never by name."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)


def wait_http(url: str, process: subprocess.Popen, log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{url} exited during start-up:\n{log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except urllib.error.HTTPError:
            return  # it answers (a 401 from a proxy that wants its key counts)
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"{url} did not answer in {timeout_s:.0f} s:\n{log.read_text()[-2000:]}")


def ensure_litellm() -> Path:
    binary = LITELLM_VENV / "bin" / "litellm"
    if not binary.exists():
        print("creating benchmarks/.venv-litellm for LiteLLM's proxy (once) ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(LITELLM_VENV)], check=True)
        subprocess.run([str(LITELLM_VENV / "bin" / "pip"), "install", "--quiet",
                        "litellm[proxy]"], check=True)
    return binary


def litellm_config(folder: Path, upstream: str, model: str) -> Path:
    """A pass-through model that drops repetition_penalty (LiteLLM's drop_params alone does
    not: it only drops parameters LiteLLM knows a provider lacks)."""
    config = {
        "model_list": [{"model_name": model, "litellm_params": {
            "model": f"hosted_vllm/{model}", "api_base": f"{upstream}/v1", "api_key": "none",
            "additional_drop_params": ["repetition_penalty"]}}],
        "litellm_settings": {"drop_params": True, "telemetry": False},
    }
    path = folder / "litellm.json"  # YAML is a superset of JSON
    path.write_text(json.dumps(config, indent=2))
    return path


def start_paths(args: argparse.Namespace, folder: Path
                ) -> tuple[dict[str, str], dict[str, int | None], list]:
    processes: list[subprocess.Popen] = []
    upstream = args.upstream_url
    if upstream is None:
        port = free_port()
        emitter = spawn([sys.executable, str(HERE / "fake_sse_upstream.py"), "--port",
                         str(port), "--chunks", str(args.chunks), "--interval-ms",
                         str(args.interval_ms)], folder / "emitter.log")
        processes.append(emitter)
        upstream = f"http://127.0.0.1:{port}"
        wait_http(f"{upstream}/v1/models", emitter, folder / "emitter.log", 60)
    paths = {DIRECT: upstream}
    pgids: dict[str, int | None] = {DIRECT: None}
    gateways = [(GATEWAY, {})]
    if args.baseline_src:
        gateways.append((BASELINE, {"PYTHONPATH": str(Path(args.baseline_src) / "src")}))
    for name, env in gateways:
        gw_port = free_port()
        gateway = spawn([sys.executable, "-m", "sm121.cli.main", "gateway", "--upstream",
                         upstream, "--recipe", "tiny-cpu", "--listen", f"127.0.0.1:{gw_port}",
                         "--max-inflight", "512"], folder / f"{name}.log",
                        env={"SM121_GATEWAY_API_KEYS": BENCH_KEY, **env})
        processes.append(gateway)
        paths[name] = f"http://127.0.0.1:{gw_port}"
        pgids[name] = gateway.pid
        wait_http(f"{paths[name]}/v1/models", gateway, folder / f"{name}.log", 60)
    if not args.no_litellm:
        ll_port = free_port()
        litellm = spawn([str(ensure_litellm()), "--config",
                         str(litellm_config(folder, upstream, args.model)), "--host",
                         "127.0.0.1", "--port", str(ll_port), "--num_workers", "1"],
                        folder / "litellm.log",
                        env={"LITELLM_LOG": "ERROR", "LITELLM_MASTER_KEY": BENCH_KEY})
        processes.append(litellm)
        paths[LITELLM] = f"http://127.0.0.1:{ll_port}"
        wait_http(f"{paths[LITELLM]}/health/liveliness", litellm, folder / "litellm.log", 300)
    if not args.no_litellm:
        pgids[LITELLM] = processes[-1].pid
    return paths, pgids, processes


# ---- the report -------------------------------------------------------------------------

def report(results: dict[int, dict[str, Samples]]) -> dict:
    rows = []
    for level, per_path in results.items():
        base = per_path[DIRECT]
        base50, base99 = percentile(base.ttft_s, 50), percentile(base.ttft_s, 99)
        for name, s in per_path.items():
            p50, p99 = percentile(s.ttft_s, 50), percentile(s.ttft_s, 99)
            rows.append({
                "streams": level, "path": name, "requests": len(s.ttft_s), "errors": s.errors,
                "ttft_p50_ms": 1000 * p50, "ttft_p99_ms": 1000 * p99,
                "added_p50_ms": 1000 * (p50 - base50), "added_p99_ms": 1000 * (p99 - base99),
                "chunks_per_s": s.chunks_per_s,
                "throughput_vs_direct": s.chunks_per_s / base.chunks_per_s,
                "proxy_cpu_ms_per_request": 1000 * s.cpu_s / max(len(s.ttft_s), 1),
                "proxy_cpu_us_per_chunk": 1e6 * s.cpu_s / max(s.events, 1),
            })
    return {"rows": rows}


def print_report(data: dict, args: argparse.Namespace) -> None:
    what = args.upstream_url or (f"fast SSE emitter ({args.chunks} chunks per stream, "
                                 f"{args.interval_ms:g} ms apart)")
    print(f"\ngateway overhead against {what}; {args.rounds} interleaved rounds")
    print(f"{'streams':>7} {'path':<14} {'reqs':>5} {'TTFT p50':>9} {'p99':>8} "
          f"{'added p50':>10} {'added p99':>10} {'chunks/s':>9} {'vs direct':>9} "
          f"{'proxy CPU/req':>13} {'/chunk':>8}")
    for r in data["rows"]:
        print(f"{r['streams']:>7} {r['path']:<14} {r['requests']:>5} {r['ttft_p50_ms']:>7.2f}ms "
              f"{r['ttft_p99_ms']:>6.2f}ms {r['added_p50_ms']:>+8.2f}ms {r['added_p99_ms']:>+8.2f}ms "
              f"{r['chunks_per_s']:>9.0f} {r['throughput_vs_direct']:>8.1%} "
              f"{r['proxy_cpu_ms_per_request']:>11.2f}ms {r['proxy_cpu_us_per_chunk']:>6.0f}us"
              + (f"  ({r['errors']} errors)" if r["errors"] else ""))
    print(f"\nload average (1, 5, 15 min) at start {_load(data['load_start'])}, "
          f"at end {_load(data['load_end'])}, on {os.cpu_count()} CPUs")
    print("targets for the sm121 gateway: added TTFT p50 < 1 ms at 1 stream, < 5 ms at 16; "
          ">= 90% of direct chunk throughput at 64 streams")
    for r in data["rows"]:
        if r["path"] != GATEWAY:
            continue
        bound = {1: 1.0, 16: 5.0}.get(r["streams"])
        if bound is not None:
            met = "met" if r["added_p50_ms"] < bound else "MISSED"
            print(f"  {r['streams']:>3} streams: added p50 {r['added_p50_ms']:+.2f} ms {met}")
        if r["streams"] == 64:
            met = "met" if r["throughput_vs_direct"] >= 0.9 else "MISSED"
            print(f"  {r['streams']:>3} streams: throughput {r['throughput_vs_direct']:.1%} {met}")


def _load(values: list[float]) -> str:
    return " / ".join(f"{v:.2f}" for v in values)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="1,16,64", help="concurrent streams, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chunks", type=int, default=50, help="chunks (max_tokens) per stream")
    parser.add_argument("--interval-ms", type=float, default=10.0,
                        help="emitter pace; 0 emits as fast as it can")
    parser.add_argument("--min-samples", type=int, default=60, help="TTFT samples per path")
    parser.add_argument("--upstream-url", help="a real engine instead of the emitter")
    parser.add_argument("--model", default="fake")
    parser.add_argument("--no-litellm", action="store_true")
    parser.add_argument("--baseline-src", help="also run the gateway of this checkout (its "
                        "src/ first on the path), for a before/after in the same run")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    # SIGTERM (a timeout, a supervisor) takes the Ctrl-C path, so the finally blocks stop the
    # gateways and emitters this started in their own sessions instead of leaving them behind.
    signal.signal(signal.SIGTERM, _interrupt)
    extra = {"ignore_eos": True} if args.upstream_url else {}
    load_start = list(os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="sm121-gw-bench-") as tmp:
        paths, pgids, processes = start_paths(args, Path(tmp))
        try:
            levels = [int(x) for x in args.levels.split(",")]
            results = asyncio.run(measure(paths, pgids, args.model, levels, args.rounds,
                                          args.chunks, args.min_samples, extra))
        finally:
            for process in reversed(processes):
                stop(process)
    data = report(results) | {"load_start": load_start, "load_end": list(os.getloadavg()),
                              "cpus": os.cpu_count()}
    print_report(data, args)
    if args.json:
        # No machine paths in a results file: the names only say what was compared.
        stored = vars(args) | {"json": args.json.name, "baseline_src": bool(args.baseline_src)}
        args.json.write_text(json.dumps({"args": stored, **data}, indent=2))


if __name__ == "__main__":
    main()
