"""The GPU sitting's transfers fit: every device call carries the working tree plus at most one
folder prepare.sh packed, at most 64 MiB in all (scripts/gpu/budget.py). Fast: sizes come from
`git ls-files`, no folder is built."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts" / "gpu"


def _budget() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_budget", SCRIPTS / "budget.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


budget = _budget()


def test_the_tree_plus_the_largest_folder_fits_one_call() -> None:
    """Fails when the tree grows so much that prepare.sh's folders, packed to the budget's
    limit, would not leave the margin (or there is no usable folder at all)."""
    tree = budget.tree_bytes(ROOT)
    limit = budget.pack_limit(tree)
    assert tree + limit <= budget.TRANSFER_BYTES - budget.MARGIN_BYTES
    assert limit >= budget.MIN_FOLDER_BYTES
    for call in budget.calls(tree, {p.name: budget.folder_bytes(p)
                                    for p in budget.folders(ROOT)}):
        assert call.fits, call  # folders already packed here, with today's tree


def test_the_tree_counts_what_travels(tmp_path: Path) -> None:
    """Tracked and untracked-not-ignored files travel; ignored ones do not, but shared/ does."""
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)
    git("init", "-q")
    (tmp_path / ".gitignore").write_text("/.gpu1/\n/shared/\n")
    (tmp_path / "tracked").write_bytes(b"x" * 1000)
    git("add", ".gitignore", "tracked")
    (tmp_path / "untracked").write_bytes(b"x" * 200)
    (tmp_path / ".gpu1").mkdir()
    (tmp_path / ".gpu1" / "wheel").write_bytes(b"x" * 5000)
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "notes").write_bytes(b"x" * 30)
    assert budget.tree_bytes(tmp_path) == len("/.gpu1/\n/shared/\n") + 1000 + 200 + 30
    assert [p.name for p in budget.folders(tmp_path)] == [".gpu1"]


def test_the_old_fixed_size_would_not_have_fit() -> None:
    """The numbers that broke a sitting: 63,000,000-byte folders beside a 4.94 MB tree."""
    (old,) = [c for c in budget.calls(4_943_117, {".gpu1": 63_000_000}) if c.carry]
    assert not old.fits
    (new,) = [c for c in budget.calls(4_943_117, {".gpu1": budget.pack_limit(4_943_117)})
              if c.carry]
    assert new.fits and new.total == budget.TRANSFER_BYTES - budget.MARGIN_BYTES


def test_a_tree_too_large_for_any_folder_is_refused() -> None:
    with pytest.raises(budget.BudgetError, match="keep large files out of the tree"):
        budget.pack_limit(40 * 1024 * 1024)


def test_packing_keeps_every_folder_under_the_limit() -> None:
    sizes = {"a": 60, "b": 50, "c": 30, "d": 20, "e": 10, "f": 5}
    folders = budget.pack(sizes, 70)
    assert sorted(n for group in folders for n in group) == sorted(sizes)
    assert all(sum(sizes[n] for n in group) <= 70 for group in folders)
    assert folders[0] == ["a", "e"]  # largest first, then the first folder it fits in
    with pytest.raises(budget.BudgetError, match="big alone exceed"):
        budget.pack({"big": 71}, 70)


def test_prepare_check_prints_each_call_and_downloads_nothing() -> None:
    """`prepare.sh --check` is the dry check: the script's own path to budget.py."""
    done = subprocess.run(["bash", str(SCRIPTS / "prepare.sh"), "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"of {budget.TRANSFER_BYTES:,}: fits" in done.stdout
