"""What a recipe from elsewhere asks a node to run or expose. sm121 runs as root over ssh on
every node and recipes are shared like packages, so the boundary is an allow-list: a recipe
that is not built in may set the engine flags and env variables the engine's allow-list
names (its adapter's; vLLM's is engines/vllm/trust.py), with typed values, and mount the
user's caches. Everything else is listed here, and plan, serve and engine flags refuse it
without --trust: other flags and env, references to the launcher's variables, paths outside
the model and cache folders, extra_known_args, its own command or image, custom hooks.

Then the rendered argv is read by the engine's own parser: whatever it sets beyond sm121's
own argv must be an allow-listed option. Built-in recipes are trusted."""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Mapping

from sm121 import paths
from sm121.display import escape, quoted
from sm121.engines.adapter import EngineAdapter
from sm121.engines.registry import adapter_for
from sm121.errors import Sm121Error
from sm121.plan.effective import profile_args, profile_env
from sm121.plan.model import is_secret
from sm121.recipes.hook_names import BUILTIN_HOOKS
from sm121.recipes.schema import ArgValue, Hooks, ModelSource, Recipe

# Host folders a recipe may mount without trust (the user's caches: weights, compile caches),
# and where in the container: a cache again, never a folder the container runs code from.
CACHE_ROOT = "~/.cache"
CONTAINER_CACHE_ROOTS = ("/root/.cache",)


def trust_needs(recipe: Recipe, profile: str | None, builtin: bool,
                engine: EngineAdapter | None = None) -> list[str]:
    """One line per thing that needs --trust: the field and what it would do. `engine` is
    the adapter render holds; a caller with only a recipe (tune) lets this find it."""
    if builtin:
        return []
    engine = engine or adapter_for(recipe.engine.kind)  # a recipe meeting its engine here
    return (_runtime_needs(engine, recipe) + model_needs(recipe)
            + _arg_needs(engine, recipe, profile)
            + _env_needs(engine, recipe, profile) + hook_needs(recipe.hooks_for(profile)))


def _runtime_needs(engine: EngineAdapter, recipe: Recipe) -> list[str]:
    runtime, needs = recipe.runtime, []
    if runtime.command and tuple(runtime.command) not in (engine.native_command,
                                                          engine.docker_command):
        needs.append(f"runtime.command: runs `{escape(shlex.join(runtime.command), None)}` "
                     "instead of the engine")
    if runtime.kind == "docker" and runtime.image:
        needs.append(f"runtime.image: runs the image {runtime.image} on every node")
    for mount in runtime.mounts:
        if not (is_cache_path(mount.host) and _under(mount.container, CONTAINER_CACHE_ROOTS)):
            needs.append(f"runtime.mounts: exposes the host's {mount.host} to the container "
                         f"({mount.mode}) at {mount.container}")
    if recipe.engine.extra_known_args:
        needs.append(f"engine.extra_known_args: passes flags sm121 does not know "
                     f"({', '.join(recipe.engine.extra_known_args)}) to the engine")
    return needs


def model_needs(recipe: Recipe) -> list[str]:
    model = recipe.model
    if model.source is not ModelSource.PATH or not model.path:
        return []
    path = paths.expand_sm121_home(model.path)
    if _under(path, (str(paths.models_dir()),)) or is_cache_path(path):
        return []
    return [f"model.path: makes the engine read {model.path}, outside sm121's model folder "
            f"({paths.models_dir()}) and {CACHE_ROOT}"]


def _arg_needs(engine: EngineAdapter, recipe: Recipe, profile: str | None) -> list[str]:
    return args_needs(engine, recipe, profile_args(recipe, profile), "args.")


def override_needs(engine: EngineAdapter, recipe: Recipe,
                   overrides: Mapping[str, ArgValue]) -> list[str]:
    """Engine args set on top of the recipe: `--set`, an A/B arm's or a resumed tune's args
    (read back from a file anyone may have written). The same allow-list as a foreign
    recipe's args, for every recipe: a built-in recipe is trusted, what is put on top of it
    is not."""
    return args_needs(engine, recipe, overrides, "--set ")


def args_needs(engine: EngineAdapter, recipe: Recipe, args: Mapping[str, ArgValue],
               label: str) -> list[str]:
    # Read as the upstream parser reads it: a name under extra_known_args may abbreviate one.
    upstream = engine.flag_choice(recipe).flags.flags
    needs = []
    for name, value in args.items():
        shown = escape(name)
        if not engine.is_safe_flag(name):
            target = engine.resolve_flag(name, upstream) or name
            read_as = f" ({engine.label} reads it as --{target})" if target != name else ""
            needs.append(f"{label}{shown}{read_as}: {engine.unsafe_why(target)}")
        elif (problem := engine.value_problem(name, value)) is not None:
            needs.append(f"{label}{shown}: {problem}, got {escape(repr(value))}")
    return needs


def _env_needs(engine: EngineAdapter, recipe: Recipe, profile: str | None) -> list[str]:
    return [f"env.{name}: {problem}"
            for name, value in profile_env(recipe, profile).items()
            if (problem := engine.env_problem(name, value, is_secret(name))) is not None]


def hook_needs(hooks: Hooks) -> list[str]:
    used = dict.fromkeys(n for n in (*hooks.before_serve, *hooks.after_ready)
                         if n not in BUILTIN_HOOKS and n in hooks.custom)
    return [f"hooks.custom.{escape(name)}: runs the custom hook command "
            f"{quoted(hooks.custom[name], None)} on every node" for name in used]


def argv_needs(engine: EngineAdapter, recipe: Recipe,
               engines: list[tuple[list[str] | None, list[str]]]) -> list[str]:
    """The final check: each node's engine args (after the engine command) against sm121's
    own part of them, read by the engine's parser (`engine`, render's adapter). A node that
    runs no engine (a Ray worker, sm121's fixed argv) has None."""
    choice = engine.flag_choice(recipe)
    needs: list[str] = []
    for full, own in engines:
        if full is not None:
            needs += engine.argv_problems(full, own, choice.flags.version, choice.flags.flags)
    return list(dict.fromkeys(needs))


def is_cache_path(host: str) -> bool:
    return _under(host, (CACHE_ROOT,))


def _under(path: str, roots: tuple[str, ...]) -> bool:
    normal = posixpath.normpath(path)
    return ".." not in path.split("/") and any(
        normal == root or normal.startswith(root.rstrip("/") + "/") for root in roots)


def require_trust(recipe: str, needs: list[str], trust: bool) -> None:
    """Refuse, listing every item, unless the user gave --trust."""
    if needs and not trust:
        # One line per item, whatever it holds: a newline in a value must not start a line
        # of its own (a fake item, or a fake end of the list).
        raise Sm121Error(f"the plan for recipe {recipe} asks to run or expose on every node "
                         "(what a recipe that is not built in, engine args set on top of a "
                         "recipe, or a cluster file asks for):"
                         "\n  - " + "\n  - ".join(escape(n, None) for n in needs),
                         "read each item, then rerun with --trust to allow them")
