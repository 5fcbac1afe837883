"""Multi-turn agent chats through one gateway in front of two replicas: prefix reuse per turn
and TTFT with session affinity against round-robin, and a replica killed mid-run.

Each agent session is an append-only chat (a long salted system prompt, then per turn the
previous reply and a new user message), as coding agents send. Prefix reuse per turn is the
engine's own count: usage.prompt_tokens_details.cached_tokens / prompt_tokens.

    # two runs serving the model `tiny` (the second one, e.g. a recipe copy with
    # `aliases: [tiny]`, may serve a name of its own besides)
    python benchmarks/routing_chat.py compare --runs RUN_A,RUN_B --out DIR
    python benchmarks/routing_chat.py failover --runs RUN_A,RUN_B --kill RUN_B \\
        --restart "sm121 serve RECIPE --profile agent --port PORT" --out DIR

compare: the same chats twice, through a gateway with --routing affinity and then with
--routing round-robin (fresh salts, so no run reuses the other's cache).
failover: chats through an affinity gateway; the engine of --kill is SIGKILLed mid-run (a
crash, not a clean stop); in-flight streams, the first successful turn of its sessions on the
survivor, and the gateway's ejection (polled every 0.1 s) appear in the report; --restart
boots it again and the report shows when the gateway re-admitted it. The chats go on for
--after-readmission-s after the re-admission, or after the ejection without --restart.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from sm121 import paths
from sm121.bench.cached import cached_share, counts_reported
from sm121.free_ports import free_port
from sm121.protocols.sse import SSEParser

SM121 = [sys.executable, "-m", "sm121.cli.main"]
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "lambda",
         "sigma", "omega", "tensor", "cache", "block", "prefill", "decode", "router", "replica",
         "session", "agent", "tool", "call", "patch", "diff", "test"]


@dataclass
class Turn:
    session: int
    turn: int
    started: float  # seconds since the chats began
    ended: float = 0.0
    ttft_s: float | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    upstream: str = ""
    outcome: str = "ok"  # ok | error_event | http_<status> | exception
    detail: str = ""

    @property
    def reuse(self) -> float | None:
        if not self.prompt_tokens or self.cached_tokens is None:
            return None
        return self.cached_tokens / self.prompt_tokens


@dataclass
class Chat:
    sessions: int = 4
    turns: int = 8
    system_words: int = 1600  # about 6,000 tokens with the tiny model's tokenizer
    user_words: int = 60  # about 220 tokens: a tool result or a short instruction per turn
    max_tokens: int = 24
    model: str = "tiny"
    repeat: bool = False  # start a new conversation after the last turn, until stopped
    turns_log: list[Turn] = field(default_factory=list)


def _text(rng_salt: str, words: int) -> str:
    seed = int(uuid.UUID(rng_salt).int % 1_000_003)
    return " ".join(WORDS[(seed + i * 7919) % len(WORDS)] for i in range(words))


async def one_turn(http: aiohttp.ClientSession, url: str, chat: Chat, session: int, turn: int,
                   messages: list[dict[str, str]], t0: float) -> tuple[Turn, str]:
    record = Turn(session, turn, time.perf_counter() - t0)
    body = {"model": chat.model, "messages": messages, "stream": True,
            "max_tokens": chat.max_tokens, "ignore_eos": True,
            "stream_options": {"include_usage": True}}
    reply, parser = [], SSEParser()
    started = time.perf_counter()
    try:
        async with http.post(f"{url}/v1/chat/completions", json=body,
                             headers={"X-Session-Id": f"agent-{session}"}) as response:
            record.upstream = response.headers.get("X-Sm121-Upstream", "")
            if response.status != 200:
                record.outcome, record.detail = f"http_{response.status}", \
                    (await response.text())[:300]
                return record, ""
            async for chunk in response.content.iter_any():
                for event in parser.feed(chunk):
                    if event.is_done:
                        continue
                    data = json.loads(event.data)
                    if "error" in data:
                        record.outcome = "error_event"
                        record.detail = str(data["error"].get("message"))[:300]
                        continue
                    for choice in data.get("choices") or []:
                        if record.ttft_s is None:
                            record.ttft_s = time.perf_counter() - started
                        reply.append((choice.get("delta") or {}).get("content") or "")
                    usage = data.get("usage")
                    if usage:
                        record.prompt_tokens = usage.get("prompt_tokens")
                        details = usage.get("prompt_tokens_details") or {}
                        record.cached_tokens = details.get("cached_tokens")
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        record.outcome, record.detail = "exception", repr(exc)[:300]
    record.ended = time.perf_counter() - t0
    return record, "".join(reply)


async def run_session(http: aiohttp.ClientSession, url: str, chat: Chat, session: int,
                      salt: str, t0: float, stop: asyncio.Event) -> None:
    """One conversation of chat.turns turns; with chat.repeat, new ones until `stop`."""
    while True:
        await conversation(http, url, chat, session, salt, t0, stop)
        if not chat.repeat or stop.is_set():
            return


async def conversation(http: aiohttp.ClientSession, url: str, chat: Chat, session: int,
                       salt: str, t0: float, stop: asyncio.Event) -> None:
    messages = [{"role": "system", "content": f"[{salt}] session {session}. "
                 + _text(salt, chat.system_words)}]
    for turn in range(chat.turns):
        if stop.is_set():
            return
        messages.append({"role": "user", "content": f"turn {turn}: "
                         + _text(str(uuid.uuid4()), chat.user_words)})
        record, reply = await one_turn(http, url, chat, session, turn, messages, t0)
        chat.turns_log.append(record)
        if record.outcome != "ok":
            messages.pop()  # the agent retries the same turn
            await asyncio.sleep(0.2)
            continue
        messages.append({"role": "assistant", "content": reply})


async def chats(url: str, chat: Chat, during: Any = None) -> float:
    """Run every session at once; `during(t0, stop)` runs beside them (the failover's killer)."""
    t0 = time.perf_counter()
    stop = asyncio.Event()
    timeout = aiohttp.ClientTimeout(total=900)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        salt = str(uuid.uuid4())
        tasks = [run_session(http, url, chat, s, f"{salt[:-4]}{s:04d}", t0, stop)
                 for s in range(chat.sessions)]
        if during is not None:
            tasks.append(during(t0, stop))
        await asyncio.gather(*tasks)
    return time.perf_counter() - t0


# ---- the gateway ------------------------------------------------------------------------

def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def start_gateway(runs: str, mode: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    with open(log, "ab") as handle:
        process = subprocess.Popen([*SM121, "gateway", "--runs", runs, "--routing", mode,
                                    "--listen", f"127.0.0.1:{port}"], stdout=handle,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            state = get_json(f"{url}/sm121/upstreams")
            if all(u["discovered"] for u in state["upstreams"]):
                return process, url
        except OSError:
            pass
        time.sleep(0.3)
    stop(process)
    raise SystemExit(f"the gateway did not discover its upstreams:\n{log.read_text()[-2000:]}")


def stop(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)
    except ProcessLookupError:
        pass


# ---- the report -------------------------------------------------------------------------

def pct(values: list[float], q: float) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    rank = q / 100 * (len(ordered) - 1)
    low, high = int(rank), min(int(rank) + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def reused(turn: Turn, reported: bool) -> float | None:
    """A turn's reuse as the bench reads it (cached.cached_share: a turn with no count, where
    others have one, cached nothing: vLLM leaves the count out where it is 0)."""
    return cached_share(turn.cached_tokens, turn.prompt_tokens, reported)


def summary(chat: Chat, wall_s: float, upstreams: dict[str, Any]) -> dict[str, Any]:
    ok = [t for t in chat.turns_log if t.outcome == "ok"]
    reported = counts_reported(t.cached_tokens for t in ok)
    later = [(t, r) for t in ok if t.turn > 0 and (r := reused(t, reported)) is not None]
    per_turn = {}
    for n in range(1, chat.turns):
        values = [r for t, r in later if t.turn == n]
        per_turn[n] = sum(values) / len(values) if values else None
    ttft = [t.ttft_s for t in ok if t.ttft_s is not None]
    ttft_later = [t.ttft_s for t, _ in later if t.ttft_s is not None]
    return {
        "turns_ok": len(ok), "turns_failed": len(chat.turns_log) - len(ok), "wall_s": wall_s,
        "reuse_mean_turn2on": sum(r for _, r in later) / len(later) if later else None,
        "reuse_min_turn2on": min((r for _, r in later), default=None),
        "reuse_per_turn": per_turn,
        "ttft_p50_s": pct(ttft, 50), "ttft_p95_s": pct(ttft, 95),
        "ttft_p50_turn2on_s": pct(ttft_later, 50), "ttft_p95_turn2on_s": pct(ttft_later, 95),
        "sessions_on_one_replica": sum(
            len({t.upstream for t in ok if t.session == s}) == 1 for s in range(chat.sessions)),
        "upstreams": upstreams,
    }


def compare(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    results = {}
    for mode in ("affinity", "round-robin"):
        process, url = start_gateway(args.runs, mode, folder / f"gateway-{mode}.log")
        try:
            chat = _chat(args)
            wall = asyncio.run(chats(url, chat))
            results[mode] = {"summary": summary(chat, wall, get_json(f"{url}/sm121/upstreams")),
                             "turns": [asdict(t) | {"reuse": t.reuse} for t in chat.turns_log]}
        finally:
            stop(process)
        s = results[mode]["summary"]
        print(f"{mode}: reuse turn 2+ mean {s['reuse_mean_turn2on']:.1%}, TTFT p95 "
              f"{s['ttft_p95_s']:.3f} s", file=sys.stderr)
    return results


def _chat(args: argparse.Namespace) -> Chat:
    return Chat(sessions=args.sessions, turns=args.turns, system_words=args.system_words,
                model=args.model)


def failover(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    process, url = start_gateway(args.runs, "affinity", folder / "gateway-failover.log")
    events: dict[str, Any] = {}

    async def killer(t0: float, stop_chats: asyncio.Event) -> None:
        state = await asyncio.to_thread(get_json, f"{url}/sm121/upstreams")
        victim = next(u["url"] for u in state["upstreams"] if u["name"] == args.kill)
        others = [u["url"] for u in state["upstreams"] if u["name"] != args.kill]
        survivors = asyncio.create_task(_health_latency(others, stop_chats))
        await asyncio.sleep(args.kill_after_s)
        pgid = int((paths.runs_dir() / args.kill / "engine.pid").read_text())
        os.killpg(pgid, signal.SIGKILL)
        killed = time.perf_counter()
        events["killed_at_s"] = killed - t0
        print(f"killed {args.kill} at {events['killed_at_s']:.1f} s", file=sys.stderr)
        port = asyncio.create_task(asyncio.to_thread(_port_refused_after, victim, killed))
        ejected, events["after_kill"] = await _wait_health(url, args.kill, False, 0.1, 300)
        if ejected is not None:
            events["ejected_at_s"] = ejected - t0
            print(f"the gateway ejected {args.kill} {ejected - killed:.2f} s after the kill",
                  file=sys.stderr)
        events["victim_port_refused_after_kill_s"] = await port
        if args.restart:
            log = open(folder / "restart.log", "ab")  # noqa: SIM115 (closed with the process)
            restart = subprocess.Popen(shlex.split(args.restart), stdout=log,
                                       stderr=subprocess.STDOUT, start_new_session=True)
            await asyncio.to_thread(restart.wait)
            log.close()
            events["restart_exit"] = restart.returncode
            if ejected is not None:  # healthy before its ejection is no re-admission
                back, state = await _wait_health(url, args.kill, True, 0.5, 600)
                if back is not None:
                    events["readmitted_at_s"], events["after_readmission"] = back - t0, state
        # Sessions go home again after a re-admission, or run on the survivor without one.
        await asyncio.sleep(args.after_readmission_s)
        stop_chats.set()
        events["survivors_health_latency"] = await survivors

    try:
        chat = _chat(args)
        chat.repeat = True
        wall = asyncio.run(chats(url, chat, killer))
        final = get_json(f"{url}/sm121/upstreams")
        metrics = urllib.request.urlopen(f"{url}/metrics", timeout=10).read().decode()
    finally:
        stop(process)
    return {"events": events, "summary": summary(chat, wall, final),
            "failover": _failover_facts(chat, events, args.kill),
            "routing_metrics": [line for line in metrics.splitlines()
                                if line.startswith(("sm121_gateway_replica_",
                                                    "sm121_gateway_routed", "sm121_gateway_spills"))],
            "turns": [asdict(t) | {"reuse": t.reuse} for t in chat.turns_log]}


def _port_refused_after(url: str, since: float, limit_s: float = 30.0) -> float | None:
    """Seconds from `since` until the killed engine's port refuses connections (tried every
    20 ms): until then the dying process still holds its sockets, its streams included."""
    parts = urllib.parse.urlsplit(url)
    while time.perf_counter() - since < limit_s:
        try:
            with socket.create_connection((parts.hostname, parts.port), timeout=0.2):
                pass
        except ConnectionRefusedError:
            return time.perf_counter() - since
        except OSError:
            pass
        time.sleep(0.02)
    return None


async def _health_latency(urls: list[str], stop: asyncio.Event) -> dict[str, Any]:
    """The survivors' /health answer time, every 0.1 s while the chats run: how long a live,
    loaded engine takes to answer it (what a health-based verdict must allow for)."""
    times: list[float] = []
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
        while not stop.is_set():
            for base in urls:
                started = time.perf_counter()
                try:
                    async with http.get(f"{base}/health") as response:
                        await response.read()
                    times.append(time.perf_counter() - started)
                except (aiohttp.ClientError, TimeoutError):
                    pass
            await asyncio.sleep(0.1)
    return {"samples": len(times), "p50_s": pct(times, 50), "p99_s": pct(times, 99),
            "max_s": max(times, default=None), "over_0_5_s": sum(t > 0.5 for t in times)}


async def _wait_health(url: str, name: str, healthy: bool, every_s: float, tries: int
                       ) -> tuple[float | None, dict[str, Any]]:
    """Poll the gateway's view of `name` until its health is `healthy`: the perf_counter
    time it was seen so (None if never, within tries x every_s), and the last view."""
    for _ in range(tries):
        state = await asyncio.to_thread(get_json, f"{url}/sm121/upstreams")
        if next(u for u in state["upstreams"] if u["name"] == name)["healthy"] == healthy:
            return time.perf_counter(), state
        await asyncio.sleep(every_s)
    return None, state


def _failover_facts(chat: Chat, events: dict[str, Any], victim: str) -> dict[str, Any]:
    killed = events.get("killed_at_s")
    if killed is None:
        return {}
    in_flight = [t for t in chat.turns_log if t.upstream == victim and t.started < killed
                 and t.ended >= killed]
    after = sorted((t for t in chat.turns_log if t.started >= killed and t.outcome == "ok"),
                   key=lambda t: t.ended)
    victims_sessions = {t.session for t in chat.turns_log if t.upstream == victim
                        and t.started < killed}
    first_ok = next((t for t in after if t.session in victims_sessions), None)
    ejected = events.get("ejected_at_s")
    return {
        "victim_port_refused_after_kill_s": events.get("victim_port_refused_after_kill_s"),
        "ejected_after_kill_s": ejected - killed if ejected is not None else None,
        "in_flight_on_victim": [{"session": t.session, "outcome": t.outcome,
                                 "ended_after_kill_s": t.ended - killed,
                                 "detail": t.detail} for t in in_flight],
        "victims_sessions": sorted(victims_sessions),
        "first_ok_turn_of_a_victim_session_after_kill_s": (first_ok.ended - killed
                                                           if first_ok else None),
        "turns_failed_after_kill": sum(t.outcome != "ok" for t in chat.turns_log
                                       if t.started >= killed),
    }


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("compare", "failover"))
    parser.add_argument("--runs", required=True, help="two run ids, comma-separated")
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--system-words", type=int, default=1600)
    parser.add_argument("--kill", help="failover: the run whose engine is killed")
    parser.add_argument("--kill-after-s", type=float, default=20.0)
    parser.add_argument("--after-readmission-s", type=float, default=15.0)
    parser.add_argument("--restart", help="failover: command that serves the killed run again")
    parser.add_argument("--out", type=Path, required=True, help="folder for the results JSON")
    args = parser.parse_args()
    # SIGTERM (a timeout, a supervisor) takes the Ctrl-C path, so the finally blocks stop the
    # gateways and emitters this started in their own sessions instead of leaving them behind.
    signal.signal(signal.SIGTERM, _interrupt)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sm121-routing-") as tmp:
        data = compare(args, Path(tmp)) if args.what == "compare" else failover(args, Path(tmp))
    load = os.getloadavg()
    out = args.out / f"{args.what}.json"
    out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()
                                        if k not in ("out", "restart")},
                               "load_average_at_end": load, **data}, indent=2))
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
