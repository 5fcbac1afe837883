"""What one device call carries, and how large prepare.sh's folders may be so that each fits.

A device call carries the working tree (tracked files, untracked files git does not ignore,
and a shared/ folder where the checkout has one) plus the folders named in its carry, at most
64 MiB in all. prepare.sh packs the GPU wheels into ignored folders .gpu1, .gpu2, ...; each is
carried by one call, so each may hold the transfer limit less the tree less a margin (the tree
grows between prepare.sh and the calls: a result committed, a log left untracked).

    python3 scripts/gpu/budget.py limit          # the largest folder prepare.sh may pack
    python3 scripts/gpu/budget.py pack SRC LIMIT # move SRC's files into .gpu1 .. .gpuN
    python3 scripts/gpu/budget.py check          # each call's carried size; exit 1 if over

Standard library only: it runs here and on the device machine's bare Python."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

TRANSFER_BYTES = 64 * 1024 * 1024  # one call's working tree plus its carried paths
MARGIN_BYTES = 2 * 1024 * 1024  # room for the tree to grow after prepare.sh
# Below this a folder holds little more than one large wheel: more calls, each a transfer.
MIN_FOLDER_BYTES = 32 * 1024 * 1024
FOLDER = re.compile(r"\.gpu[0-9]+")


class BudgetError(Exception):
    """The tree or a file leaves no folder that fits one call."""


def root() -> Path:
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True,
                         text=True, check=True, cwd=Path(__file__).parent).stdout.strip()
    return Path(top)


def travelling_files(checkout: Path) -> list[Path]:
    """The files every call sends: tracked, and untracked but not ignored (what the device
    call copies), and shared/ where the checkout has one, ignored or not."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True, cwd=checkout).stdout
    names = {name for name in listed.decode().split("\0") if name}
    shared = checkout / "shared"
    if shared.is_dir():
        names |= {str(p.relative_to(checkout)) for p in shared.rglob("*") if not p.is_dir()}
    return [checkout / name for name in sorted(names)]


def tree_bytes(checkout: Path) -> int:
    """Bytes of the working tree that travels (a link counts as the link, not its target;
    a tracked file deleted in the tree does not travel)."""
    return sum(p.lstat().st_size for p in travelling_files(checkout) if os.path.lexists(p))


def pack_limit(tree: int) -> int:
    """The largest folder one call can carry beside a tree of `tree` bytes."""
    limit = TRANSFER_BYTES - MARGIN_BYTES - tree
    if limit < MIN_FOLDER_BYTES:
        raise BudgetError(f"the working tree is {tree:,} bytes: a call's {TRANSFER_BYTES:,} "
                          f"leave {limit:,} for a folder (less than {MIN_FOLDER_BYTES:,}); "
                          "keep large files out of the tree (ignored, or carried)")
    return limit


def pack(sizes: dict[str, int], limit: int) -> list[list[str]]:
    """Greedy packing, largest first, into folders of at most `limit` bytes."""
    too_large = [name for name, size in sizes.items() if size > limit]
    if too_large:
        raise BudgetError(f"{', '.join(sorted(too_large))} alone exceed(s) {limit:,} bytes: "
                          "split them as prepare.sh splits the vLLM wheel")
    bins: list[tuple[list[int], list[str]]] = []
    for name in sorted(sizes, key=lambda n: (-sizes[n], n)):
        for used, names in bins:
            if used[0] + sizes[name] <= limit:
                used[0] += sizes[name]
                names.append(name)
                break
        else:
            bins.append(([sizes[name]], [name]))
    return [names for _, names in bins]


@dataclass(frozen=True)
class Call:
    carry: str  # the folder carried, "" for a call that carries none
    carry_bytes: int
    tree_bytes: int

    @property
    def total(self) -> int:
        return self.carry_bytes + self.tree_bytes

    @property
    def fits(self) -> bool:
        return self.total <= TRANSFER_BYTES


def folder_bytes(folder: Path) -> int:
    return sum(p.lstat().st_size for p in folder.rglob("*") if not p.is_dir())


def folders(checkout: Path) -> list[Path]:
    found = [p for p in checkout.iterdir() if p.is_dir() and FOLDER.fullmatch(p.name)]
    return sorted(found, key=lambda p: int(p.name[4:]))


def calls(tree: int, carried: dict[str, int]) -> list[Call]:
    """One call per packed folder, then the calls that carry nothing (the A/B's)."""
    return [*(Call(name, size, tree) for name, size in carried.items()), Call("", 0, tree)]


def _check(checkout: Path) -> int:
    tree = tree_bytes(checkout)
    found = {p.name: folder_bytes(p) for p in folders(checkout)}
    if not found:
        print("no .gpuN folders here: run `bash scripts/gpu/prepare.sh` first")
    for call in calls(tree, found):
        what = f"{call.carry} ({call.carry_bytes:,} bytes) + " if call.carry else "no carry + "
        verdict = "fits" if call.fits else "OVER"
        print(f"{what}tree ({call.tree_bytes:,}) = {call.total:,} of {TRANSFER_BYTES:,}: "
              f"{verdict}")
    return 0 if all(c.fits for c in calls(tree, found)) else 1


def _pack(source: Path, limit: int, checkout: Path) -> int:
    sizes = {p.name: p.stat().st_size for p in source.iterdir()}
    names = pack(sizes, limit)
    for index, group in enumerate(names, 1):
        target = checkout / f".gpu{index}"
        target.mkdir()
        for name in group:
            shutil.move(str(source / name), str(target / name))
    print(len(names), "folders")
    return 0


def main(argv: list[str]) -> int:
    checkout = root()
    try:
        if argv == ["limit"]:
            print(pack_limit(tree_bytes(checkout)))
            return 0
        if argv == ["check"]:
            return _check(checkout)
        if len(argv) == 3 and argv[0] == "pack":
            return _pack(Path(argv[1]), int(argv[2]), checkout)
    except BudgetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
