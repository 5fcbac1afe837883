"""The import graph of src/sm121, every import counted (function-level ones too, since they
only dodge a circle at import time): no circles, and the library never imports the CLI.
The floors below cli are at most 8 (issue 22 set 6; issue 31's serving layer adds one, issue
45's session admission (gateway -> memory) one more; `python scripts/look.py` shows the
chain). Every package sits on the floor the documented layout gives it (scripts/look.py's LAYOUT, described in docs/layout.md) and
imports only packages on lower floors."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

PROJECT = Path(__file__).resolve().parents[3]


def test_no_import_circles(look: ModuleType) -> None:
    assert look.circles(look.build(PROJECT / "src")) == []


def test_no_arrows_back_up_into_the_cli(look: ModuleType) -> None:
    assert look.arrows_up(look.build(PROJECT / "src")) == []


# Below cli; 9 before the structure work (bench -> monitor -> doctor -> ... -> base), 6 after
# it, 7 with serving/ between bench and what it starts (bench -> serving -> gateway | launch),
# 8 since the gateway's session admission counts working sets with memory/working_set.py, the
# count the capacity model shares (bench -> serving -> gateway -> memory -> plan -> ...).
MAX_FLOORS = 8


def test_at_most_eight_floors_below_the_cli(look: ModuleType, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    chain = look.floors(look.build(PROJECT / "src"))
    with capsys.disabled():
        print(f"\nfloors below cli: {len(chain)}: {' -> '.join(chain)}")
    assert chain and chain[-1] == "base"
    assert len(chain) <= MAX_FLOORS, " -> ".join(chain)


def test_every_package_imports_only_lower_floors_of_the_documented_layout(
        look: ModuleType) -> None:
    assert look.against_layout(look.build(PROJECT / "src")) == []


def test_docs_layout_names_every_package_of_the_layout(look: ModuleType) -> None:
    """docs/layout.md has one row per package, with the floor scripts/look.py checks."""
    text = (PROJECT / "docs" / "layout.md").read_text()
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 3 and cells[0].isdigit():
            rows[cells[1].strip("`").rstrip("/")] = int(cells[0])
    assert rows == look.LAYOUT


def test_a_function_level_import_closes_a_circle(look: ModuleType, tmp_path: Path) -> None:
    """The walk sees imports inside functions, relative ones resolved."""
    package = tmp_path / "sm121"
    (package / "a").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a" / "__init__.py").write_text("")
    (package / "a" / "one.py").write_text("from sm121.a.two import X\n")
    (package / "a" / "two.py").write_text("def f():\n    from .one import Y\nX = 1\n")
    (package / "lib.py").write_text("def g():\n    import sm121.cli.main\n")
    (package / "cli").mkdir()
    (package / "cli" / "__init__.py").write_text("")
    (package / "cli" / "main.py").write_text("from sm121 import lib\n")
    graph = look.build(tmp_path)
    assert look.circles(graph) == [["sm121.a.one", "sm121.a.two"],
                                   ["sm121.cli.main", "sm121.lib"]]
    assert look.arrows_up(graph) == [("sm121.lib", "sm121.cli.main")]
