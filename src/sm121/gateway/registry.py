"""The upstreams file a running gateway watches, so that `sm121 serve ... --gateway-join RUN`
can attach a new engine to the gateway of RUN without restarting it.

Why a file and not an admin endpoint: the file lives in the gateway run's directory (0700),
so who may add an upstream is decided by the file system, with no new network surface and
no key to hand around. The writer resolves the recipe (policy, max-num-seqs) and stores the
result; the gateway only reads values. Writers hold an exclusive lock for the read-modify-
write, and replace the file atomically, so the gateway never reads half a file.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sm121.errors import Sm121Error
from sm121.file_lock import locked
from sm121.gateway.config import UpstreamSpec
from sm121.recipes.schema import RequestPolicy

log = logging.getLogger("sm121.gateway")
FILE_NAME = "gateway-upstreams.json"
POLL_S = 1.0


def spec_to_json(spec: UpstreamSpec) -> dict[str, Any]:
    data = asdict(spec)
    data["policy"] = spec.policy.model_dump(mode="json")
    return data


def spec_from_json(data: dict[str, Any]) -> UpstreamSpec:
    fields = dict(data)
    fields["policy"] = RequestPolicy.model_validate(fields.get("policy") or {})
    return UpstreamSpec(**fields)


def load(path: Path) -> tuple[UpstreamSpec, ...]:
    try:
        data = json.loads(path.read_text())
        return tuple(spec_from_json(item) for item in data["upstreams"])
    except FileNotFoundError:
        return ()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise Sm121Error(f"the gateway's upstreams file {path} is not readable: {exc}",
                         "it is written by `sm121 serve --gateway` and `--gateway-join`; "
                         "remove the bad entry or restart the gateway") from exc


def gateway_url(path: Path) -> str | None:
    """The URL of the gateway that watches this file, as its launcher recorded it."""
    try:
        url = json.loads(path.read_text()).get("gateway_url")
    except (OSError, ValueError, AttributeError):
        return None
    return url if isinstance(url, str) else None


def create(path: Path, url: str, specs: list[UpstreamSpec]) -> None:
    with locked(path):
        _write(path, specs, url)


def add(path: Path, spec: UpstreamSpec) -> None:
    """Add (or replace, by name) one upstream."""
    with locked(path):
        kept = [s for s in load(path) if s.name != spec.name]
        _write(path, [*kept, spec], gateway_url(path))


def remove(path: Path, name: str) -> None:
    with locked(path):
        _write(path, [s for s in load(path) if s.name != name], gateway_url(path))


def _write(path: Path, specs: list[UpstreamSpec], url: str | None) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps({"gateway_url": url,
                               "upstreams": [spec_to_json(s) for s in specs]}, indent=2))
    os.chmod(tmp, 0o600)
    tmp.replace(path)


async def watch(path: Path, apply: Callable[[tuple[UpstreamSpec, ...]], None]) -> None:
    """Apply the file's upstreams now and whenever it changes (checked every second: a stat,
    nothing on the request path)."""
    seen: tuple[int, int] | None = None
    while True:
        try:
            stat = path.stat()
            stamp = (stat.st_mtime_ns, stat.st_ino)
        except FileNotFoundError:
            stamp = (0, 0)
        if stamp != seen:
            seen = stamp
            try:
                apply(load(path))
            except Sm121Error as exc:
                log.error("%s (%s); keeping the upstreams as they were", exc.message, exc.hint)
        await asyncio.sleep(POLL_S)
