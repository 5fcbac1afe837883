"""The goodput target: the share of an agents run's judged turns that must meet the SLO.

One number for the verdict that judges a measured run (memory/verdict.py), for the models
that predict from how many agents a resource misses it (memory/long_job_window.py,
memory/cold_start.py) and for tune's ranking of arms (bench/tune/pick.py): a model that bound
at another share than the verdict judges by would predict a cliff no run could confirm.
Pure, no I/O.
"""

from __future__ import annotations

GOODPUT_TARGET = 0.95  # the cliff: the smallest N with goodput under 95%


def goodput_of(misses: float, judged: int) -> float:
    """The share of judged turns that met the SLO (all of none judged)."""
    return 1 - misses / judged if judged else 1.0
