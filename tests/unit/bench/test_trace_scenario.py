"""`bench trace`'s pure parts: the trace file read line by line with errors that name the
line, prompts whose shared hash_ids are the same tokens, lengths scaled with the block, and
the prefix-cache hits a trace implies (on a small generated Mooncake-format trace whose
reuse is known by construction)."""

from __future__ import annotations

import json

import pytest
from support import invoke_cli
from support.mooncake import conversation_trace, jsonl

from sm121.bench import scenarios
from sm121.bench.scenarios.trace.blocks import (
    BlockTokens,
    implied_hits,
    scaled_length,
    token_pool,
    trace_reuse_share,
)
from sm121.bench.scenarios.trace.format import TraceRequest, load_trace, parse_lines
from sm121.bench.scenarios.trace.models import TraceSample
from sm121.errors import Sm121Error

MOONCAKE_README = ('{"timestamp": 27482, "input_length": 6955, "output_length": 52, '
                   '"hash_ids": [46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 2353, 2354]}')


def _requests(**kwargs: int) -> list[TraceRequest]:
    return parse_lines(jsonl(conversation_trace(**kwargs)).splitlines(), "t.jsonl")


def test_the_mooncake_readme_sample_reads():
    (request,) = parse_lines([MOONCAKE_README], "readme")
    assert request.input_length == 6955 and len(request.hash_ids) == 14


@pytest.mark.parametrize(("line", "says"), [
    ('{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [0]}',
     "1 hash_ids for 600 input tokens"),
    ('{"timestamp": 0, "input_length": 600, "output_length": 1}', "hash_ids: Field required"),
    ('{"timestamp": "0", "input_length": 6, "output_length": 1, "hash_ids": [0]}', "timestamp"),
    ('{"timestamp": -5, "input_length": 6, "output_length": 1, "hash_ids": [0]}', "timestamp"),
    ('{"timestamp": 0, "input_length": 6, "output_length": 1, "hash_ids": [-1]}',
     "non-negative"),
    ('{"timestamp": 0, "input_length": 6, "output_length": 1, "hash_ids": [1.5]}', "hash_ids"),
    ('[1, 2]', "not a Mooncake trace request"),
    ('{"timestamp": 0, ', "Invalid JSON"),
])
def test_a_bad_line_is_refused_naming_the_line(line, says):
    good = '{"timestamp": 0, "input_length": 6, "output_length": 1, "hash_ids": [0]}'
    with pytest.raises(Sm121Error) as caught:
        parse_lines([good, "", line], "t.jsonl")
    assert "t.jsonl:3:" in caught.value.message and says in caught.value.message


