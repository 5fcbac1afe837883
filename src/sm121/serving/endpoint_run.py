"""The sm121 run behind an endpoint, and what the run's own files say that the endpoint may
not: the KV pool its engine logged at boot (where its /metrics gives no block count, a
running engine's pool is not known from it), its engine args and the adapter's names for them.

`bench agents` (its prediction and verdict) and the gateway (session admission by working
set) read the pool here where the engine's /metrics does not say it. A run is found by its id,
or by the port of a URL that its engine or its gateway listens on."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from sm121.engines.adapter import EngineAdapter
from sm121.errors import Sm121Error
from sm121.launch import control
from sm121.plan.model import ServePlan
from sm121.recipes.schema import ArgValue
from sm121.runs.state import GATEWAY_NODE, RunInfo, load_plan

# Names of this machine: a run listens on 127.0.0.1, a user may write localhost.
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0"})


@dataclass(frozen=True)
class RunFacts:
    """What an sm121 run's plan and boot log say about its engine."""

    run_id: str
    engine_url: str  # the engine's own base URL (a gateway in front of it has its own)
    gateway_url: str | None
    adapter: EngineAdapter
    engine_args: dict[str, ArgValue] = field(default_factory=dict)
    pool_tokens: int | None = None  # the KV pool its boot log states; None: not logged (yet)

    @property
    def pool_source(self) -> str:
        return f"the boot log of run {self.run_id}"

    def is_gateway(self, url: str) -> bool:
        """URL is this run's gateway, not its engine."""
        return self.gateway_url is not None and _where(url) == _where(self.gateway_url)


def run_at(url: str) -> RunInfo | None:
    """The active run whose engine or gateway listens at URL's host and port (the newest, if
    more than one claims it); None when none does."""
    where = _where(url)
    if where is None:
        return None
    found = [r for r in control.active_runs()
             if where in (_where(r.base_url), _where(r.gateway_url))]
    return found[-1] if found else None


def endpoint_run(url: str, run_id: str | None = None) -> RunFacts | None:
    """The facts of run `run_id` (an id or unique prefix; an unknown one, or one without a
    readable plan, is an error), else of the active run serving URL; None when no run serves
    it (or the one that does has no readable plan)."""
    if run_id:
        return run_facts(control.resolve_run(run_id))
    run = run_at(url)
    try:
        return None if run is None else run_facts(run)
    except Sm121Error:  # a run found by its port only: without a readable plan, none
        return None


def run_facts(run: RunInfo) -> RunFacts:
    """A run's facts from its saved plan (engine args, the adapter) and its head engine's
    boot log (logged_pool_tokens)."""
    try:
        plan = ServePlan.model_validate(load_plan(run.directory))
    except (OSError, ValueError, Sm121Error) as exc:
        raise Sm121Error(f"run {run.run_id} has no readable plan: {exc}",
                         "give the pool instead: --pool-tokens N") from exc
    return RunFacts(run_id=run.run_id, engine_url=run.base_url, gateway_url=run.gateway_url,
                    adapter=plan.adapter, engine_args=dict(plan.engine_args),
                    pool_tokens=logged_pool_tokens(run, plan.adapter))


def logged_pool_tokens(run: RunInfo, adapter: EngineAdapter) -> int | None:
    """The KV pool the run's head engine logged, read through its adapter from the log as
    it is now (a supervised restart logs its new pool); a log on another node as the run
    recorded it at ready. None: not logged (yet)."""
    head = next((n for n in run.nodes if n.name != GATEWAY_NODE), None)
    tokens = None
    if head is not None and head.ssh is None and Path(head.log).is_file():
        tokens = adapter.parse_boot_log_file(Path(head.log)).kv_pool_tokens
    return tokens if tokens is not None else run.boot.kv_pool_tokens


def _where(url: str | None) -> tuple[str, int] | None:
    """(host, port) of a URL, every loopback name read as one; None for no URL."""
    if not url:
        return None
    try:
        parts = urlsplit(url if "://" in url else f"http://{url}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    return ("loopback" if host in _LOOPBACK else host), port
