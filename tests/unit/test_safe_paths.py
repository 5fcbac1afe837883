"""file_under: a file named after a stranger's value, in a folder that may be a stranger's,
stays inside that folder (sm121/safe_paths.py), whatever the value's own type let through."""

from __future__ import annotations

from pathlib import Path

import pytest

from sm121.errors import Sm121Error
from sm121.safe_paths import file_under


def test_plain_names_make_the_path_as_built(tmp_path: Path) -> None:
    out = tmp_path / "tune"
    assert file_under(out, "capacity", "chunk-4096-agents-16.json") == \
        out / "capacity" / "chunk-4096-agents-16.json"  # not resolved: recorded as built
    assert file_under(out, "tiny-cpu:agent-rep1.json").name == "tiny-cpu:agent-rep1.json"
    assert file_under(out, "llama.cpp-defaults-rep1.json").parent == out


@pytest.mark.parametrize("part", ["../../evil.json", "a/b", "..", ".", "", "x\n y", "a\x00b",
                                  "\x1b]0;pwn\x07", "-rf", ".hidden", "/etc/passwd", "a" * 256,
                                  "seqs\u202e-82"])
def test_a_part_that_is_not_one_plain_segment_is_refused(part: str, tmp_path: Path) -> None:
    with pytest.raises(Sm121Error, match="refused to build a path") as caught:
        file_under(tmp_path, "capacity", part)
    assert all(c.isprintable() for c in caught.value.message)  # the part spelled out


def test_a_link_that_leads_outside_the_folder_is_refused(tmp_path: Path) -> None:
    out, elsewhere = tmp_path / "tune", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "capacity").symlink_to(elsewhere)  # a folder handed over may hold links
    (out / "report.md").symlink_to(tmp_path / "victim.txt")  # dangling: written through
    for parts in (("capacity", "a-agents-4.json"), ("report.md",)):
        with pytest.raises(Sm121Error, match="refused to write"):
            file_under(out, *parts)
    (out / "inside").symlink_to(out / "capacity-real")  # a link that stays inside is fine
    assert file_under(out, "inside", "x.json") == out / "inside" / "x.json"
