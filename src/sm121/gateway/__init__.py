"""The agent gateway: an OpenAI-compatible proxy in front of the engine.

It applies the recipe's request policy (strip or reject parameters that hurt the engine),
admits requests through a fair queue and a long-prompt lane, watches prefix locality per
session, optionally captures raw traffic, and exposes its own Prometheus /metrics.
Streams pass through chunk by chunk; nothing is buffered.
"""
