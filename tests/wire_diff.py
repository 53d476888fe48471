"""Structural comparison of a mock's raw HTTP answer with a recorded real one.

Values are not compared, structure is: status; content-type and the other meaningful headers;
framing (JSON, SSE with or without ``event:`` lines, NDJSON, ``[DONE]``, line endings); the order of
event types with runs collapsed; per event type, every JSON key path with the set of JSON types
seen there; the values of enum-like keys; zero against non-zero token counts; and the shape of ids
(prefix, alphabet, length). Each difference is one line of text so that allow-lists and the
recordings' own ``not_counted`` rules can match it with a regular expression::

    key <path> <recorded types> <mock types> @<event>
    value <path> <recorded values> <mock values> @<event>
    zero <path> <recorded> <mock> @<event>
    id <path> <recorded shape> <mock shape> @<event>
    header <name> <recorded> <mock>
    framing <what> <recorded> <mock>
    order <recorded event order> | <mock event order>
    status <recorded> <mock>

``None`` stands for "absent". An AWS event stream (Bedrock) is read frame by frame with botocore's own
decoder, not mockllm's: each frame is an event named by its ``:event-type`` (or ``:exception-type``)
header, its ``:message-type`` and ``:content-type`` headers compared as values, and an
InvokeModelWithResponseStream ``chunk``'s base64 ``bytes`` decoded into the Anthropic event inside
(``chunk:<type>``)."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

# Transport and CDN noise, never compared (the recordings README lists them).
NOISE_HEADERS = frozenset(
    {
        "alt-svc",
        "strict-transport-security",
        "server-timing",
        "vary",
        "connection",
        "date",
        "server",
        "content-security-policy",
        "content-length",
        "transfer-encoding",
        "access-control-expose-headers",
        "x-robots-tag",
        "openai-organization",
        "set-cookie",
    }
)
# The request-id header each official SDK reads: compared even where the recorder stripped it.
REQUEST_ID_HEADERS = {
    "openai": "x-request-id",
    "responses": "x-request-id",
    "anthropic": "request-id",
    "azure": "x-request-id",
    "bedrock": "x-amzn-requestid",
}
# Known shapes of the request ids those SDKs expose (from the recordings and the SDK docs); Azure's
# and Bedrock's are UUIDs.
REQUEST_ID_SHAPES = {
    ("openai", "x-request-id"): "req_/hex/32",
    ("responses", "x-request-id"): "req_/hex/32",
    ("anthropic", "request-id"): "req_/b64/24",
    ("azure", "x-request-id"): "-/uuid/36",
    ("bedrock", "x-amzn-requestid"): "-/uuid/36",
}

ENUM_KEYS = frozenset(
    {
        "type",
        "role",
        "object",
        "status",
        "finish_reason",
        "stop_reason",
        "finishReason",
        "done_reason",
        "done",
        "phase",
        "modality",
    }
)
ID_KEYS = frozenset({"id", "call_id", "item_id", "tool_use_id", "responseId", "request_id", "toolUseId"})
ID_PREFIXES = ("chatcmpl-", "call_", "resp_", "fc_", "msg_", "rs_", "toolu_", "req_")


def _type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def id_shape(value: str) -> str:
    """``prefix/alphabet/length``: ``call_/b64/24``, ``msg_/hex/50``…"""
    prefix = next((p for p in ID_PREFIXES if value.startswith(p)), "")
    rest = value[len(prefix) :]
    if re.fullmatch(r"[0-9a-f]+", rest):
        alphabet = "hex"
    elif re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", rest):
        alphabet = "uuid"
    elif re.fullmatch(r"[0-9A-Za-z_-]+", rest):
        # letters and digits, maybe url-safe base64's `-` and `_`: random ids of that alphabet contain
        # those two only by chance, so they are one class
        alphabet = "b64"
    else:
        alphabet = "other"
    return f"{prefix or '-'}/{alphabet}/{len(rest)}"


class Shape:
    """What one answer looks like, structurally."""

    def __init__(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.framing: dict[str, str] = {}
        self.order: list[str] = []
        self.keys: dict[tuple[str, str], set[str]] = {}  # (event, path) -> JSON types
        self.values: dict[tuple[str, str], set[str]] = {}  # (event, path) -> enum values
        self.zeros: dict[tuple[str, str], set[str]] = {}  # (event, path) -> {"0", "n"}
        self.ids: dict[tuple[str, str], set[str]] = {}  # (event, path) -> id shapes

    def walk(self, event: str, value: Any, path: str = "") -> None:
        kind = _type(value)
        if path:
            self.keys.setdefault((event, path), set()).add(kind)
        if isinstance(value, dict):
            for k, v in value.items():
                self.walk(event, v, f"{path}.{k}" if path else k)
            return
        if isinstance(value, list):
            for v in value:
                self.walk(event, v, f"{path}[]")
            return
        leaf = path.rsplit(".", 1)[-1].removesuffix("[]")
        if leaf in ENUM_KEYS and isinstance(value, str | bool):
            self.values.setdefault((event, path), set()).add(json.dumps(value))
        if isinstance(value, int | float) and not isinstance(value, bool) and "token" in leaf.lower():
            self.zeros.setdefault((event, path), set()).add("0" if value == 0 else "n")
        if leaf in ID_KEYS and isinstance(value, str):
            self.ids.setdefault((event, path), set()).add(id_shape(value))


def _sse_events(text: str) -> tuple[list[tuple[str | None, str]], bool]:
    """(event name or None, data) per SSE event, and whether any ``event:`` line was seen."""
    events: list[tuple[str | None, str]] = []
    name: str | None = None
    data: list[str] = []
    named = False
    for line in re.split(r"\r\n|\r|\n", text):
        if not line:
            if data:
                events.append((name, "\n".join(data)))
            name, data = None, []
        elif line.startswith("event:"):
            name = line[6:].strip()
            named = True
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
    if data:
        events.append((name, "\n".join(data)))
    return events, named


def _event_name(provider: str, name: str | None, payload: Any) -> str:
    if isinstance(payload, dict) and isinstance(payload.get("type"), str):
        return str(payload["type"])
    if provider == "ollama" and isinstance(payload, dict):
        return "final" if payload.get("done") else "chunk"
    if isinstance(payload, dict) and "error" in payload:
        return "error"
    return name or "chunk"


def _event_stream(s: Shape, body: bytes) -> None:
    """An AWS event stream, decoded by botocore (what boto3 reads), frame by frame."""
    from botocore.eventstream import EventStreamBuffer

    s.framing["kind"] = "eventstream"
    buffer = EventStreamBuffer()
    buffer.add_data(body)
    for message in buffer:
        headers = {k: str(v) for k, v in message.headers.items()}
        event = headers.get(":event-type") or headers.get(":exception-type") or "frame"
        s.order.append(event)
        for name in (":message-type", ":content-type"):
            s.values.setdefault((event, f"<{name}>"), set()).add(json.dumps(headers.get(name)))
        s.keys.setdefault((event, "<headers>"), set()).add(",".join(sorted(headers)))
        payload = json.loads(message.payload) if message.payload else {}
        s.walk(event, payload)
        if event == "chunk" and isinstance(payload, dict) and isinstance(payload.get("bytes"), str):
            inner = json.loads(base64.b64decode(payload["bytes"]))
            name = f"chunk:{inner.get('type', '?')}"
            s.order[-1] = name
            s.walk(name, inner)


def shape_of(provider: str, status: int, headers: Mapping[str, str], body: str | bytes, stream: bool = False) -> Shape:
    """The shape of one answer. ``stream`` says how to read a body whose headers were not recorded;
    ``body`` is bytes for an AWS event stream, text otherwise."""
    s = Shape()
    s.status = status
    s.headers = {k.lower(): v for k, v in headers.items() if k.lower() not in NOISE_HEADERS}
    ctype = s.headers.get("content-type", "")
    if not ctype and stream:
        ctype = "application/x-ndjson" if provider == "ollama" else "text/event-stream"
    if "amazon.eventstream" in ctype:
        _event_stream(s, body if isinstance(body, bytes) else body.encode())
        return s
    if isinstance(body, bytes):
        body = body.decode()
    s.framing["line-ending"] = "crlf" if "\r\n" in body else "lf"
    if "event-stream" in ctype:
        events, named = _sse_events(body)
        s.framing["kind"] = "sse"
        s.framing["event-lines"] = "yes" if named else "no"
        s.framing["done-marker"] = "yes" if any(d.strip() == "[DONE]" for _, d in events) else "no"
        for name, data in events:
            if data.strip() == "[DONE]":
                continue
            payload = json.loads(data)
            event = _event_name(provider, name, payload)
            if name is not None and name != event:
                s.framing["event-name-mismatch"] = f"{name}!={event}"
            s.order.append(event)
            s.walk(event, payload)
    elif "ndjson" in ctype:
        s.framing["kind"] = "ndjson"
        for line in body.splitlines():
            if line.strip():
                payload = json.loads(line)
                event = _event_name(provider, None, payload)
                s.order.append(event)
                s.walk(event, payload)
    else:
        s.framing["kind"] = "json"
        payload = json.loads(body)
        s.order.append("body")
        s.walk("body", payload)
        # a JSON body's line endings are formatting, not framing
        s.framing.pop("line-ending")
    return s


def _collapse(order: Iterable[str]) -> list[str]:
    out: list[str] = []
    for kind in order:
        if not out or out[-1] != kind:
            out.append(kind)
    return out


def _fmt(values: set[str] | None) -> str:
    return "None" if values is None else "{" + ",".join(sorted(values)) + "}"


def compare(provider: str, recorded: Shape, mock: Shape, stripped: Iterable[str] = ()) -> list[str]:
    """Every structural difference, one line each (see the module docstring for the format)."""
    diffs: list[str] = []
    if recorded.status != mock.status:
        diffs.append(f"status {recorded.status} {mock.status}")
    diffs.extend(_header_diffs(provider, recorded, mock, stripped))
    for what in sorted(set(recorded.framing) | set(mock.framing)):
        a, b = recorded.framing.get(what), mock.framing.get(what)
        if a != b:
            diffs.append(f"framing {what} {a} {b}")
    rec_order, mock_order = _collapse(recorded.order), _collapse(mock.order)
    if rec_order != mock_order:
        diffs.append(f"order {' '.join(rec_order)} | {' '.join(mock_order)}")
    events = set(recorded.order) & set(mock.order)  # per-event comparisons where both sent the event
    for label, a_map, b_map in (
        ("key", recorded.keys, mock.keys),
        ("value", recorded.values, mock.values),
        ("zero", recorded.zeros, mock.zeros),
        ("id", recorded.ids, mock.ids),
    ):
        for event, path in sorted(set(a_map) | set(b_map)):
            if event not in events:
                continue
            a, b = a_map.get((event, path)), b_map.get((event, path))
            if label != "key" and (a is None or b is None):
                continue  # an absent key is already a `key` difference
            if a != b:
                diffs.append(f"{label} {path} {_fmt(a)} {_fmt(b)} @{event}")
    return diffs


def _stripped(name: str, stripped: Iterable[str]) -> bool:
    if name.startswith("cf-"):
        return True  # Cloudflare's own headers are CDN noise
    for rule in stripped:
        rule = rule.lower()
        if rule.startswith("all"):
            return True
        if rule.endswith("* (all)") and name.startswith(rule.split("*")[0]):
            return True
        if rule == name:
            return True
    return False


def _header_diffs(provider: str, recorded: Shape, mock: Shape, stripped: Iterable[str]) -> list[str]:
    diffs: list[str] = []
    stripped = list(stripped)
    body_only = any(r.lower().startswith("all") for r in stripped)
    if not body_only:
        rec_ct = recorded.headers.get("content-type")
        mock_ct = mock.headers.get("content-type")
        if (rec_ct or "").lower().replace(" ", "") != (mock_ct or "").lower().replace(" ", ""):
            diffs.append(f"header content-type {rec_ct!r} {mock_ct!r}")
        for name in sorted(recorded.headers):
            if name == "content-type" or name.startswith("cf-"):
                continue
            if name not in mock.headers:
                diffs.append(f"header {name} present None")
        for name in sorted(mock.headers):
            if name == "content-type" or name in recorded.headers or name.startswith("x-mockllm"):
                continue
            if _stripped(name, stripped) or name in NOISE_HEADERS:
                continue  # the recorder removed it: its presence in the mock says nothing
            if name in ("retry-after", "retry-after-ms"):
                continue
            diffs.append(f"header {name} None present")
    rid = REQUEST_ID_HEADERS.get(provider)
    # required where the real API sent it, or may have (the recorder stripped it); Azure's v1-route errors
    # come without one
    if rid is not None and recorded.status < 500 and (rid in recorded.headers or _stripped(rid, stripped) or body_only):
        value = mock.headers.get(rid)
        want = REQUEST_ID_SHAPES[(provider, rid)]
        got = id_shape(value) if value is not None else "None"
        if got != want:
            diffs.append(f"header {rid} {want!r} {got!r}")
    return diffs
