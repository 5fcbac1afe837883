"""`sm121 gateway`: run the agent gateway, and `sm121 gateway locality`: its per-session
prefix locality report."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import typer
from rich.table import Table
from rich.text import Text

from sm121.cli.output import console, err_console, print_json
from sm121.engines.client_sync import SyncEngineClient
from sm121.engines.engine_error import EngineError
from sm121.errors import Sm121Error
from sm121.gateway.api_keys import KEYS_ENV, UPSTREAM_KEY_ENV, load_api_keys
from sm121.gateway.config import (
    DEFAULT_LONG_PROMPT_TOKENS,
    DEFAULT_MAX_BODY,
    DEFAULT_PORT,
    CaptureSettings,
    GatewayConfig,
    LocalitySettings,
    RoutingSettings,
    UpstreamSpec,
    parse_listen,
)
from sm121.gateway.entry import LOG_FORMAT, ready_lines
from sm121.gateway.session_table import SessionSettings
from sm121.runs.state import RunInfo
from sm121.serving.endpoint_run import run_at
from sm121.serving.run_upstreams import given_pool, recipe_facts, spec_for_run, with_pool

CLIENT_KEY_ENV = "SM121_GATEWAY_API_KEY"  # the key `gateway locality` presents
URL_ENV = "SM121_GATEWAY_URL"

gateway_app = typer.Typer(help="The agent gateway: an OpenAI-compatible proxy with the "
                          "recipe's request policy, admission lanes, prefix locality watch, "
                          "capture and metrics.")


def register(app: typer.Typer) -> None:
    app.add_typer(gateway_app, name="gateway")


@gateway_app.callback(invoke_without_command=True)
def gateway(
    ctx: typer.Context,
    upstream: list[str] | None = typer.Option(None, "--upstream", help="An engine's base URL, "
                                              "e.g. http://127.0.0.1:8000 (repeatable; each "
                                              "takes --recipe's policy and limits)."),
    runs: list[str] | None = typer.Option(None, "--runs", help="Runs of `sm121 status` to "
                                          "route to, each with its own recipe's policy and "
                                          "limits: run ids (repeatable or comma-separated) "
                                          "or `all` (every running run)."),
    registry_file: Path | None = typer.Option(None, "--registry", help="Also route to the "
                                              "upstreams in this file, re-read when it "
                                              "changes (`sm121 serve --gateway` writes it; "
                                              "`serve --gateway-join RUN` adds to it)."),
    routing: str = typer.Option("affinity", "--routing", help="Replicas of one model: "
                                "`affinity` keeps a session on one replica (rendezvous hash), "
                                "`round-robin` takes turns (for comparison)."),
    recipe: str | None = typer.Option(None, "--recipe", help="Recipe whose request policy "
                                      "to apply to --upstream URLs (and whose max-num-seqs "
                                      "caps their concurrency)."),
    profile: str | None = typer.Option(None, "--profile", "-p", help="Profile of the recipe."),
    listen: str = typer.Option(f"127.0.0.1:{DEFAULT_PORT}", "--listen", help="HOST:PORT."),
    api_key_file: Path | None = typer.Option(None, "--api-key-file", help="Accepted API keys, "
                                             f"one per line (or ${KEYS_ENV}, comma-separated)."),
    max_inflight: int | None = typer.Option(None, "--max-inflight", help="Generations in "
                                            "flight (default: the recipe's max-num-seqs, or 64)."),
    per_session: int | None = typer.Option(None, "--max-inflight-per-session",
                                           help="Cap per session (default: none)."),
    long_prompt: int = typer.Option(DEFAULT_LONG_PROMPT_TOKENS, "--long-prompt-tokens",
                                    help="A prompt this long (tokens) takes the long lane."),
    long_lane: int = typer.Option(1, "--long-lane", help="K: long prefills in flight at once."),
    max_body_mb: float = typer.Option(DEFAULT_MAX_BODY / 2**20, "--max-body-mb",
                                      help="Largest request body, MiB (default: the Anthropic "
                                      "API's own 32 MB limit)."),
    block_size: int | None = typer.Option(None, "--block-size", help="KV block size for the "
                                          "locality watch (default: ask the engine)."),
    no_locality: bool = typer.Option(False, "--no-locality", help="Do not watch locality."),
    capture_dir: Path | None = typer.Option(None, "--capture", help="Capture raw requests and "
                                            "responses into this directory (off by default)."),
    redact: bool = typer.Option(False, "--redact", help="Redact text content in captures."),
    allowed_host: list[str] | None = typer.Option(None, "--allowed-host", help="A Host name "
                                                  "clients reach the gateway by, besides "
                                                  "loopback names and the listen address "
                                                  "(repeatable); other names get 421, which "
                                                  "stops DNS rebinding pages."),
    allow_origin: list[str] | None = typer.Option(None, "--allow-origin", help="A web page's "
                                                  "origin (https://app.example) allowed to "
                                                  "call the gateway (repeatable); requests "
                                                  "from any other page get 403."),
    sessions: str = typer.Option("auto", "--sessions", help="Session admission by working "
                                 "set: `auto` (on where every upstream reports its KV pool: "
                                 "the active sessions' last prompts plus growth must fit it, "
                                 "new sessions wait), `off`, or N active sessions per "
                                 "replica (docs/sessions.md)."),
    session_wait: float = typer.Option(120.0, "--session-wait", help="Seconds a new "
                                       "session's request is held (no byte sent) before it "
                                       "is told to retry (429, or 529 on Messages)."),
    session_idle: float = typer.Option(300.0, "--session-idle", help="Seconds without a "
                                       "turn after which a session leaves the active set "
                                       "(longer than an agent's tool step)."),
    pool_tokens: int | None = typer.Option(None, "--pool-tokens", min=1, help="The KV pool "
                                           "in tokens of each upstream given here, as its "
                                           "engine logged it (`KV cache size: N tokens`), for "
                                           "session admission: for an engine sm121 did not "
                                           "start whose /metrics says no pool. "
                                           "Default: the engine's /metrics, else the boot "
                                           "log of the sm121 run serving the URL."),
) -> None:
    """Run the gateway in front of an engine, until Ctrl-C or SIGTERM."""
    if ctx.invoked_subcommand is not None:
        return
    if not upstream and not runs and registry_file is None:
        raise Sm121Error("give the engines to proxy with --upstream URL or --runs RUN...|all",
                         "example: sm121 gateway --upstream http://127.0.0.1:8000 "
                         "--recipe tiny-cpu")
    policy, recipe_seqs = recipe_facts(recipe, profile)
    host, port = parse_listen(listen)
    specs = [with_pool(UpstreamSpec(url=url, policy=policy,
                                    max_inflight=max_inflight or recipe_seqs or 64,
                                    max_inflight_per_session=per_session,
                                    long_prompt_tokens=long_prompt, long_lane=long_lane),
                       None if pool_tokens else run_at(url)) for url in upstream or []]
    specs += [spec_for_run(run, long_prompt, long_lane) for run in _runs(runs or [])]
    specs = [given_pool(spec, pool_tokens) for spec in specs]
    config = GatewayConfig(
        upstreams=tuple(specs), registry=registry_file,
        routing=RoutingSettings(mode=routing), host=host, port=port, policy=policy,
        api_keys=load_api_keys(api_key_file, os.environ.get(KEYS_ENV, "")),
        upstream_api_key=os.environ.get(UPSTREAM_KEY_ENV),
        max_body_bytes=int(max_body_mb * 1024 * 1024),
        max_inflight=max_inflight or recipe_seqs or 64, max_inflight_per_session=per_session,
        long_prompt_tokens=long_prompt, long_lane=long_lane,
        locality=LocalitySettings(enabled=not no_locality, block_size=block_size),
        capture=CaptureSettings(directory=capture_dir, redact=redact),
        allowed_hosts=tuple(allowed_host or ()), allowed_origins=tuple(allow_origin or ()),
        sessions=SessionSettings(mode=sessions, wait_s=session_wait, idle_s=session_idle),
    )
    _run(config)


def _run(config: GatewayConfig) -> None:
    from sm121.gateway.app import serve_forever

    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)

    def ready() -> None:
        for line in ready_lines(config):
            err_console.print(line, highlight=False)

    serve_forever(config, on_ready=ready)


def _runs(names: list[str]) -> list[RunInfo]:
    from sm121.launch import control

    wanted = [n.strip() for name in names for n in name.split(",") if n.strip()]
    if wanted == ["all"]:
        found = [r for r in control.active_runs() if r.status == "ready"]
        if not found:
            raise Sm121Error("--runs all: no run is ready", "start one with `sm121 serve`")
        return found
    return [control.resolve_run(name) for name in wanted]


@gateway_app.command("locality")
def locality(
    url: str = typer.Option(f"http://127.0.0.1:{DEFAULT_PORT}", "--url", envvar=URL_ENV,
                            help="The running gateway."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Per session: how much of each prompt the prefix cache can reuse, where it diverged
    from the previous one, and which message or field changed."""
    report = _fetch_report(url.rstrip("/"), "/sm121/locality")
    if as_json:
        print_json(report)
        return
    sessions = report.get("sessions") or []
    if not sessions:
        console.print(f"no sessions yet (block size {report.get('block_size')})")
        return
    console.print(_locality_table(report))


