"""One duration grammar for --duration, --report-every (bench soak) and --budget (tune)."""

import pytest

from sm121.durations import parse_duration
from sm121.errors import Sm121Error


@pytest.mark.parametrize(("text", "seconds"), [
    ("600", 600), ("90s", 90), ("25m", 1500), ("72h", 72 * 3600), ("1d", 86400),
    ("1h30m", 5400), ("1d2h", 93600), (" 2.5m ", 150), ("0.5h", 1800)])
def test_durations_in_every_spelling_the_options_document(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["soon", "", "0", "0m", "30m1h", "1h1h", "m", "-5m", "5 m x"])
def test_anything_else_is_refused_naming_the_option(text):
    with pytest.raises(Sm121Error, match="--budget") as refused:
        parse_duration(text, "--budget")
    assert "1h30m" in str(refused.value.hint)
