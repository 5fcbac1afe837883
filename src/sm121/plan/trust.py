"""What a recipe from elsewhere asks a node to run or expose, beyond sm121's built-in engine
commands and the user's caches. sm121 runs as root over ssh on every node and recipes are
shared like packages, so each of these needs the user's --trust; built-in recipes are
trusted. `sm121 plan` lists them, and plan and serve refuse without --trust."""

from __future__ import annotations

import posixpath
import shlex

from sm121.engines import vllm
from sm121.errors import Sm121Error
from sm121.plan.effective import profile_args, profile_env
from sm121.recipes.hook_names import BUILTIN_HOOKS
from sm121.recipes.schema import Hooks, Recipe

# Variables that make a dynamic loader or an interpreter load code of the recipe's choice.
LOADER_ENV = frozenset({
    "PATH", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONINSPECT",
    "PYTHONBREAKPOINT", "BASH_ENV", "ENV", "NODE_OPTIONS", "PERL5LIB", "PERL5OPT", "RUBYLIB",
    "RUBYOPT", "VLLM_PLUGINS",
})
LOADER_PREFIXES = ("LD_",)  # LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, ...
# Engine flags that load code from the model repo or a file, or expose local files.
CODE_ARGS = frozenset({
    "trust-remote-code", "middleware", "tool-parser-plugin", "reasoning-parser-plugin",
    "worker-cls", "worker-extension-cls", "logits-processors", "allowed-local-media-path",
})
# Host folders a recipe may mount without trust: the user's caches (weights, compile caches).
CACHE_ROOT = "~/.cache"
BUILTIN_COMMANDS = (vllm.NATIVE_COMMAND, vllm.DOCKER_COMMAND)


def trust_needs(recipe: Recipe, profile: str | None, builtin: bool) -> list[str]:
    """One line per thing that needs --trust: the field and what it would do."""
    if builtin:
        return []
    runtime = recipe.runtime
    needs = []
    if runtime.command and tuple(runtime.command) not in BUILTIN_COMMANDS:
        needs.append(f"runtime.command: runs `{shlex.join(runtime.command)}` instead of the "
                     "engine")
    if runtime.kind == "docker" and runtime.image:
        needs.append(f"runtime.image: runs the image {runtime.image} on every node")
    for mount in runtime.mounts:
        if not is_cache_path(mount.host):
            needs.append(f"runtime.mounts: exposes the host's {mount.host} to the container "
                         f"({mount.mode}) at {mount.container}")
    for name in profile_env(recipe, profile):
        if name in LOADER_ENV or name.startswith(LOADER_PREFIXES):
            needs.append(f"env.{name}: makes the loader or interpreter run code of the "
                         "recipe's choice")
    for name, value in profile_args(recipe, profile).items():
        if name in CODE_ARGS and value not in (None, False):
            needs.append(f"args.{name}: loads code or files named by the model or the recipe")
    return needs + hook_needs(recipe.hooks)


def hook_needs(hooks: Hooks) -> list[str]:
    used = dict.fromkeys(n for n in (*hooks.before_serve, *hooks.after_ready)
                         if n not in BUILTIN_HOOKS and n in hooks.custom)
    return [f"hooks.custom.{name}: runs the custom hook command `{hooks.custom[name]}` on every "
            "node" for name in used]


def is_cache_path(host: str) -> bool:
    path = posixpath.normpath(host)
    return path == CACHE_ROOT or path.startswith(CACHE_ROOT + "/")


def require_trust(recipe: str, needs: list[str], trust: bool) -> None:
    """Refuse, listing every item, unless the user gave --trust."""
    if needs and not trust:
        raise Sm121Error(f"recipe {recipe} is not built in and asks to run or expose on every "
                         "node:\n  - " + "\n  - ".join(needs),
                         "read each item, then rerun with --trust to allow them")
