"""An agent-check report as Markdown (the JSON is the record; this is for people)."""

from __future__ import annotations

from sm121.bench.scenarios.agent_check.report_file import AgentCheckReport

MARK = {"pass": "pass", "fail": "**FAIL**", "unsupported": "unsupported"}


def markdown(report: AgentCheckReport) -> str:
    counts = report.summary
    lines = [
        f"# agent-check: {report.target}",
        "",
        f"Protocol `{report.api}`; model `{report.model}`, max_model_len "
        f"{report.max_model_len}; "
        f"{counts.pass_} pass, {counts.fail} fail, {counts.unsupported} unsupported "
        f"in {report.elapsed_s} s.",
        "",
        "| case | result | why |",
        "|---|---|---|",
    ]
    for case in report.cases:
        lines.append(f"| {case.name} | {MARK[case.status]} | {_cell(case.reason)} |")
    lines += ["", "## Evidence", ""]
    for case in report.cases:
        lines.append(f"### {case.name}: {case.status.value}")
        for ex in case.evidence:
            lines.append(f"- `{ex.method} {ex.path}` -> {ex.status}")
            if ex.request:
                lines.append(f"  - request: `{_cell(ex.request)}`")
            lines.append(f"  - reply: `{_cell(ex.reply)}`")
        lines.append("")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").replace("`", "'")
