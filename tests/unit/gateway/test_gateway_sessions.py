"""Session identity: header, then the user field, then a hash that ignores the system prompt."""

from __future__ import annotations

from sm121.gateway.sessions import client_digest, session_id


def _chat(system: str, user: str) -> dict:
    return {"model": "m", "messages": [{"role": "system", "content": system},
                                       {"role": "user", "content": user}]}


def test_header_wins() -> None:
    assert session_id({"x-session-id": "agent 7"}, {"user": "u"}) == \
        "h:" + client_digest("agent 7")


def test_user_field_next() -> None:
    assert session_id({}, {"user": "alice"}) == "u:" + client_digest("alice")


def test_a_client_id_is_kept_only_as_a_digest() -> None:
    """It becomes a metric label, a locality report row, a log word: never the raw id."""
    for headers, body in (({"x-session-id": "alice@example.com"}, {}),
                          ({}, {"user": "alice@example.com"})):
        value = session_id(headers, body)
        assert "alice" not in value and len(value) == 18
        assert value == session_id(headers, body)  # stable: turns group, affinity holds


def test_hash_ignores_a_changing_system_prompt() -> None:
    first = session_id({}, _chat("time: 10:00", "fix the bug"))
    later = session_id({}, _chat("time: 10:05", "fix the bug"))
    assert first == later and first.startswith("sha:")


def test_different_tasks_are_different_sessions() -> None:
    assert session_id({}, _chat("s", "task one")) != session_id({}, _chat("s", "task two"))


def test_long_or_odd_ids_are_made_label_safe() -> None:
    value = session_id({"x-session-id": "a\"b\n" + "z" * 200}, {})
    assert '"' not in value and "\n" not in value and len(value) <= 66
    # Ids that share their first 64 characters are still two sessions.
    assert value != session_id({"x-session-id": "a\"b\n" + "z" * 201}, {})
