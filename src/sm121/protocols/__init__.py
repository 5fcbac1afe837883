"""The API protocols, described once, on a low floor (only base modules and third-party
libraries below): chat completions, completions, Anthropic Messages and the Responses API.

- routes.py: each protocol's route, what bounds its output, its prompt field, its chat view
  and its error shapes (body and stream event); the table of generation routes
- requests.py: request bodies of a chat-form conversation in Messages and Responses
- stream_readers.py: a streamed reply read event by event into one chat-shaped record
  (text, tool calls, usage, token counts); token_ids.py: chat's token-id counting
- assembly.py: a whole stream assembled the way the SDKs do (agent-check's comparisons)
- usage.py: token counts from any protocol's usage; chat_view.py: any prompt in chat form
- sse.py: the server-sent-events parser every reader uses

The gateway, bench (agents, replay, the client) and agent-check all read it; the sending
(aiohttp, the gateway's relay) stays with them.
"""
