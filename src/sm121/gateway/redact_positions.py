"""Where each protocol puts a string that is structure, not content: the positions a redacted
capture keeps (gateway/redact.py). A position is the path from the document's root (a request
body, a response body, one SSE event's data), `[]` standing for any item of a list, so `role`
is kept in `messages[].role` and nowhere else: the same key inside a tool's input, a tool
call's arguments or a schema is user data and is redacted.

The protocols: OpenAI chat completions and completions, Anthropic Messages, OpenAI Responses
(requests, bodies and stream events), vLLM's /tokenize and error bodies. A position missing
here only costs a readable capture (the string becomes its length), never a leak."""

from __future__ import annotations

from dataclasses import dataclass, field

_CHAT_REQUEST = """
model tool_choice tool_choice.type service_tier reasoning_effort response_format.type
tools[].type messages[].role messages[].content[].type messages[].tool_calls[].id
messages[].tool_calls[].type messages[].tool_call_id request_id encoding_format
"""
_CHAT_RESPONSE = """
id object model system_fingerprint service_tier choices[].finish_reason
choices[].message.role choices[].message.tool_calls[].id choices[].message.tool_calls[].type
choices[].delta.role choices[].delta.tool_calls[].id choices[].delta.tool_calls[].type
"""
_MESSAGES_REQUEST = """
messages[].content[].id messages[].content[].tool_use_id messages[].content[].content[].type
messages[].content[].source.type messages[].content[].source.media_type
messages[].content[].cache_control.type system[].type system[].cache_control.type
tools[].cache_control.type thinking.type
"""
_MESSAGES_RESPONSE = """
type role stop_reason content[].type content[].id message.id message.type message.role
message.model message.stop_reason message.content[].type message.content[].id
content_block.type content_block.id delta.type delta.stop_reason error.type
"""
_RESPONSE_OBJECT = """
id object status model service_tier truncation tool_choice tool_choice.type tools[].type
previous_response_id reasoning.effort reasoning.summary text.format.type
incomplete_details.reason error.code output[].type output[].id output[].status
output[].role output[].call_id output[].content[].type
"""
_RESPONSES_REQUEST = """
input[].type input[].role input[].id input[].call_id input[].status input[].content[].type
"""
_RESPONSES_EVENTS = """
type item_id response_id item.type item.id item.status item.role item.call_id
item.content[].type part.type
"""
_ERRORS = "object type error.type error.code"


def _paths(*groups: str) -> frozenset[tuple[str, ...]]:
    return frozenset(tuple(p.replace("[]", ".[]").split(".")) for g in groups for p in g.split())


STRUCTURAL_PATHS = _paths(
    _CHAT_REQUEST, _CHAT_RESPONSE, _MESSAGES_REQUEST, _MESSAGES_RESPONSE, _RESPONSE_OBJECT,
    _RESPONSES_REQUEST, _RESPONSES_EVENTS, _ERRORS,
    # A Responses stream event carries the response object under `response`.
    " ".join(f"response.{p}" for p in _RESPONSE_OBJECT.split()))



@dataclass(frozen=True)
class Position:
    """A node of STRUCTURAL_PATHS as a tree: walked along with the document, so a string's
    position is known without building its path."""

    kept: bool = False  # a string here is structure
    children: dict[str, Position] = field(default_factory=dict)


def _tree(paths: frozenset[tuple[str, ...]], prefix: tuple[str, ...] = ()) -> Position:
    below = {p[len(prefix)] for p in paths if len(p) > len(prefix) and p[:len(prefix)] == prefix}
    return Position(prefix in paths, {name: _tree(paths, (*prefix, name)) for name in below})


STRUCTURAL_ROOT = _tree(STRUCTURAL_PATHS)

# Keys whose whole value is user data, wherever they are: a tool call's arguments (chat,
# Responses, their stream deltas), metadata maps. Under them every key and every scalar is
# redacted; only the shape (objects, lists, null) stays.
DATA_KEYS = frozenset({"arguments", "metadata"})
# `input` is user data below the root (a Messages tool_use block's input, the stream's
# content_block.input); at the root it is the Responses conversation or an embedding's text,
# walked by position like any other body.
DATA_BELOW_ROOT_KEYS = frozenset({"input"})

# Keys whose value is a JSON schema a client wrote (tool parameters, Messages input_schema,
# response formats, vLLM's guided_json): kept are the JSON-Schema keywords as keys, `type`
# values that are one of JSON Schema's type names, and booleans; every name a schema
# defines (its properties) and every other value is redacted.
SCHEMA_KEYS = frozenset({"parameters", "input_schema", "schema", "guided_json"})
SCHEMA_KEYWORDS = frozenset({
    "type", "properties", "patternProperties", "additionalProperties", "required", "items",
    "prefixItems", "enum", "const", "default", "description", "title", "examples", "format",
    "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
    "maxLength", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties",
    "anyOf", "oneOf", "allOf", "not", "if", "then", "else", "$ref", "$defs", "definitions",
    "dependentRequired", "dependentSchemas", "dependencies", "contains", "propertyNames",
    "unevaluatedProperties", "unevaluatedItems", "nullable", "strict", "$schema", "$id",
    "multipleOf", "contentMediaType", "contentEncoding", "readOnly", "writeOnly",
    "deprecated", "$comment",
})
SCHEMA_TYPE_NAMES = frozenset({"object", "array", "string", "number", "integer", "boolean",
                               "null"})
# JSON-Schema keywords whose map keys are the schema's own names: a property called
# `customer_ssn` says what the tool is about. The values are schemas again (or name lists).
SCHEMA_NAME_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions",
                              "dependentRequired", "dependentSchemas", "dependencies"})

# Lists of ints under these keys are token ids (or a token's UTF-8 bytes): decodable text.
TOKEN_ID_KEYS = frozenset({"prompt", "input", "input_ids", "token_ids", "prompt_token_ids",
                           "tokens", "bytes"})
# Maps whose keys are tokens, unless every key is one of the known fields.
TOKEN_MAP_KEYS = frozenset({"top_logprobs", "logit_bias", "prompt_logprobs"})
TOKEN_MAP_FIELDS = frozenset({"token", "logprob", "bytes", "top_logprobs", "rank",
                              "decoded_token"})
