"""The gateway's settings: one frozen value built by the CLI (or a test) and read everywhere."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from sm121.addresses import is_loopback
from sm121.errors import Sm121Error
from sm121.gateway.session_table import SessionSettings
from sm121.gateway.sessions import DEFAULT_SESSION_HEADER
from sm121.recipes.schema import RequestPolicy

DEFAULT_PORT = 8100
# The Anthropic API's own request limit (32 MB on Messages), so nothing Claude Code can send
# is refused here; a 1M-token history with Claude Code's tools is a few MB of JSON
# (docs/gateway-limits.md has the measurement and its command).
DEFAULT_MAX_BODY = 32 * 1024 * 1024
DEFAULT_LONG_PROMPT_TOKENS = 16384


@dataclass(frozen=True)
class LocalitySettings:
    enabled: bool = True
    block_size: int | None = None  # None: ask the upstream (vLLM's cache_config_info)
    early_fraction: float = 0.5  # "early": less than this share of the previous prompt reusable
    warn_after: int = 3  # consecutive early divergences before a session is warned about
    max_sessions: int = 512
    max_pending: int = 64  # analyses waiting for /tokenize; beyond this they are skipped


@dataclass(frozen=True)
class CaptureSettings:
    directory: Path | None = None  # None: no capture (the default; capture is opt-in)
    redact: bool = False


@dataclass(frozen=True)
class UpstreamSpec:
    """One engine behind the gateway, with what its recipe says about serving it: its
    request policy, its admission lanes and (when known) its context limit."""

    url: str
    name: str = ""  # the run id, or the URL; a metric label and a log name
    policy: RequestPolicy = field(default_factory=RequestPolicy)
    max_inflight: int = 64
    max_inflight_per_session: int | None = None
    long_prompt_tokens: int = DEFAULT_LONG_PROMPT_TOKENS
    long_lane: int = 1
    max_model_len: int | None = None  # None: ask the upstream (/v1/models)
    # The KV pool in tokens where the engine's /metrics does not say it (an engine or proxy
    # that gives no block count there): from the boot log of the sm121 run serving it, or given
    # (--pool-tokens, which then overrides: pool_overrides). Session admission reads it.
    pool_tokens: int | None = None
    pool_source: str | None = None  # said in the admission verdict: "the boot log of run X"
    pool_overrides: bool = False  # True: wins over the engine's /metrics (given by hand)

    def __post_init__(self) -> None:
        object.__setattr__(self, "url", self.url.rstrip("/"))
        if self.pool_tokens is not None and self.pool_tokens < 1:
            raise Sm121Error(f"the KV pool of {self.url} must be at least 1 token",
                             "example: --pool-tokens 392032")
        check_upstream_url(self.url)
        if self.long_lane < 1 or self.max_inflight < 1:
            raise Sm121Error("--long-lane and --max-inflight must be at least 1",
                             "K=1 lets one long prefill run at a time")
        if not self.name:
            object.__setattr__(self, "name", self.url)


def check_upstream_url(url: str) -> None:
    """Refuse, here and once, a URL the relay could not connect to: a spec that was built is
    one a replica can be made of (a bad port found later, inside the upstreams watch, killed
    it)."""
    example = "example: --upstream http://127.0.0.1:8000"
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise Sm121Error(f"upstream {url!r} is not an http(s) URL", example)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise Sm121Error(f"upstream {url!r} is not a valid URL: {exc}", example) from exc
    if not parts.hostname or port == 0:
        raise Sm121Error(f"upstream {url!r} names no host or port 0", example)
    if parts.username is not None or parts.password is not None or parts.query \
            or parts.fragment:
        raise Sm121Error(f"upstream {url!r} carries credentials, a query or a fragment",
                         "give scheme://host:port[/path] (the upstream's key travels in a "
                         "header, never in its URL)")


ROUTING_MODES = ("affinity", "round-robin")


@dataclass(frozen=True)
class RoutingSettings:
    """How requests for one model are spread over its replicas, and when a replica is
    taken out of (and back into) the rotation."""

    mode: str = "affinity"  # affinity: rendezvous hash of the session; round-robin: turns
    spill_queue_wait_s: float = 0.5  # a replica whose admission wait exceeds this is saturated
    health_interval_s: float = 1.0  # /health of every replica, and of ejected ones to re-admit
    health_timeout_s: float = 2.0
    error_window: int = 20  # recent outcomes kept per replica
    error_rate: float = 0.5  # eject above this share of errors (with at least min_errors)
    min_errors: int = 3
    readmit_after_s: float = 2.0  # an ejected replica stays out at least this long
    # A replica whose every connection is silent this long while requests wait on it has its
    # /health asked at once; no answer within the probe timeout ejects it and ends its
    # requests, so clients retry on a survivor instead of waiting on a hung engine forever.
    # Both are long on purpose: a loaded vLLM API server on the 2-core CPU testbed took up to
    # 3.5 s to answer /health (p99 0.82 s), and 0.5 s bounds ejected a live replica three
    # times in 15 s (docs/results/cpu-testbed/routing/README.md).
    stall_s: float = 5.0
    stall_probe_timeout_s: float = 5.0

    def __post_init__(self) -> None:
        if self.mode not in ROUTING_MODES:
            raise Sm121Error(f"routing {self.mode!r} is unknown",
                             f"choose one of: {', '.join(ROUTING_MODES)}")


@dataclass(frozen=True)
class GatewayConfig:
    upstream: str = ""  # one upstream; the fields below up to max_model_len are its settings
    upstreams: tuple[UpstreamSpec, ...] = ()  # several upstreams, each with its own settings
    registry: Path | None = None  # a file of upstreams the gateway watches (serve --gateway-join)
    routing: RoutingSettings = field(default_factory=RoutingSettings)
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    policy: RequestPolicy = field(default_factory=RequestPolicy)
    api_keys: tuple[str, ...] = ()
    upstream_api_key: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY
    max_inflight: int = 64
    max_inflight_per_session: int | None = None
    long_prompt_tokens: int = DEFAULT_LONG_PROMPT_TOKENS
    long_lane: int = 1  # K: long prefills in flight at once
    max_model_len: int | None = None  # None: ask the upstream (/v1/models)
    session_header: str = DEFAULT_SESSION_HEADER
    sessions: SessionSettings = field(default_factory=SessionSettings)  # admission by working set
    locality: LocalitySettings = field(default_factory=LocalitySettings)
    capture: CaptureSettings = field(default_factory=CaptureSettings)
    upstream_connect_timeout_s: float = 5.0
    # Host names besides loopback and the listen address, and web origins, that may reach
    # the gateway (gateway/browser_guard.py says why everything else is refused).
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.upstream:
            object.__setattr__(self, "upstreams", (self.single_upstream(self.upstream),
                                                   *self.upstreams))
        if not self.upstreams and self.registry is None:
            raise Sm121Error("the gateway needs at least one upstream",
                             "give --upstream URL (repeatable) or --runs RUN...|all")
        if not self.api_keys and not is_loopback(self.host):
            raise Sm121Error(
                f"refusing to listen on {self.host} without API keys",
                "listen on 127.0.0.1, or give keys with --api-key-file or SM121_GATEWAY_API_KEYS",
            )

    def single_upstream(self, url: str) -> UpstreamSpec:
        """An upstream given by URL alone takes the gateway-wide settings."""
        return UpstreamSpec(url=url, policy=self.policy, max_inflight=self.max_inflight,
                            max_inflight_per_session=self.max_inflight_per_session,
                            long_prompt_tokens=self.long_prompt_tokens, long_lane=self.long_lane,
                            max_model_len=self.max_model_len)

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def parse_listen(value: str) -> tuple[str, int]:
    """`127.0.0.1:8100`, `:8100` (loopback) or `[::1]:8100`."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise Sm121Error(f"--listen {value!r} is not HOST:PORT", "example: --listen 127.0.0.1:8100")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)
