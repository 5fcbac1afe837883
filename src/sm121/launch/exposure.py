"""A warning for an engine that anyone on the network may use: it listens beyond loopback
and no API key is set for it.

Only a warning: a lab network behind a firewall is a fair place for an open engine. But
without a key, anyone who reaches the port can generate with it and read its /metrics, and
nothing said so (the gateway, which sm121 owns, refuses a public address without keys)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from sm121.addresses import is_loopback
from sm121.findings import Finding, Severity
from sm121.launch.readiness import host_port
from sm121.plan.model import ServePlan


def open_engine_warning(plan: ServePlan, env: Mapping[str, str] | None = None) -> Finding | None:
    """A finding when the engine listens beyond loopback with no key; None otherwise."""
    if is_loopback(plan.host):
        return None
    source = os.environ if env is None else env
    key_env = plan.adapter.api_key_env
    if source.get(key_env) or any(node.env.get(key_env) for node in plan.nodes):
        return None
    _, port = host_port(plan.base_url)
    return Finding(
        severity=Severity.WARNING, source="serve", field="--host",
        message=f"the engine listens on {plan.host}:{port} without an API key "
                f"({key_env} is not set): anyone who can reach port {port} of this "
                "machine can use it",
        fix=f"export {key_env}=<a long random key> before serving (the engine then "
            "requires it), or serve on 127.0.0.1 and put `sm121 gateway` with --api-key-file in front")
