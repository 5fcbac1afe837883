"""The second line of defence behind the checks at load: the rendered scripts quote every
value even when handed a hostile one, ssh never reads a target as an option, and the
ControlMaster folder is private."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from sm121.errors import Sm121Error
from sm121.hosts import transport
from sm121.hosts.transport import LocalTransport, SshTransport
from sm121.launch import runtimes

HOSTILE_CONTAINER = 'x"; fi; touch {mark}; if false; then echo "'


def _stand_in_docker(folder: Path) -> dict[str, str]:
    """A stand-in `docker` on PATH (no docker engine runs here): `container inspect` finds the
    container, so the start script takes its "already exists" branch, the one that once
    echoed the name unquoted; every other call succeeds."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text("#!/bin/sh\nexit 0\n")
    docker.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def test_a_hostile_container_name_is_only_ever_text_in_the_docker_script(tmp_path: Path) -> None:
    mark = tmp_path / "MARK"
    name = HOSTILE_CONTAINER.format(mark=mark)
    files = runtimes.NodeFiles(run_dir=str(tmp_path / "run"))
    script = runtimes.docker_start_script(["docker", "run", "-d", "--name", name, "img"], name,
                                          files)
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True,
                          env=_stand_in_docker(tmp_path), timeout=30)
    assert done.returncode == 3 and "already exists" in done.stderr
    assert name in done.stderr  # printed as it is, never run
    assert not mark.exists()


def test_hostile_values_in_the_native_script_stay_text(tmp_path: Path) -> None:
    mark = tmp_path / "MARK"
    files = runtimes.NodeFiles(run_dir=str(tmp_path / "run"))
    hostile = f"$(touch {mark})`touch {mark}`;touch {mark}"
    script = runtimes.native_start_script(["sh", "-c", 'echo "$V"', hostile], {"V": hostile},
                                          files)
    started = LocalTransport().run(["sh", "-c", script])
    assert started.ok, started.stderr
    pid = int(started.stdout.split()[0])
    for _ in range(50):
        if Path(files.log).read_text():
            break
        subprocess.run(["sleep", "0.1"], check=True)
    assert Path(files.log).read_text().strip() == hostile
    assert not mark.exists() and pid > 0


def test_ssh_ends_its_options_before_the_target() -> None:
    argv = SshTransport(target="ops@spark2").ssh_argv()
    assert argv[-2:] == ["--", "ops@spark2"]


@pytest.mark.parametrize("target", ["-oProxyCommand=touch /tmp/x", "host -oProxyCommand=x",
                                    "a\tb", "", "h\n"])
def test_ssh_targets_that_ssh_could_read_as_options_are_refused(target: str) -> None:
    with pytest.raises(Sm121Error, match="ssh target"):
        SshTransport(target=target, name="n1")


def test_real_ssh_after_the_double_dash_takes_an_option_like_target_as_a_host(
        tmp_path: Path) -> None:
    """Even past the check, `--` alone keeps ssh from running a ProxyCommand."""
    mark = tmp_path / "MARK"
    safe = SshTransport(target="placeholder")
    argv = [*safe.ssh_argv()[:-1], f"-oProxyCommand=touch {mark}", "true"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 255 and not mark.exists()


def test_the_control_folder_is_private_and_owned(tmp_path: Path) -> None:
    folder = tmp_path / "ssh"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    assert transport.private_dir(folder) == folder
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    planted = tmp_path / "planted-ssh"
    planted.symlink_to(folder)  # a link someone else could have made: never followed
    with pytest.raises(Sm121Error, match="not a folder owned by this user"):
        transport.private_dir(planted)


def test_a_long_home_gets_a_fresh_mkdtemp_folder(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SM121_HOME", str(tmp_path / ("long-" * 10)))
    monkeypatch.setattr(transport, "_short_dir", None)
    folder = transport.control_dir()
    try:
        assert folder.name.startswith("sm121-ssh-") and f"-{os.getuid()}-" not in folder.name
        info = folder.stat()
        assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.getuid()
        assert transport.control_dir() == folder  # one per process
        assert len(f"{folder}/{'x' * 40}-{os.getpid()}.abcdefghijklmnop") < 108
    finally:
        folder.rmdir()
