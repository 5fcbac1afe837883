"""The `docker run` line for a node: everything the engine needs from the host, explicit. (The
commands of an engine's multi-node modes, its headless worker or Ray, are its adapter's.)"""

from __future__ import annotations

from collections.abc import Sequence

from sm121.errors import Sm121Error
from sm121.paths import expand_home
from sm121.recipes.schema import Recipe


def container_name(recipe: Recipe, node_name: str) -> str:
    return recipe.runtime.container_name or f"sm121-{recipe.name}-{node_name}"


def docker_argv(recipe: Recipe, node_name: str, env: dict[str, str], pass_env: list[str],
                engine_argv: list[str], home: str | None = None) -> list[str]:
    runtime = recipe.runtime
    if not runtime.image:
        raise Sm121Error(f"recipe {recipe.name}: runtime.kind is docker but runtime.image is empty",
                         "set runtime.image, e.g. eugr/spark-vllm-b12x:sm121")
    argv = ["docker", "run", "-d", "--name", container_name(recipe, node_name),
            "--gpus", "all", "--ipc", "host", "--network", "host",
            "--device", "/dev/infiniband", "--ulimit", "memlock=-1", "--ulimit", "stack=67108864"]
    for mount in runtime.mounts:
        argv += ["-v", f"{expand_home(mount.host, home)}:{mount.container}:{mount.mode}"]
    for name, value in env.items():
        argv += ["-e", f"{name}={value}"]
    # Secrets by name only: docker copies the value from the launcher's environment.
    for name in pass_env:
        argv += ["-e", name]
    return argv + [runtime.image] + engine_argv


def expand_mounts(argv: Sequence[str], home: str) -> list[str]:
    """The `-v HOST:CONTAINER` values of a docker argv with `~` expanded to home."""
    out = list(argv)
    for index in range(1, len(out)):
        if out[index - 1] == "-v":
            out[index] = expand_home(out[index], home)
    return out

