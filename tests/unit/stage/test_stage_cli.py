"""`sm121 stage`'s arguments are checked before any node is reached, and its progress line
reads as bytes, rate and ETA per node and in total."""

from __future__ import annotations

import pytest
from support import invoke_cli

from sm121.cli.stage import progress_line
from sm121.stage.progress import NodeProgress, Snapshot


@pytest.mark.parametrize(("args", "message"), [
    (["--what", "weights,bogus"], "unknown part(s) ['bogus']"),
    (["--link", "wifi"], "--link wifi"),
    (["--via", "scp"], "--via scp"),
    (["--profile", "agnet"], "no profile 'agnet' in recipe tiny-cpu"),
])
def test_bad_arguments_are_refused_with_the_allowed_values(args: list[str], message: str) -> None:
    done = invoke_cli("stage", "tiny-cpu", "--cluster", "/nonexistent.yaml", *args, check=False)
    assert done.returncode == 2 and message in done.stderr


def test_a_native_recipe_has_no_image_to_stage() -> None:
    done = invoke_cli("stage", "tiny-cpu", "--cluster", "/nonexistent.yaml", "--what", "image",
                      check=False)
    assert done.returncode == 2 and "runs natively, with no image" in done.stderr


def test_the_progress_line_has_bytes_rate_and_eta() -> None:
    snap = Snapshot(nodes=(NodeProgress("spark2", "spark1", 500_000_000, 2_000_000_000,
                                        100e6, 15.0),),
                    done_bytes=500_000_000, total_bytes=2_000_000_000, rate_bps=100e6,
                    eta_s=15.0, elapsed_s=5.0)
    assert progress_line(snap) == ("stage 5s: 0.50 GB of 2.00 GB (25%), 100 MB/s, ETA 15s | "
                                   "spark2<-spark1 25% 100 MB/s ETA 15s")
