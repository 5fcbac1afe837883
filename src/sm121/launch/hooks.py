"""Hooks around a serve, run on every node: `before_serve` before the engine starts,
`after_ready` after the first generation.

Built in:
- `drop-caches`: sync and drop the page cache, so the UMA gate's start-up check (it reads
  MemFree, vLLM #48140) does not count reclaimable cache as used. Root writes directly; others
  go through `sudo -n` and get a clear message when that is not permitted.
- `stage-check`: refuse a node whose staged copy (`sm121 stage`) does not match the
  checksums it was verified with (stage/check.py).
- `warm-read`: read the weight shards into the page cache in parallel, only when the model is
  smaller than the node's available memory; otherwise it says why it skipped.
Any other name is a custom command from the recipe's `hooks.custom`; those run only with
--trust, because a recipe from elsewhere would otherwise run its shell on every node.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from sm121 import paths
from sm121.errors import Sm121Error
from sm121.hosts.transport import Transport
from sm121.launch.runtimes import q
from sm121.plan.model import NodePlan
from sm121.plan.runtime_argv import expand_home
from sm121.plan.trust import hook_needs, require_trust
from sm121.recipes.hook_names import BUILTIN_HOOKS
from sm121.recipes.schema import Hooks
from sm121.stage.check import stage_check
from sm121.stage.layout import DEFAULT_HF_CACHE

Phase = Literal["before_serve", "after_ready"]
HookStatus = Literal["ok", "skipped", "failed"]
MARK = "sm121-hook:"
WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.gguf", "*.pt")

_DROP_CACHES = f"""sync
if [ "$(id -u)" = 0 ]; then
  if echo 3 > /proc/sys/vm/drop_caches 2> /dev/null; then echo "{MARK} ok page cache dropped"
  else echo "{MARK} failed not permitted: drop-caches needs a writable /proc/sys/vm/drop_caches \
as root; it is read-only here (a container without --privileged?)"; fi
elif ! command -v sudo > /dev/null 2>&1; then
  echo "{MARK} failed not permitted: drop-caches needs root or \\`sudo -n\\`; not root and sudo \
is not installed"
elif echo 3 | sudo -n tee /proc/sys/vm/drop_caches > /dev/null 2>&1; then
  echo "{MARK} ok page cache dropped (sudo -n)"
else
  echo "{MARK} failed not permitted: drop-caches needs root or \\`sudo -n\\`, and sudo -n \
refused; allow it with a sudoers rule such as \
'$(id -un) ALL=(root) NOPASSWD: /usr/bin/tee /proc/sys/vm/drop_caches'"
fi
"""

# $1: the weights folder. Reads in parallel (8 files at a time) when the total fits in
# MemAvailable; a model larger than RAM would evict its own first shards before the engine
# reads them (measured: a 406 GB model on 121 GB nodes kept 0.0% in page cache). The doctor's
# weights-vs-ram check applies the same rule (doctor/memory_checks.py).
_WARM_READ = f"""dir="$1"
if [ ! -d "$dir" ]; then echo "{MARK} skipped no weights folder $dir on this node"; exit 0; fi
list() {{ find -L "$dir" -type f \\( {' -o '.join(f"-name {q(p)}" for p in WEIGHT_PATTERNS)} \\) "$@"; }}
size=$(list -printf '%s\\n' | awk '{{s += $1}} END {{printf "%.0f", s}}')
avail=$(awk '/^MemAvailable:/ {{printf "%.0f", $2 * 1024}}' /proc/meminfo)
gb() {{ awk -v b="$1" 'BEGIN {{if (b < 1e9) printf "%.1f MB", b / 1e6; \
else printf "%.1f GB", b / 1e9}}'; }}
if [ "$size" = 0 ]; then echo "{MARK} skipped no weight files in $dir"; exit 0; fi
if [ "$size" -ge "$avail" ]; then
  echo "{MARK} skipped the model ($(gb "$size")) is not smaller than this node's available \
memory ($(gb "$avail")): pre-reading cannot keep it in page cache"; exit 0
fi
list -print0 | xargs -0 -r -P 8 -n 1 cat > /dev/null
echo "{MARK} ok read $(gb "$size") of weights into page cache ($(gb "$avail") available)"
"""


@dataclass(frozen=True)
class HookResult:
    node: str
    hook: str
    phase: Phase
    status: HookStatus
    seconds: float
    message: str

    def render(self) -> str:
        return (f"{self.phase} {self.hook} on {self.node}: {self.status} "
                f"({self.seconds:.1f} s) {self.message}")


@dataclass(frozen=True)
class HookTarget:
    """A node as hooks see it: where to run, and the facts hooks need."""

    node: NodePlan
    transport: Transport
    weights_dir: str
    run_dir: str
    home: str = ""  # the node's home, for `~` in its cache folder
    model_repo: str = ""  # the model's cache folder name, for stage-check
    revision: str | None = None


def check_trust(hooks: Hooks, trust: bool, recipe: str) -> None:
    """Refuse before anything starts: unknown hook names, and custom commands without --trust."""
    names = [*hooks.before_serve, *hooks.after_ready]
    unknown = [n for n in names if n not in BUILTIN_HOOKS and n not in hooks.custom]
    if unknown:
        raise Sm121Error(f"recipe {recipe}: hook {', '.join(unknown)} is neither built in "
                         f"({', '.join(sorted(BUILTIN_HOOKS))}) nor defined under hooks.custom",
                         "fix the name, or add its command under hooks.custom")
    require_trust(recipe, hook_needs(hooks), trust)


def run_hooks(phase: Phase, hooks: Hooks, target: HookTarget) -> list[HookResult]:
    """Run the phase's hooks on one node in order; stop at the first failure."""
    names = hooks.before_serve if phase == "before_serve" else hooks.after_ready
    results = []
    for name in names:
        result = run_hook(phase, name, hooks, target)
        results.append(result)
        if result.status == "failed":
            break
    return results


