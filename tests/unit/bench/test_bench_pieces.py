"""Pure pieces of the scenarios: metrics parsing, locality placement, needles and scores."""

import pytest

from sm121.bench.scenarios.locality.run import place
from sm121.bench.scenarios.retrieval.run import haystack, score
from sm121.bench.server import counter_deltas, spec_acceptance
from sm121.engines.prometheus import metric_labels, parse_metrics

METRICS = """# HELP vllm:prefix_cache_hits_total hits
vllm:prefix_cache_hits_total{engine="0",model_name="tiny"} 10.0
vllm:prefix_cache_hits_total{engine="1",model_name="tiny"} 5.0
vllm:prefix_cache_queries_total{engine="0",model_name="tiny"} 30.0
vllm:spec_decode_num_draft_tokens_total{engine="0"} 100
vllm:spec_decode_num_accepted_tokens_total{engine="0"} 71
vllm:cache_config_info{block_size="128",enable_prefix_caching="True"} 1.0
"""


def test_metrics_sum_over_label_sets_and_deltas_belong_to_the_interval():
    before = parse_metrics(METRICS)
    assert before["vllm:prefix_cache_hits_total"] == 15.0
    after = {**before, "vllm:prefix_cache_hits_total": 25.0}
    assert counter_deltas(before, after)["vllm:prefix_cache_hits_total"] == 10.0


def test_speculative_acceptance_from_counter_deltas():
    zero = {k: 0.0 for k in parse_metrics(METRICS)}
    assert spec_acceptance(counter_deltas(zero, parse_metrics(METRICS))) == pytest.approx(0.71)
    assert spec_acceptance({}) is None


def test_info_labels_are_read():
    assert metric_labels(METRICS, "vllm:cache_config_info")["block_size"] == "128"


@pytest.mark.parametrize("placement", ["clean", "bottom", "middle", "top"])
def test_the_mutating_field_sits_where_asked(placement):
    body = " ".join(f"w{i}" for i in range(100))
    prompt = place(placement, "[salt]\n", body, "[now: 1]")
    assert prompt.startswith("[salt]\n")
    if placement == "clean":
        assert "[now" not in prompt
    else:
        at = prompt.index("[now: 1]") / len(prompt)
        expected = {"top": (0, 0.1), "middle": (0.4, 0.6), "bottom": (0.9, 1.0)}[placement]
        assert expected[0] <= at <= expected[1]


def test_needles_land_at_their_depths_and_scores_see_distractors():
    words = ["w"] * 1000
    text = haystack(words, [(0.08, "NEEDLE"), (0.92, "OTHER")])
    assert 0.05 < text.index("NEEDLE") / len(text) < 0.11
    assert 0.89 < text.index("OTHER") / len(text) < 0.95
    assert score("code ABC123 and XYZ789", "ABC123", ["XYZ789"]) == (True, ["XYZ789"])
