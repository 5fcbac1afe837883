"""Read the flag list from the engine that will run, on its node: `--help=all` of the native
command, or of the image (`docker run --rm --entrypoint ... IMAGE ... --help=all`), with the
version the engine reports. The list is cached under $SM121_HOME/engine-flags/ per version and
engine id (the image id, or node + command) and the recipe that produced it, where recipe
validation finds it: a foreign recipe's list never serves another recipe."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from sm121.engines.adapter import EngineAdapter
from sm121.engines.registry import adapter_for
from sm121.errors import Sm121Error
from sm121.hosts.python import this_python
from sm121.hosts.transport import LocalTransport, Transport
from sm121.recipes.schema import Recipe

HELP_TIMEOUT_S = 600  # a cold image import of vLLM on a busy node takes minutes


@dataclass(frozen=True)
class EngineFlags:
    version: str
    engine_id: str
    image: str | None
    flags: frozenset[str]
    how: str
    cache_file: str
    declared: str | None  # the recipe's engine.version
    engine: EngineAdapter = field(compare=False, repr=False)  # whose flags these are

    @property
    def mismatch(self) -> str | None:
        if self.engine.release_of(self.declared) == self.version:
            return None
        return (f"the recipe says {self.engine.label} {self.declared or '(no engine.version)'}, "
                f"the engine reports {self.version}")

    def against_bundled(self) -> tuple[str, set[str], set[str]] | None:
        """(bundled version, flags only the engine has, flags only the bundled list has)."""
        if self.version not in self.engine.bundled_versions():
            return None
        known = self.engine.bundled_flags(self.version).flags
        return self.version, set(self.flags - known), set(known - self.flags)


def read_engine_flags(recipe: Recipe, transport: Transport, node: str,
                      builtin: bool = False) -> EngineFlags:
    """Run the engine's --help=all and cache its flags for this recipe (recipe_key; a built-in
    recipe's list serves every recipe of that engine). The caller checks trust first: this
    runs the recipe's command or image."""
    engine = adapter_for(recipe.engine.kind)  # a recipe meeting its engine: `sm121 engine flags`
    if recipe.runtime.kind == "docker":
        image = recipe.runtime.image
        if not image:
            raise Sm121Error(f"recipe {recipe.name}: runtime.kind is docker but runtime.image "
                             "is empty", "set runtime.image")
        engine_id = _checked(transport, ["docker", "image", "inspect", "--format", "{{.Id}}",
                                         image], f"docker image inspect {image}", 60).strip()
        command = list(recipe.runtime.command or engine.docker_command)
        run = ["docker", "run", "--rm", "--entrypoint", command[0], image]
        help_argv = [*run, *command[1:], "--help=all"]
        version_argv = [*run, *engine.version_args(command)]
        how = f"image {image} ({engine_id[:19]}) on {node}"
    else:
        image = None
        command = _local(list(recipe.runtime.command or engine.native_command), transport)
        help_argv = [*command, "--help=all"]
        version_argv = [command[0], *engine.version_args(command)]
        engine_id = f"{node}-{shlex.join(command)}"
        how = f"native `{shlex.join(command)}` on {node}"
    version = _version(engine, _checked(transport, version_argv, "the engine's version",
                                        HELP_TIMEOUT_S))
    flags = engine.parse_help(_checked(transport, help_argv, "the engine's --help=all",
                                       HELP_TIMEOUT_S))
    if len(flags) < 20:
        raise Sm121Error(f"the engine's --help=all on {node} listed {len(flags)} flags",
                         f"run the command by hand and check it is {engine.label}'s server")
    path = engine.save_flags(version, engine_id, image, flags, how,
                             recipe=engine.recipe_key(recipe), builtin=builtin)
    return EngineFlags(version, engine_id, image, flags, how, str(path), recipe.engine.version,
                       engine)


def _local(command: list[str], transport: Transport) -> list[str]:
    # As when serving.
    return this_python(command, on_this_machine=isinstance(transport, LocalTransport))


def _version(engine: EngineAdapter, output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    release = engine.release_of(lines[-1]) if lines else None
    if release is None:
        raise Sm121Error(f"the engine did not print a {engine.label} version (got "
                         f"{output[-200:]!r})",
                         "check the recipe's runtime.command")
    return release


def _checked(transport: Transport, argv: list[str], what: str, timeout: float) -> str:
    result = transport.run(argv, timeout=timeout)
    if not result.ok:
        raise Sm121Error(f"{what} failed on {transport.name}: "
                         f"{(result.stderr or result.stdout).strip()[-400:]}",
                         f"the command was: {shlex.join(argv)}")
    return result.stdout