def run_hook(phase: Phase, name: str, hooks: Hooks, target: HookTarget) -> HookResult:
    started = time.monotonic()
    try:
        if name == "stage-check":
            hf_cache = expand_home(target.node.hf_cache or DEFAULT_HF_CACHE, target.home)
            status, message = stage_check(target.transport, hf_cache, target.model_repo,
                                          target.revision)
        else:
            argv, timeout = _hook_argv(phase, name, hooks, target)
            done = target.transport.run(argv, timeout=timeout)
            status, message = _outcome(name, done.returncode, done.stdout + done.stderr)
    except Sm121Error as exc:
        status, message = "failed", exc.message
    return HookResult(node=target.node.name, hook=name, phase=phase, status=status,
                      seconds=round(time.monotonic() - started, 2), message=message)


def weights_dir(model_ref: str, node: NodePlan, home: str) -> str:
    """Where the node keeps the weights: a local path as given, an HF id in the HF cache (the
    host side of a docker mount of it, HF_HOME, or ~/.cache/huggingface)."""
    if model_ref.startswith(("/", "~")):
        return expand_home(model_ref, home)
    cache = node.env.get("HF_HOME", "~/.cache/huggingface")
    if node.runtime == "docker":
        mounts = [node.argv[i + 1] for i, a in enumerate(node.argv[:-1]) if a == "-v"]
        cache = next((m.split(":")[0] for m in mounts
                      if m.split(":")[1].rstrip("/").endswith(".cache/huggingface")), cache)
    return f"{expand_home(cache, home)}/hub/{paths.hf_repo_folder(model_ref)}"


def _hook_argv(phase: Phase, name: str, hooks: Hooks, target: HookTarget
               ) -> tuple[list[str], float]:
    if name == "drop-caches":
        return ["sh", "-c", _DROP_CACHES], 300
    if name == "warm-read":
        return ["sh", "-c", _WARM_READ, "warm-read", target.weights_dir], 3600
    node = target.node
    env = {"SM121_PHASE": phase, "SM121_NODE": node.name, "SM121_ROLE": node.role,
           "SM121_RANK": str(node.rank), "SM121_RUN_DIR": target.run_dir,
           "SM121_WEIGHTS_DIR": target.weights_dir}
    return ["env", *(f"{k}={v}" for k, v in env.items()), "sh", "-c", hooks.custom[name]], 1800


def _outcome(name: str, returncode: int, output: str) -> tuple[HookStatus, str]:
    marked = [line for line in output.splitlines() if line.startswith(MARK)]
    if marked:
        status, _, message = marked[-1][len(MARK):].strip().partition(" ")
        if status in ("ok", "skipped", "failed"):
            return status, message  # type: ignore[return-value]
    tail = " | ".join(output.strip().splitlines()[-5:])
    if returncode != 0:
        return "failed", f"exit status {returncode}: {tail}"
    return "ok", tail
