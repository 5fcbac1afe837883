"""Which copy tools a node has: rsync on both ends, else tar over ssh. `sm121 doctor` shows
the same probe."""

from __future__ import annotations

from sm121.hosts.transport import Transport

TOOLS = ("rsync", "tar", "sha256sum", "docker")
_PROBE = 'for t in "$@"; do command -v "$t" >/dev/null 2>&1 && echo "$t"; done; true'


def node_tools(transport: Transport) -> set[str]:
    done = transport.run(["sh", "-c", _PROBE, "tools", *TOOLS], timeout=60)
    return set(done.stdout.split())


def copy_method(sender_tools: set[str], target_tools: set[str], wanted: str = "auto") -> str:
    """rsync when both ends have it (it resumes inside a file), else tar."""
    if wanted == "tar":
        return "tar"
    both = "rsync" in sender_tools and "rsync" in target_tools
    if wanted == "rsync" and not both:
        return "missing"
    return "rsync" if both else "tar"
