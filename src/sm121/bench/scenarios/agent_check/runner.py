"""Run the agent conformance suite against one endpoint, case after case.

Cases run one at a time (they are small, and a result must not depend on what else the
server was doing); each gets its own evidence and a time limit, and a case that raises
something unexpected fails with that error instead of stopping the suite."""

from __future__ import annotations

import asyncio
import time

import aiohttp

from sm121.bench.scenarios.agent_check import (
    cases_api,
    cases_limits,
    cases_messages,
    cases_responses,
    cases_tools,
)
from sm121.bench.scenarios.agent_check.model import CaseFailed, CaseResult, CaseUnsupported, Status
from sm121.bench.scenarios.agent_check.probe import Case, Facts, Probe
from sm121.bench.scenarios.agent_check.report_file import AgentCheckReport, CaseCounts
from sm121.engines.client import EngineClient, max_model_len
from sm121.engines.registry import adapter_serving
from sm121.errors import Sm121Error
from sm121.model_names import MODEL_NAME_RULE, is_model_name
from sm121.progress import Progress, quiet
from sm121.protocols.assembly import MalformedStream

CASE_TIMEOUT_S = 900.0  # the near-limit prefill of a 65K prompt on a loaded CPU is minutes
APIS = ("chat", "messages", "responses")


def all_cases(long_tokens: int | None = None, api: str = "chat") -> dict[str, Case]:
    """The cases of one protocol: chat completions (with the endpoint-wide checks), Anthropic
    Messages or the Responses API, each as its agents run it."""
    if api == "messages":
        return {"api.models": cases_api.CASES["api.models"], **cases_messages.cases(long_tokens)}
    if api == "responses":
        return {"api.models": cases_api.CASES["api.models"],
                **cases_responses.cases(long_tokens)}
    if api != "chat":
        raise Sm121Error(f"agent-check has no protocol {api!r}", f"--api one of {', '.join(APIS)}")
    return {
        "api.models": cases_api.CASES["api.models"],
        **cases_tools.CASES,
        **{k: v for k, v in cases_api.CASES.items() if k != "api.models"},
        "limits.overflow-400": cases_limits.overflow(cases_limits.CHAT_ASK),
        "limits.long-input": cases_limits.long_input(cases_limits.CHAT_ASK, long_tokens),
    }


def select(cases: dict[str, Case], only: list[str] | None) -> dict[str, Case]:
    """Names or prefixes (`tools` picks every tools.* case)."""
    if not only:
        return cases
    chosen = {name: case for name, case in cases.items()
              if any(name == o or name.startswith(o.rstrip(".") + ".") for o in only)}
    if not chosen:
        raise Sm121Error(f"no agent-check case matches {', '.join(only)}",
                         f"cases: {', '.join(cases)}")
    return chosen


async def run_agent_check(url: str, model: str | None, *, api_key: str | None = None,
                          only: list[str] | None = None, long_tokens: int | None = None,
                          label: str | None = None, api: str = "chat",
                          progress: Progress = quiet) -> AgentCheckReport:
    """`label` names the target in the report instead of the URL (for committed results)."""
    cases = select(all_cases(long_tokens, api), only)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    timeout = aiohttp.ClientTimeout(total=CASE_TIMEOUT_S, sock_connect=30)
    started = time.time()
    # A connection per request. On the H200 (vLLM 0.21) the long-input case failed direct
    # with ServerDisconnectedError on its first request, a /tokenize sent right after the
    # overflow case's 400 to a 350 KB body: the engine had closed that kept-alive connection
    # after its answer and the client reused it. Through the gateway the same case passed:
    # the relay retries once, on a new connection, a reused one closed without a byte of
    # answer (forward.py). bench's own client already opens one per request (client.py).
    connector = aiohttp.TCPConnector(force_close=True)
    async with aiohttp.ClientSession(headers=headers, timeout=timeout,
                                     connector=connector) as session:
        facts = await learn_facts(session, url, model)
        results: list[CaseResult] = []
        try:
            for i, (name, case) in enumerate(cases.items()):
                progress(name, i, len(cases))
                results.append(await run_case(name, case, Probe(session, url, facts)))
        except asyncio.CancelledError:  # Ctrl-C: keep what was checked
            return report(label or url, facts, results, time.time() - started, api,
                          interrupted=True)
        progress("done", len(cases), len(cases))
    return report(label or url, facts, results, time.time() - started, api)


