"""Over the committed CPU tune (docs/results/cpu-testbed/tune): repetitions on one boot are
salted apart (a later repetition's sessions open with nothing from the prefix cache, as the
first's do), the test of a later repetition against its boot's first finds no systematic
difference, and the tune ranks agent-admission above agent as `bench ab` did
(docs/results/cpu-testbed/eager-engine). The analysis is printed (pytest -s shows it)."""

from pathlib import Path

from sm121.bench.boot_effect import boot_effects, describe
from sm121.bench.results import load_results
from sm121.bench.scenarios.agents.models import AgentsAbEntry

RUN = Path(__file__).parents[3] / "docs/results/cpu-testbed/tune"


def _ab() -> dict:
    return load_results(RUN / "ab-agents.json.gz")


def test_every_repetition_on_a_boot_starts_from_a_cold_prefix_cache():
    samples = [s for s in _ab()["samples"] if not s.get("error")]
    assert {s["rep_on_boot"] for s in samples} == {0, 1, 2}
    for sample in samples:
        firsts = [t for t in sample["samples"] if t.get("kind") == "turn" and t["turn"] == 0]
        background = [t for t in sample["samples"] if t.get("kind") == "background"]
        assert firsts and background
        assert all(t["cached_tokens"] == 0 for t in firsts + background), sample["profile"]


def test_a_later_repetition_on_a_boot_does_not_differ_systematically_from_its_first():
    effects = boot_effects([AgentsAbEntry.model_validate(s) for s in _ab()["samples"]], ["goodput", "ttft_p95_judged_s",
                                              "background_ttft_s"])
    for line in describe(effects):
        print(line)
    assert all(e.n == 6 for e in effects.values())  # 3 boots x (2nd, 3rd) vs 1st
    assert not any(e.verdict.startswith("systematic") for e in effects.values())


def test_the_tune_ranks_agent_admission_above_agent_as_bench_ab_did():
    import json

    state = json.loads((RUN / "tune.json").read_text())
    ranking = state["result"]["ranking"]
    assert ranking.index("agent-admission") < ranking.index("agent")
    eager = json.loads((RUN.parent / "eager-engine" / "agents-after.json").read_text())
    assert eager["verdict"]["best"] == "agent-admission"
