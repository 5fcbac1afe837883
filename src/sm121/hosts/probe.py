"""Host probe: /proc/meminfo, mounts, IPv4 routes, network interfaces, RDMA devices, where
given paths live, and how much of given files sits in the page cache (mincore).

Self-contained on purpose (standard library only, no sm121 imports): the doctor sends this
file to a node's `python3` over SSH and runs it there, so local and remote nodes are
probed by the same code. `root` prefixes every /proc and /sys path, so tests can probe a
sample tree."""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import json
import mmap
import os
import shutil
import socket
import sys

PAGE = mmap.PAGESIZE
WINDOW = 1 << 30  # mincore a file in 1 GiB windows: bounded memory for 400 GB of weights


def meminfo(root: str) -> dict[str, int]:
    """Values in kB, as the kernel writes them."""
    values = {}
    for line in _read(root, "proc/meminfo").splitlines():
        key, _, rest = line.partition(":")
        if rest.split():
            values[key.strip()] = int(rest.split()[0])
    return values


def loadavg(root: str) -> list[float]:
    """The 1, 5 and 15 minute load averages."""
    fields = _read(root, "proc/loadavg").split()[:3]
    try:
        return [float(f) for f in fields]
    except ValueError:
        return []


def mounts(root: str) -> list[dict[str, str]]:
    rows = []
    for line in _read(root, "proc/mounts").splitlines():
        parts = line.split()
        if len(parts) >= 4:
            rows.append({"device": parts[0], "mountpoint": _unescape(parts[1]),
                         "fstype": parts[2], "options": parts[3]})
    return rows


def routes(root: str) -> list[dict[str, str]]:
    """IPv4 routes from /proc/net/route (addresses in dotted form)."""
    rows = []
    for line in _read(root, "proc/net/route").splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 8:
            rows.append({"iface": parts[0], "destination": _ip(parts[1]),
                         "gateway": _ip(parts[2]), "mask": _ip(parts[7])})
    return rows


def interfaces(root: str) -> dict[str, dict[str, str]]:
    found = {}
    for path in sorted(glob.glob(os.path.join(root, "sys/class/net/*"))):
        name = os.path.basename(path)
        found[name] = {key: _read_file(os.path.join(path, key)).strip()
                       for key in ("operstate", "speed")}
    return found


def rdma_devices(root: str) -> dict[str, list[str]]:
    """RDMA device -> the network interfaces it drives (device/net)."""
    found = {}
    for path in sorted(glob.glob(os.path.join(root, "sys/class/infiniband/*"))):
        nets = glob.glob(os.path.join(path, "device", "net", "*"))
        found[os.path.basename(path)] = sorted(os.path.basename(n) for n in nets)
    return found


def resident(paths: list[str]) -> dict[str, int]:
    """Bytes of the files (directories: their *.safetensors) and how many are in page cache."""
    files: list[str] = []
    for pattern in paths:  # a file, a directory of *.safetensors, or a glob of either
        for path in sorted(glob.glob(os.path.expanduser(pattern))):
            files += (sorted(glob.glob(os.path.join(path, "*.safetensors")))
                      if os.path.isdir(path) else [path])
    total = cached = 0
    for file in files:
        size, in_cache = file_residency(file)
        total, cached = total + size, cached + in_cache
    return {"files": len(files), "bytes": total, "cached_bytes": cached}


def file_residency(path: str) -> tuple[int, int]:
    """(size, bytes in page cache) of one file, by mincore over a read-only mapping: the
    mapping itself reads nothing, so probing does not warm the cache it measures."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    size = os.path.getsize(path)
    cached = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        for offset in range(0, size, WINDOW):
            length = min(WINDOW, size - offset)
            cached += _window_residency(libc, fd, offset, length)
    finally:
        os.close(fd)
    return size, min(cached, size)


def _window_residency(libc: ctypes.CDLL, fd: int, offset: int, length: int) -> int:
    address = libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, offset)
    if address in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "mmap failed")
    try:
        pages = (length + PAGE - 1) // PAGE
        vector = ctypes.create_string_buffer(pages)
        if libc.mincore(ctypes.c_void_p(address), length, vector) != 0:
            raise OSError(ctypes.get_errno(), "mincore failed")
        return sum(byte & 1 for byte in vector.raw) * PAGE
    finally:
        libc.munmap(ctypes.c_void_p(address), length)


def locate(paths: dict[str, str], root: str = "/") -> dict[str, dict[str, object]]:
    """Where each labelled path really is (symlinks resolved), and whether it exists. In a
    saved tree the live file system says nothing: `~` is root's home, and paths are taken
    as they are."""
    found: dict[str, dict[str, object]] = {}
    for label, path in paths.items():
        if root == "/":
            real = os.path.realpath(os.path.expanduser(path))
            found[label] = {"path": path, "realpath": real, "exists": os.path.exists(real)}
        else:
            real = "/root" + path[1:] if path.startswith("~") else path
            found[label] = {"path": path, "realpath": real,
                            "exists": os.path.exists(os.path.join(root, real.lstrip("/")))}
    return found


def resolve_hosts(names: list[str]) -> dict[str, str]:
    found = {}
    for name in names:
        try:
            found[name] = socket.gethostbyname(name)
        except OSError:
            found[name] = ""
    return found


def probe(request: dict[str, object]) -> dict[str, object]:
    root = str(request.get("root") or "/")
    env = {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "GLOO_", "HF_"))}
    return {
        "hostname": socket.gethostname(), "meminfo": meminfo(root), "loadavg": loadavg(root),
        "mounts": mounts(root),
        "routes": routes(root), "interfaces": interfaces(root), "rdma": rdma_devices(root),
        "paths": locate(dict(request.get("paths") or {}), root),  # type: ignore[call-overload]
        "weights": resident(list(request.get("weights") or [])),  # type: ignore[call-overload]
        "hosts": resolve_hosts(_nfs_servers(root)),
        "env": env,
        # which copy `sm121 stage` can use to and from this node (rsync, else tar over ssh)
        "tools": {t: shutil.which(t) is not None for t in ("rsync", "tar", "sha256sum")},
    }


def _nfs_servers(root: str) -> list[str]:
    return sorted({m["device"].split(":", 1)[0] for m in mounts(root)
                   if m["fstype"].startswith("nfs") and ":" in m["device"]})


def _read(root: str, relative: str) -> str:
    return _read_file(os.path.join(root, relative))


def _read_file(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return ""


def _ip(little_endian_hex: str) -> str:
    return socket.inet_ntoa(int(little_endian_hex, 16).to_bytes(4, "little"))


def _unescape(path: str) -> str:
    return path.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n")


if __name__ == "__main__":
    print(json.dumps(probe(json.loads(sys.argv[1]))))
