"""`serve --gateway-join RUN`: add this engine to the upstreams file RUN's gateway watches,
then wait until that gateway says it took it, or refused the file.

Why wait: writing the file proves nothing. The gateway reads it on its own schedule and
may refuse it as a whole (a bad entry, a mode others may write), and a join that printed
"joined" regardless left engines that were never routed to.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sm121.engines.api_key import api_key, bearer
from sm121.engines.client_sync import SyncEngineClient
from sm121.engines.engine_error import EngineError
from sm121.errors import Sm121Error
from sm121.gateway import registry
from sm121.gateway.config import UpstreamSpec
from sm121.launch import control
from sm121.plan.model import ServePlan
from sm121.runs.state import RunInfo
from sm121.serving.run_upstreams import spec_from_plan

CONFIRM_TIMEOUT_S = 15.0  # the gateway looks every second; a loaded box answers slowly
_POLL_S = 0.2


def joinable(run_id: str) -> Path:
    """The upstreams file of RUN's gateway, checked before anything starts: RUN is ready and
    its file is one the gateway would take."""
    run = control.resolve_run(run_id)
    path = run.directory / registry.FILE_NAME
    if not path.is_file() or control.effective_status(run) != "ready":
        raise Sm121Error(f"run {run.run_id} has no running gateway to join",
                         "start one with `sm121 serve NAME --gateway`, then join it")
    registry.load(path)  # a file the gateway would refuse is refused before the engine starts
    return path


def join_run(run: RunInfo, plan: ServePlan, path: Path) -> str:
    """Put this served run behind the gateway whose upstreams file is `path` (from
    `joinable`), with the policy and max-num-seqs its plan serves; the gateway's URL."""
    return join(path, spec_from_plan(plan, run.run_id, run.base_url, run=run),
                api_key(engine_first=True))


def join(path: Path, spec: UpstreamSpec, key: str | None,
         timeout_s: float = CONFIRM_TIMEOUT_S) -> str:
    """Add `spec`, and return the gateway's URL once its /sm121/upstreams lists it; an
    Sm121Error if the file is refused (here, or by the gateway) or nothing confirms it."""
    registry.load(path)  # a file the gateway would refuse is refused here, with its reason
    url = registry.gateway_url(path)
    if url is None:
        raise Sm121Error(f"the upstreams file {path} names no gateway URL to confirm the join",
                         "it is written by `sm121 serve --gateway`; start that gateway again")
    registry.add(path, spec)  # checks the file again under the writers' lock
    digest = registry.content_sha256(path)
    deadline = time.monotonic() + timeout_s
    said: str | None = None
    while True:
        report = _upstreams(url, key)
        if any(u.get("name") == spec.name and u.get("url") == spec.url
               for u in report.get("upstreams") or []):
            return url
        verdict = report.get("registry") or {}
        said = verdict.get("error") if isinstance(verdict, dict) else None
        if said and verdict.get("sha256") == digest:
            raise Sm121Error(f"the gateway at {url} refused the upstreams file: {said}",
                             f"{spec.name} keeps running but gets no requests from it; fix "
                             "the file, or stop the engine with `sm121 stop`")
        if time.monotonic() > deadline:
            raise Sm121Error(f"the gateway at {url} did not take {spec.name} within "
                             f"{timeout_s:.0f} s" + (f" (it said: {said})" if said else ""),
                             f"check its log and {url}/sm121/upstreams; the engine keeps "
                             "running")
        time.sleep(_POLL_S)


def _upstreams(url: str, key: str | None) -> dict[str, Any]:
    try:
        return SyncEngineClient(url, bearer(key), timeout_s=5).get_json("/sm121/upstreams")
    except EngineError as exc:
        if exc.status in (401, 403):
            raise
        if exc.status is not None:
            raise Sm121Error(f"the gateway at {url} answered {exc.status} for "
                             "/sm121/upstreams", "is it an sm121 gateway?") from exc
        raise Sm121Error(f"no gateway answers at {url}: {exc.message}",
                         "is the gateway run still up? see `sm121 status`") from exc
