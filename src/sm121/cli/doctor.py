"""`sm121 doctor`: findings per node, each with severity, evidence and fix."""

from __future__ import annotations

import typer
from rich.table import Table
from rich.text import Text

from sm121.cli.options import CLUSTER, PROFILE, SET, TRUST
from sm121.cli.output import console, parse_sets, print_json
from sm121.display import plain
from sm121.doctor.model import DoctorReport
from sm121.doctor.run import DoctorRequest, run_doctor

STYLE = {"ok": "green", "info": "cyan", "warning": "yellow", "error": "red"}


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)


def doctor(
    cluster: str | None = CLUSTER,
    recipe: str | None = typer.Option(None, "--recipe", "-r", help="Check this recipe on the "
                                      "nodes: weights in page cache, GMU, the UMA gate."),
    profile: str | None = PROFILE,
    sets: list[str] | None = SET,
    root: str = typer.Option("/", "--root", help="Probe a saved /proc and /sys tree instead of "
                             "the live one (for post-mortems and tests)."),
    trust: bool = TRUST,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Check this machine (or every node of --cluster, over SSH): memory, weights in page
    cache, where the HF and JIT caches live (NFS, and over which link), NCCL variables against
    the interfaces and RDMA devices present, fabric values, GMU, and the UMA gate. Exits 1
    when any node has an error."""
    report = run_doctor(DoctorRequest(cluster=cluster, recipe=recipe, profile=profile,
                                      overrides=parse_sets(sets), root=root,
                                      trust=trust))
    if as_json:
        print_json(report.model_dump(mode="json") | {"has_errors": report.has_errors})
    else:
        print_report(report)
    if report.has_errors:
        raise typer.Exit(1)


def print_report(report: DoctorReport) -> None:
    if report.recipe:
        console.print(Text.assemble(("doctor", "bold"), plain(
            f" for {report.recipe} profile {report.profile or '-'}")))
    for note in report.notes:
        console.print(plain(f"note: {note}", None, keep_newlines=True))
    for node in report.nodes:
        style = STYLE[node.worst]
        console.print()  # a node's hostname and error come from the node: plain text
        console.print(Text.assemble(plain(node.node, style="bold"),
                                    plain(f" ({node.hostname or '?'}): "), (node.worst, style)))
        if node.error:
            console.print(plain(f"  could not probe: {node.error}", None, "red"))
            continue
        table = Table("check", "status", "evidence", show_header=False, box=None, padding=(0, 1))
        for check in node.checks:
            table.add_row(plain(check.check), Text(check.status, STYLE[check.status]),
                          plain(check.summary, None, keep_newlines=True))
        console.print(table)
        for check in node.checks:
            for finding in check.findings:
                color = STYLE[finding.severity.value]
                console.print(plain("  " + finding.render(), None, color, keep_newlines=True))
