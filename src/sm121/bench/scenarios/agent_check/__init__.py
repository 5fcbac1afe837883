"""`sm121 bench agent-check`: does a served endpoint work for real agent clients?

Tool calling with every tool_choice, streamed and parallel calls, tool results, reasoning
separation, usage, max_tokens / stop / seed, the endpoints agents call (/v1/models,
/tokenize, /v1/responses, /v1/messages) and the context limit. Each case reports pass, fail
or unsupported with the request, the status and a reply excerpt."""

from sm121.bench.scenarios.agent_check.runner import all_cases, run_agent_check

__all__ = ["all_cases", "run_agent_check"]

# The modules other packages may import (tests/unit/architecture/test_wings.py holds it);
# the rest are this package's own.
PUBLIC = ("report", "report_file", "scenario")
