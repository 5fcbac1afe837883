"""Integration fixtures: a real sshd on loopback (127.0.0.2, 127.0.0.3, ...) for the suites
that reach nodes over SSH (cluster serving, doctor over SSH), and the two extra engine boots
that more than one file uses (each boot is minutes on the shared 2-core testbed, so a
configuration two files need is booted once). See tests/support/sshd.py."""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest
import yaml
from support import FailedBoot, TinyEngine, free_port, run_cli
from support.sshd import Sshd, sshd_available, start_sshd
from support.timeouts import BOOT_S, SERVE_S


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """One sshd for the session, three loopback nodes; stopped by pid at the end."""
    if not sshd_available():
        pytest.skip("sshd is not installed (`make test` installs it via scripts/ensure-sshd.sh)")
    server = start_sshd(tmp_path_factory.mktemp("sshd"), nodes=3)
    yield server
    server.stop()


def _fp8_kv_supported() -> bool:
    """vLLM's CPU backend stores fp8 KV only on x86 with AVX-512 or AMX."""
    import torch

    return bool(torch.cpu._is_avx512_supported() or torch.cpu._is_amx_tile_supported())


@pytest.fixture(scope="session")
def toolless_boot(sm121_home: Path) -> FailedBoot:
    """Its own boot: the agent profile with tool calling off (`enable-auto-tool-choice=false`),
    which the session engine must not be; the serve fails readiness and stops the engine.
    The same boot is test_memory_cpu_pool's configuration B (same KV space, smaller blocks,
    a 1-byte KV dtype, or 4-byte float32 where fp8 is not supported): its engine log holds
    the KV pool whatever readiness said. Used by test_agent_readiness and test_memory_cpu_pool.
    """
    kv = (["--set", "kv-cache-dtype=fp8"] if _fp8_kv_supported()
          else ["--set", "dtype=float32"])
    before = set((sm121_home / "runs").glob("*"))
    result = run_cli("serve", "tiny-cpu", "--profile", "agent", "--port", str(free_port()),
                     "--set", "enable-auto-tool-choice=false", "--set", "block-size=64", *kv,
                     "--timeout", str(BOOT_S), check=False, timeout=SERVE_S)
    (run_dir,) = set((sm121_home / "runs").glob("*")) - before
    return FailedBoot(result, run_dir)


@pytest.fixture(scope="session")
def replica_b(tiny_engine: TinyEngine, sm121_home: Path,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[TinyEngine]:
    """Its own boot: a second engine beside the session's, from a copy of the tiny-cpu recipe
    whose model is `tiny-b` with the alias `tiny` (a second model and a second replica of
    `tiny` for test_gateway_routing_engines). The copy is also test_memory_cpu_pool's
    configuration C: half the KV space (its env sets VLLM_CPU_KVCACHE_SPACE=1), blocks of 96
    and a max-model-len off the block grid, so whole-block rounding shows in the pool.
    test_gateway_routing_engines' last test kills it (SIGKILL): after that only its run
    directory (run.json, engine.log) is there to read."""
    recipe = yaml.safe_load(resources.files("sm121.recipes.builtin")
                            .joinpath("tiny-cpu.yaml").read_text())
    recipe["name"] = "tiny-cpu-b"
    recipe["model"].update(id="tiny-b", aliases=["tiny"])
    recipe["env"]["VLLM_CPU_KVCACHE_SPACE"] = "1"
    path = tmp_path_factory.mktemp("recipes") / "tiny-cpu-b.yaml"
    path.write_text(yaml.safe_dump(recipe))
    port = free_port()
    # Our own copy of a built-in recipe: trusted as the built-in is.
    run_cli("serve", str(path), "--profile", "agent", "--port", str(port), "--trust",
            "--set", "block-size=96", "--set", "max-model-len=50000",
            "--timeout", str(BOOT_S), timeout=SERVE_S)
    run_dir = max((sm121_home / "runs").glob("tiny-cpu-b-agent-*"),
                  key=lambda p: p.stat().st_mtime)
    engine = TinyEngine(base_url=f"http://127.0.0.1:{port}", model="tiny-b",
                        run_id=run_dir.name, port=port, run_dir=run_dir)
    try:
        yield engine
    finally:
        run_cli("stop", engine.run_id, check=False)


# The session engines: a test that uses one of these is in the first engine session.
_SESSION_ENGINES = frozenset({"tiny_engine", "replica_b", "toolless_boot"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`own_engines` and `beside_unit` files run in sessions of their own beside the session
    engine's (scripts/test-tiers.sh): one that asked for a session engine would boot it a
    second time there, the cost the split is meant to save."""
    wrong = sorted({item.nodeid.split("::")[0] for item in items
                    if (item.get_closest_marker("own_engines")
                        or item.get_closest_marker("beside_unit"))
                    and _SESSION_ENGINES & set(getattr(item, "fixturenames", ()))})
    if wrong:
        raise pytest.UsageError(
            f"{', '.join(wrong)}: marked own_engines or beside_unit but uses a session engine "
            f"({', '.join(sorted(_SESSION_ENGINES))}); drop the marker or the fixture")
