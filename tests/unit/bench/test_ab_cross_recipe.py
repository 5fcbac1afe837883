"""`sm121 bench ab RECIPE:PROFILE,RECIPE:PROFILE`: an A/B across recipes (and engines), each name
booted from its own recipe's profile."""

from __future__ import annotations

import pytest

from sm121.bench.ab import cross_recipe
from sm121.errors import Sm121Error


def test_pairs_name_their_recipe_and_profile() -> None:
    recipe, names, recipes, variants = cross_recipe("tiny-cpu:agent, tiny-llamacpp:agent")
    assert recipe == "tiny-cpu" and names == ["tiny-cpu:agent", "tiny-llamacpp:agent"]
    assert recipes == {"tiny-cpu:agent": "tiny-cpu", "tiny-llamacpp:agent": "tiny-llamacpp"}
    assert variants["tiny-llamacpp:agent"] == ("agent", {})


@pytest.mark.parametrize("text", ["tiny-cpu:agent", "tiny-cpu:agent,tiny-llamacpp",
                                  "a:b:c,d:e", ":agent,x:y"])
def test_what_is_not_two_or_more_pairs_is_refused(text: str) -> None:
    with pytest.raises(Sm121Error):
        cross_recipe(text)