def test_timestamps_may_not_go_back_and_an_empty_file_is_refused(tmp_path):
    lines = ['{"timestamp": 9, "input_length": 6, "output_length": 1, "hash_ids": [0]}',
             '{"timestamp": 3, "input_length": 6, "output_length": 1, "hash_ids": [1]}']
    with pytest.raises(Sm121Error, match="t.jsonl:2: timestamp 3 is before"):
        parse_lines(lines, "t.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(Sm121Error, match="no requests"):
        load_trace(empty)
    with pytest.raises(Sm121Error, match="unknown trace format"):
        load_trace(empty, "sharegpt")


def test_limit_reads_only_the_first_requests(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(jsonl(conversation_trace()) + "not json\n")
    assert len(load_trace(path, limit=4)) == 4
    with pytest.raises(Sm121Error, match="t.jsonl:10:"):
        load_trace(path)


def test_shared_hash_ids_are_the_same_tokens_and_others_differ():
    first, second = _requests()[:2]  # [0, 1, 2] and [0, 3, 4]
    tokens = BlockTokens(token_pool(list(range(40))), 128, "run-a")
    a, b = tokens.prompt(first), tokens.prompt(second)
    assert len(a) == scaled_length(first, 128) == 281  # 2 blocks + 100 * 128/512
    assert a[:128] == b[:128] and a[128:256] != b[128:256]
    other_run = BlockTokens(token_pool(list(range(40))), 128, "run-b")
    assert other_run.prompt(first)[:128] != a[:128]  # runs never share the cache


def test_scaled_lengths_keep_the_block_count():
    request = TraceRequest(timestamp=0, input_length=513, output_length=1, hash_ids=(1, 2))
    assert scaled_length(request, 512) == 513
    assert scaled_length(request, 16) == 17  # 16.03 rounds to 16: still two blocks
    full = TraceRequest(timestamp=0, input_length=1024, output_length=1, hash_ids=(1, 2))
    assert scaled_length(full, 128) == 256


def test_implied_hits_of_a_conversation_trace():
    """3 sessions of 3 turns, block 0 shared by all, each turn its session's last prompt plus
    two blocks (the last cut to 100 of 512 tokens): worked out by hand."""
    requests = _requests()
    # trace blocks of 128 = engine blocks of 128: a cut last block (25 tokens) is not kept
    assert implied_hits(requests, 128, 128) == [0, 128, 128,  # block 0 after the first
                                                256, 256, 256,  # 0, 1 (2 was cut)
                                                512, 512, 512]  # 0-3 (4 was cut)
    # engine blocks of 16: the cut block's 16 whole tokens of 25 are kept and hit
    assert implied_hits(requests, 128, 16) == [0, 128, 128, 256 + 16, 256 + 16, 256 + 16,
                                               512 + 16, 512 + 16, 512 + 16]
    # blocks reused: 2 of 9 in turn 0, 3 x 3 of 15 in turn 1, 3 x 5 of 21 in turn 2
    assert trace_reuse_share(requests) == pytest.approx((2 + 9 + 15) / (9 + 15 + 21))


def test_a_whole_prompt_seen_before_still_computes_its_last_block():
    again = TraceRequest(timestamp=0, input_length=1024, output_length=1, hash_ids=(7, 8))
    assert implied_hits([again, again], 512, 128) == [0, 896]  # 1023 tokens in whole blocks


def test_a_prefix_only_hits_with_everything_before_it():
    a = TraceRequest(timestamp=0, input_length=1024, output_length=1, hash_ids=(1, 2))
    b = TraceRequest(timestamp=1, input_length=1024, output_length=1, hash_ids=(3, 2))
    assert implied_hits([a, b], 512) == [0, 0]


def test_a_sample_is_judged_by_its_record_keys():
    sample = TraceSample(request=0, scheduled=0, submitted=0.01, lag_s=0.01, ttft_s=0.5,
                         output_asked=8, blocks=1, implied_cached=0)
    assert sample.metric("ttft_s") == 0.5 and sample.metric("e2e_s") is None


def test_the_command_is_one_table_line_and_its_help_says_how_to_scale():
    assert scenarios.TABLE["trace"].module == "sm121.bench.scenarios.trace.scenario"
    out = invoke_cli("bench", "trace", "--help").stdout
    for flag in ("--url", "--format", "--speed", "--limit", "--block-tokens", "--max-output",
                 "--slo"):
        assert flag in out
    assert "Mooncake" in out and "scales every" in out


def test_a_bad_trace_fails_before_anything_is_sent(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"timestamp": 0, "input_length": 5000, "output_length": 1,
                                "hash_ids": [1]}) + "\n")
    # port 9 (discard) is never reached: the trace is refused first
    result = invoke_cli("bench", "trace", str(path), "--url", "http://127.0.0.1:9",
                        check=False)
    assert result.returncode == 2 and "bad.jsonl:1:" in result.stdout + result.stderr
    result = invoke_cli("bench", "trace", str(path), "--url", "http://127.0.0.1:9",
                        "--speed", "0", check=False)
    assert result.returncode == 2 and "--speed" in result.stdout + result.stderr


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(Sm121Error, match="cannot read the trace"):
        load_trace(tmp_path / "absent.jsonl")


def test_the_summary_says_how_many_requests_hit_less_than_implied():
    from sm121.bench.scenarios.trace.models import CacheHits, Percentiles, TraceSummary
    from sm121.bench.scenarios.trace.scenario import Trace

    summary = TraceSummary(
        requests=9, trace_s=8.0, wall_s=8.2, speed=1.0, block_tokens=128, engine_block=128,
        ttft_s=Percentiles(p50=0.03, p95=0.06, max=0.07), lag_s=Percentiles(p50=0, p95=0, max=0),
        slo="ttft_p95=2s", goodput=1.0, good_requests=9, slo_met=True,
        cache=CacheHits(prompt_tokens=4833, implied=2560, usage=2304, usage_vs_implied=0.9,
                        short_requests=1, engine_hits=2304, engine_vs_implied=0.9))
    lines = Trace().console(summary)
    assert "usage 2,304 (90.0% of implied; 1 requests below theirs)" in lines[2]
    assert "goodput 100.0% against ttft_p95=2s (met)" in lines[1]
