"""The agent workload: presets and YAML files, fitting to max-model-len, exact token sizes,
the append-only property and a salt per session (not per turn)."""

from __future__ import annotations

import re

import pytest

from sm121.bench.scenarios.agents.conversation import Conversation, exact_text, tool_definitions
from sm121.bench.scenarios.agents.messages import wire
from sm121.bench.scenarios.agents.workload import PRESETS, fit, load_workload, turns_that_fit
from sm121.errors import Sm121Error

_TOKEN = re.compile(r"\w+|[^\w\s]")


async def count(text: str) -> int:
    """A word-and-punctuation tokenizer: deterministic, and not one token per character."""
    return len(_TOKEN.findall(text))


def small(**extra):
    base = {"system_prompt_tokens": 300, "task_tokens": 20,
            "tools": {"count": 3, "tokens_each": 15}, "append_tokens": [30, 60],
            "output_tokens": [4, 8], "think_time_s": 0}
    return load_workload("coding-agent").model_copy(update={}).model_validate(
        {**PRESETS["coding-agent"].model_dump(exclude_unset=True), **base, **extra})


def test_presets_load_and_carry_the_field_sizes():
    for name in PRESETS:
        assert load_workload(name).name == name
    coding = load_workload("coding-agent")
    assert coding.system_prompt_tokens + coding.tools.count * coding.tools.tokens_each >= 10_000
    assert load_workload("coding-agent-with-batch").background is not None
    assert load_workload("timestamp-first").timestamp_first


def test_fit_keeps_sizes_that_fit_and_shrinks_all_by_one_factor_otherwise():
    coding = load_workload("coding-agent")
    roomy = fit(coding, 131072, 6)
    assert roomy.system_prompt_tokens == coding.system_prompt_tokens
    assert roomy.fitted is not None and roomy.fitted.scale == 1.0
    tight = fit(coding, 8192, 6)
    assert tight.fitted is not None
    factor = tight.fitted.scale
    assert 0 < factor < 1
    assert tight.system_prompt_tokens == int(coding.system_prompt_tokens * factor)
    assert tight.needed(6) <= 0.9 * 8192
    batch = fit(load_workload("coding-agent-with-batch"), 65536, 6)
    assert batch.fitted is not None and batch.fitted.background_tokens is not None
    assert batch.fitted.background_tokens <= 0.75 * 65536
    large = fit(load_workload("coding-agent-with-batch"), 1 << 20, 6).fitted
    assert large is not None and large.background_tokens == 100_000


def test_turns_that_fit_grow_with_the_context():
    coding = load_workload("coding-agent")
    assert turns_that_fit(coding, 65536) < turns_that_fit(coding, 262144)


def test_a_yaml_workload_starts_from_a_preset_and_bad_fields_are_named(tmp_path):
    good = tmp_path / "mine.yaml"
    good.write_text("preset: coding-agent\nsystem_prompt_tokens: 5000\npaste: {share: 0.2}\n")
    workload = load_workload(str(good))
    assert (workload.name, workload.system_prompt_tokens, workload.paste.share) == \
        ("mine", 5000, 0.2)
    assert workload.tools.count == 20  # from the preset
    bad = tmp_path / "bad.yaml"
    bad.write_text("system_prompt_tokens: -3\nthink_time_s: [3, 1]\n")
    with pytest.raises(Sm121Error, match="system_prompt_tokens") as info:
        load_workload(str(bad))
    assert "think_time_s" in info.value.message
    with pytest.raises(Sm121Error, match="unknown workload"):
        load_workload("no-such-preset")


async def test_texts_are_exact_to_the_token():
    for tokens in (4, 7, 150, 1234):
        assert await count(await exact_text(count, tokens, "Tool output:\n", seed=tokens)) == \
            tokens
    tools = await tool_definitions(count, small())
    assert len(tools) == 3
    assert [await count(t.function.description or "") for t in tools] == [15, 15, 15]


async def _turns(conv: Conversation, turns: int) -> list[list[dict]]:
    await conv.open(count)
    sent = []
    for _ in range(turns):
        sent.append(wire(conv.request()))
        output, paste, appended, _think = conv.draw_turn()
        await conv.append(count, f"answer {conv.turn}", [], appended, paste)
    return sent


async def test_conversations_are_append_only_with_exact_sizes():
    workload = small()
    conv = Conversation(workload, salt="s1", seed=1)
    sent = await _turns(conv, 5)
    for earlier, later in zip(sent, sent[1:], strict=False):
        assert later[:len(earlier)] == earlier  # nothing before is ever rewritten
        assert len(later) == len(earlier) + 2  # the assistant's answer and a tool result
    assert await count(sent[0][0]["content"]) == workload.system_prompt_tokens
    assert await count(sent[0][1]["content"]) == workload.task_tokens
    results = [m["content"] for m in sent[-1][3::2]]
    sizes = [await count(r) for r in results]
    assert len(sizes) == 4 and all(30 <= n <= 60 for n in sizes)


async def test_salt_is_per_session_not_per_turn():
    workload = small()
    a = await _turns(Conversation(workload, salt="aaa", seed=1), 3)
    b = await _turns(Conversation(workload, salt="bbb", seed=2), 3)
    assert all(turn[0] == a[0][0] for turn in a)  # one session: the same opening every turn
    assert a[0][0]["content"].startswith("[session aaa]")
    assert b[0][0]["content"].startswith("[session bbb]")


async def test_timestamp_first_changes_only_the_opening_of_the_system_prompt():
    workload = small(timestamp_first=True)
    sent = await _turns(Conversation(workload, salt="t", seed=3), 3)
    openings = [turn[0]["content"].split("\n", 1) for turn in sent]
    assert len({stamp for stamp, _ in openings}) == 3  # a new timestamp every turn
    assert len({rest for _, rest in openings}) == 1
    assert sent[2][1:len(sent[1])] == sent[1][1:]  # the rest stays append-only


async def test_pastes_are_drawn_at_their_share():
    workload = small(paste={"share": 1.0, "tokens": 80})
    sent = await _turns(Conversation(workload, salt="p", seed=4), 2)
    pasted = sent[1][-1]["content"]
    assert pasted.startswith("Pasted file:") and await count(pasted) == 80
