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
import contextlib
import hashlib
import json
import logging
import os
import stat
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from sm121.errors import Sm121Error
from sm121.gateway.config import UpstreamSpec
from sm121.runs.lock import locked

log = logging.getLogger("sm121.gateway")
FILE_NAME = "gateway-upstreams.json"
POLL_S = 1.0


class _File(BaseModel):
    """The whole file, checked at once and strictly (types as JSON gives them, no unknown
    keys) before any of it is applied: a half-valid file changes nothing."""

    model_config = ConfigDict(strict=True, extra="forbid")
    gateway_url: str | None = None
    upstreams: list[UpstreamSpec]


def spec_to_json(spec: UpstreamSpec) -> dict[str, Any]:
    data = asdict(spec)
    data["policy"] = spec.policy.model_dump(mode="json")
    return data


@dataclass(frozen=True)
class Verdict:
    """What the gateway made of the file's last version: its content hash (None: no file)
    and why it was refused (None: applied). /sm121/upstreams shows it, so that a joiner can
    tell a refusal of what it wrote from a gateway that has not looked yet."""

    sha256: str | None = None
    error: str | None = None


def load(path: Path) -> tuple[UpstreamSpec, ...]:
    """Every upstream of the file, or an Sm121Error naming what is wrong (nothing applied)."""
    return parse(path, _read_owned(path))


def content_sha256(path: Path) -> str | None:
    text = _read_owned(path)
    return None if text is None else _sha256(text)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def parse(path: Path, text: str | None) -> tuple[UpstreamSpec, ...]:
    if text is None:
        return ()
    hint = ("it is written by `sm121 serve --gateway` and `--gateway-join`; remove the bad "
            "entry or restart the gateway")
    try:
        specs = _File.model_validate_json(text).upstreams
    except ValidationError as exc:
        raise Sm121Error(f"the gateway's upstreams file {path} is not valid: {_first(exc)}",
                         hint) from exc
    except Sm121Error as exc:  # an entry's own check (its URL)
        raise Sm121Error(f"the gateway's upstreams file {path}: {exc.message}", hint) from exc
    names = [s.name for s in specs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise Sm121Error(f"the gateway's upstreams file {path} names {', '.join(twice)} twice",
                         hint)
    return tuple(specs)


def _first(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "the file"
    return f"{where}: {error['msg']}"


def _read_owned(path: Path) -> str | None:
    """The file's text, if it is a regular file of this user that nobody else may write
    (whoever can write it decides where the gateway sends its clients' prompts); None if
    it does not exist. Opened without following a link, and checked on the open file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Sm121Error(f"the gateway's upstreams file {path} is not readable: "
                         f"{exc.strerror}", "it must be a regular file, not a link") from exc
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Sm121Error(f"the gateway's upstreams file {path} is not a regular file",
                             "remove it; `sm121 serve --gateway` writes a new one")
        if info.st_uid != os.geteuid() or info.st_mode & 0o022:
            raise Sm121Error(
                f"the gateway's upstreams file {path} is owned by uid {info.st_uid} with mode "
                f"{stat.S_IMODE(info.st_mode):04o}; the gateway reads it only when it belongs "
                f"to uid {os.geteuid()} and no one else may write it",
                f"chmod 600 {path} (and chown it to the gateway's user)")
        try:
            return handle.read().decode()
        except UnicodeDecodeError as exc:
            raise Sm121Error(f"the gateway's upstreams file {path} is not UTF-8 text",
                             "remove it; `sm121 serve --gateway` writes a new one") from exc


def gateway_url(path: Path) -> str | None:
    """The URL of the gateway that watches this file, as its launcher recorded it."""
    try:
        url = json.loads(_read_owned(path) or "{}").get("gateway_url")
    except (Sm121Error, ValueError, AttributeError):
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
    """Atomically, and 0600 from the first byte (the gateway refuses a file others may write)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    text = json.dumps({"gateway_url": url, "upstreams": [spec_to_json(s) for s in specs]},
                      indent=2)
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()  # a crashed writer's leftover, whatever its mode
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    tmp.replace(path)


async def watch(path: Path, apply: Callable[[tuple[UpstreamSpec, ...]], None],
                report: Callable[[Verdict], None] = lambda _: None) -> None:
    """Apply the file's upstreams now and whenever it changes (checked every second: a stat,
    nothing on the request path). A file refused as a whole changes nothing, and any error
    is logged and the watch goes on: joins after a bad version must still be seen."""
    seen: tuple[int, ...] | None = None
    while True:
        try:
            info = path.stat()
            # ctime too: a chmod or chown alone changes whether the file may be read.
            stamp: tuple[int, ...] = (info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
        except OSError:
            stamp = (0, 0, 0)
        if stamp != seen:
            seen = stamp
            report(_apply_once(path, apply))
        await asyncio.sleep(POLL_S)


def _apply_once(path: Path, apply: Callable[[tuple[UpstreamSpec, ...]], None]) -> Verdict:
    digest: str | None = None
    try:
        text = _read_owned(path)
        digest = None if text is None else _sha256(text)
        apply(parse(path, text))
    except Sm121Error as exc:
        log.error("%s (%s); keeping the upstreams as they were", exc.message, exc.hint)
        return Verdict(digest, exc.message)
    except Exception as exc:  # noqa: BLE001 - the watch must outlive any one bad version
        log.exception("the upstreams file %s could not be applied; keeping the upstreams as "
                      "they were", path)
        return Verdict(digest, f"the upstreams file could not be applied: {exc!r}")
    return Verdict(digest, None)