def _fetch_report(url: str, path: str) -> dict[str, Any]:
    key = os.environ.get(CLIENT_KEY_ENV)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        return SyncEngineClient(url, headers).get_json(path)
    except EngineError as exc:
        if exc.status not in (None, 200):  # 200: an answer, but no JSON (not a gateway)
            hint = f"set {CLIENT_KEY_ENV}" if exc.status == 401 else "is it an sm121 gateway?"
            raise Sm121Error(f"{url} answered {exc.status}", hint) from exc
        raise Sm121Error(f"no gateway answering at {url}: {exc.message}",
                         f"start one with `sm121 gateway --upstream URL`, or pass --url "
                         f"(or ${URL_ENV})") from exc


@gateway_app.command("upstreams")
def upstreams(
    url: str = typer.Option(f"http://127.0.0.1:{DEFAULT_PORT}", "--url", envvar=URL_ENV,
                            help="The running gateway."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """The engines behind a gateway: models, health, load, and how requests were routed
    (affinity hits, spills, ejections, re-admissions)."""
    report = _fetch_report(url.rstrip("/"), "/sm121/upstreams")
    if as_json:
        print_json(report)
        return
    table = Table("upstream", "models", "healthy", "in flight", "queued", "affinity", "spilled in",
                  "spilled away", "round-robin", "ejections", "re-admissions",
                  title=f"upstreams (routing: {report.get('routing')})")
    table.columns[0].overflow = "fold"
    for u in report.get("upstreams") or []:
        counts = u.get("routing") or {}
        table.add_row(u["name"], ", ".join(u["models"]) or "-", "yes" if u["healthy"] else "NO",
                      f"{u['inflight']}/{u['capacity']}", str(u["queued"]),
                      *(str(counts.get(k, 0)) for k in ("affinity", "spill", "spilled_away",
                                                         "round_robin", "ejections",
                                                         "readmissions")))
    console.print(table)


@gateway_app.command("sessions")
def sessions_cmd(
    url: str = typer.Option(f"http://127.0.0.1:{DEFAULT_PORT}", "--url", envvar=URL_ENV,
                            help="The running gateway."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Session admission: whether it is on and why, each replica's KV pool and budget, and
    the active, waiting and idle sessions with their working sets."""
    report = _fetch_report(url.rstrip("/"), "/sm121/sessions")
    if as_json:
        print_json(report)
        return
    admission = report.get("admission") or {}
    console.print(Text("session admission ") + display(admission.get("why", "?"), 400))
    for r in report.get("replicas") or []:
        console.print(Text("  ") + display(r["name"]) + Text(
            f": {r['used']:,} of {r['capacity']:,} units (pool {r['pool_blocks'] or '-'} "
            f"blocks, reserve {r['reserve_blocks']:,})"))
    table = Table("state", "session", "replica", "tokens", "blocks", "in flight", "for (s)",
                  title="sessions")
    for a in report.get("active") or []:
        table.add_row("active", display(a["session"]), display(a["replica"]),
                      f"{a['tokens']:,}", str(a["blocks"] or "-"), str(a["inflight"]),
                      f"{a['active_s']:.0f}")
    for w in report.get("waiting") or []:
        table.add_row("waiting", display(w["session"]), "-", f"{w['tokens']:,}", "-",
                      str(w["requests"]), f"{w['waited_s']:.0f}")
    for i in report.get("idle") or []:
        table.add_row("idle", display(i["session"]), display(i["replica"]),
                      f"{i['tokens']:,}", "-", "0", f"{i['idle_since_s']:.0f}")
    console.print(table)


def display(value: object, limit: int = 80) -> Text:
    """A gateway's word as terminal text: control characters escaped, never markup, bounded
    (the gateway is a stranger to this terminal)."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(value))
    return Text(text if len(text) <= limit else text[:limit - 1] + "…")


def _locality_table(report: dict[str, Any]) -> Table:
    table = Table("session", "requests", "compared", "mean reuse", "last: diverged at",
                  "last: reusable", "last: changed", "early (streak)", "warnings",
                  title=f"prefix locality (block size {report.get('block_size')})")
    for s in report["sessions"]:
        last = s.get("last") or {}
        mean = s.get("mean_reusable_fraction")
        table.add_row(
            s["session"], str(s["requests"]), str(s["compared"]),
            f"{mean:.1%}" if mean is not None else "-",
            (f"token {last['first_divergence']:,} of {last['prompt_tokens']:,} "
             f"(block {last['first_block']})") if last else "-",
            f"{last['reusable_fraction']:.1%}" if last else "-",
            last.get("changed", "-") if last else "-",
            f"{s['early']} ({s['streak']})", str(s["warnings"]),
        )
    return table
