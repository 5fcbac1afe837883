"""An agent-check report as Markdown (the JSON is the record; this is for people). The
endpoint's words (its model id, a case's reason, the excerpts of its replies) are a
stranger's: written through `display_markdown.inert`."""

from __future__ import annotations

from sm121.bench.scenarios.agent_check.report_file import AgentCheckReport
from sm121.display_markdown import document, inert

MARK = {"pass": "pass", "fail": "**FAIL**", "unsupported": "unsupported"}


def markdown(report: AgentCheckReport) -> str:
    counts = report.summary
    lines = [
        f"# agent-check: {inert(report.target)}",
        "",
        f"Protocol {inert(report.api, code=True)}; model {inert(report.model, code=True)}, "
        f"max_model_len {report.max_model_len}; "
        f"{counts.pass_} pass, {counts.fail} fail, {counts.unsupported} unsupported "
        f"in {report.elapsed_s} s.",
        "",
        "| case | result | why |",
        "|---|---|---|",
    ]
    for case in report.cases:
        lines.append(f"| {inert(case.name)} | {MARK[case.status]} | {inert(case.reason)} |")
    lines += ["", "## Evidence", ""]
    for case in report.cases:
        lines.append(f"### {inert(case.name)}: {case.status.value}")
        for ex in case.evidence:
            lines.append(f"- {inert(f'{ex.method} {ex.path}', code=True)} -> {ex.status}")
            if ex.request:
                lines.append(f"  - request: {inert(ex.request, code=True)}")
            lines.append(f"  - reply: {inert(ex.reply, code=True)}")
        lines.append("")
    return document("\n".join(lines))
