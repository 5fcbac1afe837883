"""The supervised side of `sm121 serve` and `sm121 logs --crash`."""

from __future__ import annotations

import time

from rich.text import Text

from sm121.cli.output import console, err_console
from sm121.display import plain
from sm121.launch import control
from sm121.plan.model import ServePlan
from sm121.recipes.schema import RestartPolicy
from sm121.runs.state import RunInfo, load_run


def print_supervised(plan: ServePlan) -> None:
    policy = plan.restart or RestartPolicy()
    console.print(f"supervised: a watchdog restarts the engine (at most {policy.max} "
                  f"restarts within {policy.within_s:g} s); `sm121 stop` stops both",
                  highlight=False)


def stay_supervised(run: RunInfo) -> None:
    err_console.print("foreground: Ctrl-C stops the engine and its watchdog")
    try:
        while control.watchdog_alive(load_run(run.run_id)):
            time.sleep(1)
        err_console.print(plain(f"the watchdog gave up: {load_run(run.run_id).failure}",
                                None, "red"))
    except KeyboardInterrupt:
        control.stop_run(load_run(run.run_id))
        err_console.print(f"stopped {run.run_id}")


def print_crashes(run: RunInfo) -> None:
    if not run.crashes:
        console.print(f"{run.run_id}: no crashes recorded"
                      + ("" if run.watchdog_pid else " (the run is not supervised)"))
        return
    for index, crash in enumerate(run.crashes, 1):
        then = "restarted" if crash.restarted else "not restarted (limit reached)"
        console.print(Text.assemble((f"crash {index}", "bold"), plain(
            f" at {crash.at}, start {crash.incarnation}, during {crash.during}: {crash.how}; "
            f"{then}", None)), soft_wrap=True)  # log lines stay whole, to grep and to copy
        console.print(f"  cause: {crash.cause}", highlight=False, markup=False, soft_wrap=True)
        for line in crash.excerpt:
            console.print(f"    {line}", highlight=False, markup=False, soft_wrap=True)
