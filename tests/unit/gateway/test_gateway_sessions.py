"""Session identity: header, then the user field, then a hash that ignores the system prompt."""

from __future__ import annotations

from sm121.gateway.sessions import session_id


def _chat(system: str, user: str) -> dict:
    return {"model": "m", "messages": [{"role": "system", "content": system},
                                       {"role": "user", "content": user}]}


def test_header_wins() -> None:
    assert session_id({"x-session-id": "agent 7"}, {"user": "u"}) == "h:agent_7"


def test_user_field_next() -> None:
    assert session_id({}, {"user": "alice"}) == "u:alice"


def test_hash_ignores_a_changing_system_prompt() -> None:
    first = session_id({}, _chat("time: 10:00", "fix the bug"))
    later = session_id({}, _chat("time: 10:05", "fix the bug"))
    assert first == later and first.startswith("sha:")


def test_different_tasks_are_different_sessions() -> None:
    assert session_id({}, _chat("s", "task one")) != session_id({}, _chat("s", "task two"))


def test_long_or_odd_ids_are_made_label_safe() -> None:
    value = session_id({"x-session-id": "a\"b\n" + "z" * 200}, {})
    assert '"' not in value and "\n" not in value and len(value) <= 66