async def learn_facts(session: aiohttp.ClientSession, url: str, model: str | None) -> Facts:
    client = EngineClient(session, url)
    try:
        models = await client.models()
    except aiohttp.ClientError as exc:
        raise Sm121Error(f"cannot read {url}/v1/models: {exc}",
                         "check --url (and --api-key); `sm121 status` lists sm121's runs") from exc
    served = [m.get("id") for m in models.get("data") or [] if isinstance(m, dict)]
    if not served or (model is not None and model not in served):
        raise Sm121Error(f"{url}/v1/models serves {served}, not {model or 'a model'}",
                         "pass --model with one of them")
    chosen = model or str(served[0])
    if not is_model_name(chosen):
        # The served-model-name rule, as `sm121 connect` holds an endpoint's ids to it: the
        # id goes into every request and the report, so one that is not a model name is
        # refused by name (as repr) before any case runs.
        raise Sm121Error(f"{url}/v1/models lists the model id {chosen!r}, which is not a "
                         "model name: agent-check refuses to check it",
                         f"a model name is {MODEL_NAME_RULE}; rename the served model "
                         "(--served-model-name), or pick another with --model")
    card = next((m for m in models.get("data") or []
                 if isinstance(m, dict) and m.get("id") == chosen), {})
    engine = adapter_serving(card.get("owned_by"))
    return Facts(model=chosen, max_model_len=max_model_len(models, chosen),
                 engine=engine.label if engine else None,
                 forced_calls=engine.forced_calls if engine else None)


async def run_case(name: str, case: Case, probe: Probe) -> CaseResult:
    try:
        reason = await asyncio.wait_for(case(probe), CASE_TIMEOUT_S)
        return CaseResult(name, Status.PASS, reason, probe.evidence)
    except (CaseFailed, MalformedStream) as exc:
        return CaseResult(name, Status.FAIL, str(exc), probe.evidence)
    except CaseUnsupported as exc:
        return CaseResult(name, Status.UNSUPPORTED, str(exc), probe.evidence)
    except TimeoutError:
        return CaseResult(name, Status.FAIL, f"no answer within {CASE_TIMEOUT_S:.0f} s",
                          probe.evidence)
    except aiohttp.ClientError as exc:
        return CaseResult(name, Status.FAIL, f"connection failed: {exc!r}"
                          f"{await _engine_after(probe)}", probe.evidence)


async def _engine_after(probe: Probe) -> str:
    """Whether the server still answers after a dropped connection, on a new connection: a
    live engine means the connection, not the engine, failed."""
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as fresh, \
                fresh.get(f"{probe.base_url}/health") as response:
            return f"; /health after it, on a new connection: HTTP {response.status}"
    except (aiohttp.ClientError, TimeoutError) as exc:
        return f"; /health after it, on a new connection: {exc!r} (the server is gone)"


def report(target: str, facts: Facts, results: list[CaseResult], elapsed_s: float,
           api: str = "chat", *, interrupted: bool = False) -> AgentCheckReport:
    """The report file's model; `interrupted` is written only when true (Ctrl-C)."""
    counts = CaseCounts.model_validate(
        {s.value: sum(r.status is s for r in results) for s in Status})
    data = AgentCheckReport(kind="agent-check", api=api, target=target, model=facts.model,
                            max_model_len=facts.max_model_len,
                            elapsed_s=round(elapsed_s, 1), summary=counts,
                            cases=[r.record() for r in results])
    if interrupted:
        data.interrupted = True  # set, so the file says it
    return data
