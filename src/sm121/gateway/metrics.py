"""The gateway's own Prometheus metrics, in a registry per gateway (tests run several)."""

from __future__ import annotations

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

# Client-seen TTFT spans sub-millisecond (a fast upstream) to minutes (a 1M-token prefill).
_TTFT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
                 60, 120, 300, 600, 1200)
_WAIT_BUCKETS = (0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600)
_FRACTION_BUCKETS = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1.0)
CONTENT_TYPE = CONTENT_TYPE_LATEST
P = "sm121_gateway_"


class GatewayMetrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.requests = Counter(f"{P}requests", "Requests answered, by route and status.",
                                ["route", "status"], registry=r)
        self.tokens = Counter(f"{P}tokens", "Tokens reported by the upstream's usage "
                              "(streams: when the client asks include_usage).",
                              ["kind"], registry=r)
        self.api_tokens = Counter(f"{P}api_tokens", "Tokens reported by the upstream's usage, "
                                  "by protocol (chat, completions, messages, responses).",
                                  ["api", "kind"], registry=r)
        self.exact_count_skipped = Counter(
            f"{P}exact_count_skipped", "Prompts near a limit that could not be counted exactly "
            "(no chat form of the prompt, or /tokenize failed): the context check and the long "
            "lane used the byte estimate, and the engine checked the context itself.",
            ["api", "reason"], registry=r)
        self.stream_chunks = Counter(f"{P}stream_chunks", "SSE chunks passed to clients.",
                                     registry=r)
        self.stripped = Counter(f"{P}params_stripped", "Parameters stripped by the request "
                                "policy.", ["param"], registry=r)
        self.rejected = Counter(f"{P}params_rejected", "Requests rejected by the request "
                                "policy, by parameter.", ["param"], registry=r)
        self.refused = Counter(f"{P}refused", "Requests refused before the upstream saw them.",
                               ["reason"], registry=r)
        self.upstream_errors = Counter(f"{P}upstream_errors", "Upstream failures: unreachable, "
                                       "or died mid-stream.", ["kind"], registry=r)
        self.client_disconnects = Counter(f"{P}client_disconnects", "Clients that went away "
                                          "before the end (the upstream request was aborted).",
                                          registry=r)
        self.capture_failures = Counter(f"{P}capture_failures", "Captures abandoned after a "
                                        "write error (the requests were served).", registry=r)
        self.ttft = Histogram(f"{P}ttft_seconds", "Time to first byte as the client sees it, "
                              "from the request's arrival at the gateway.", ["route"],
                              buckets=_TTFT_BUCKETS, registry=r)
        self.queue_depth = Gauge(f"{P}queue_depth", "Requests waiting for admission, by lane.",
                                 ["lane"], registry=r)
        self.inflight = Gauge(f"{P}inflight", "Requests admitted and not finished, by lane "
                              "(long: long prefills not yet at their first token).", ["lane"],
                              registry=r)
        self.queue_wait = Histogram(f"{P}queue_wait_seconds", "Time spent waiting for "
                                    "admission, by lane.", ["lane"], buckets=_WAIT_BUCKETS,
                                    registry=r)
        self._locality(r)
        self._routing(r)
        # Children the request path uses, bound once (a label lookup takes a lock).
        self.prompt_tokens, self.completion_tokens = (self.tokens.labels("prompt"),
                                                      self.tokens.labels("completion"))
        self._ttft_by_route: dict[str, Histogram] = {}
        self._requests_by: dict[tuple[str, int], Counter] = {}

    def count_request(self, route: str, status: int) -> None:
        key = (route, status)
        child = self._requests_by.get(key)
        if child is None:  # known routes x HTTP statuses: bounded
            child = self._requests_by[key] = self.requests.labels(route, str(status))
        child.inc()

    def ttft_for(self, route: str) -> Histogram:
        child = self._ttft_by_route.get(route)
        if child is None:  # routes are the gateway's own few paths: bounded
            child = self._ttft_by_route[route] = self.ttft.labels(route)
        return child

    def _locality(self, r: CollectorRegistry) -> None:
        self.reuse = Gauge(f"{P}locality_reusable_fraction", "Share of the last prompt the "
                           "prefix cache could serve, per session.", ["session"], registry=r)
        self.reuse_all = Histogram(f"{P}locality_reusable_fraction_all", "Reusable share of "
                                   "each compared prompt.", buckets=_FRACTION_BUCKETS,
                                   registry=r)
        self.early = Counter(f"{P}locality_early_divergence", "Prompts that diverged early "
                             "from their session's previous one.", registry=r)
        self.locality_warnings = Counter(f"{P}locality_warnings", "Sessions warned for "
                                         "diverging early turn after turn.", registry=r)
        self.locality_skipped = Counter(f"{P}locality_skipped", "Analyses skipped (tokenize "
                                        "failed or too many pending).", ["reason"], registry=r)

    def _routing(self, r: CollectorRegistry) -> None:
        # Labelled by upstream name (a run id or URL): bounded by the configured upstreams.
        self.routed = Counter(f"{P}routed", "Generations sent to a replica, by how it was "
                              "chosen (affinity: the session's own replica; spill: another, "
                              "because its own was saturated or unhealthy; round_robin).",
                              ["upstream", "how"], registry=r)
        self.spills = Counter(f"{P}spills", "Generations that left their session's own "
                              "replica, by that replica and why.", ["upstream", "reason"],
                              registry=r)
        self.ejections = Counter(f"{P}replica_ejections", "Replicas taken out of the rotation, "
                                 "by reason: died, unreachable, error_rate, health, stalled.",
                                 ["upstream", "reason"], registry=r)
        self.readmissions = Counter(f"{P}replica_readmissions", "Ejected replicas taken back "
                                    "after their /health answered again.", ["upstream"],
                                    registry=r)
        self.healthy = Gauge(f"{P}replica_healthy", "1 while the replica is in the rotation.",
                             ["upstream"], registry=r)
        self.replica_inflight = Gauge(f"{P}replica_inflight", "Generations in flight per "
                                      "replica.", ["upstream"], registry=r)

    def render(self) -> bytes:
        return generate_latest(self.registry)
