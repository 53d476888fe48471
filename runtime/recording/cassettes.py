"""Existing recordings → exchanges: VCR.py / pytest-recording YAML cassettes, HAR 1.2, and the plain
JSON pair form ``{"request": {method, path, headers, body}, "response": {status, headers, body}}``
(one object or a list; a binary body is its base64 with ``"encoding": "base64"`` beside it).

Bodies may be text, JSON, base64 (HAR ``encoding``, YAML ``!!binary``) and gzip-compressed. YAML needs
PyYAML, which the ``record`` extra installs (``pip install 'mockllm[record]'``); HAR and JSON need
nothing. A file that is none of these raises :class:`~mockllm.errors.FileError` with one line."""

from __future__ import annotations

import base64
import binascii
import gzip
import json
from collections.abc import Mapping
from typing import Any

from mockllm.errors import FileError
from mockllm.runtime.recording.exchange import Exchange

__all__ = ["load_cassette"]


def load_cassette(name: str, data: bytes) -> list[Exchange]:
    """Every request/response pair in the file ``name`` (its bytes are ``data``), credentials removed.
    The format is told by the content: JSON (a HAR has ``log.entries``), else a YAML cassette."""
    text = data.decode("utf-8", "replace")
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            doc = json.loads(text)
        except ValueError as err:
            raise FileError(f"{name}: not valid JSON: {err}") from None
        if isinstance(doc, dict) and "log" in doc:
            return _har(name, doc)
        return _pairs(name, doc)
    return _vcr(name, text)


def _vcr(name: str, text: str) -> list[Exchange]:
    try:
        import yaml  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        raise FileError(f"{name}: reading YAML cassettes needs PyYAML: pip install 'mockllm[record]'") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        first = str(err).splitlines()[0] if str(err) else "syntax error"
        raise FileError(f"{name}: not a YAML cassette: {first}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("interactions"), list):
        raise FileError(f"{name}: not a VCR cassette (no `interactions:` list)")
    out = []
    for item in doc["interactions"]:
        if not isinstance(item, dict):
            continue
        req, resp = item.get("request") or {}, item.get("response") or {}
        if not isinstance(req, dict) or not isinstance(resp, dict):
            continue
        req_headers = _header_pairs(req.get("headers"))
        resp_headers = _header_pairs(resp.get("headers"))
        body = resp.get("body")
        if isinstance(body, dict):  # {string: TEXT | !!binary BYTES}, or {base64_string: B64}
            body = _b64(body["base64_string"]) if body.get("base64_string") else body.get("string")
        status = resp.get("status")
        code = status.get("code") if isinstance(status, dict) else status
        out.append(
            Exchange.of(
                str(req.get("method", "GET")),
                str(req.get("uri", "/")),
                req_headers,
                _bytes(req.get("body"), req_headers),
                _status(code),
                resp_headers,
                _bytes(body, resp_headers),
            )
        )
    return out


def _har(name: str, doc: Mapping[str, Any]) -> list[Exchange]:
    log = doc.get("log")
    entries = log.get("entries") if isinstance(log, dict) else None
    if not isinstance(entries, list) or not entries:
        raise FileError(f"{name}: a HAR file with no entries (nothing to import)")
    out = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        req, resp = entry.get("request") or {}, entry.get("response") or {}
        req_headers = _header_pairs(req.get("headers"))
        resp_headers = _header_pairs(resp.get("headers"))
        post = req.get("postData") or {}
        content = resp.get("content") or {}
        out.append(
            Exchange.of(
                str(req.get("method", "GET")),
                str(req.get("url", "/")),
                req_headers,
                _bytes(_encoded(post.get("text") or "", post), req_headers),
                _status(resp.get("status")),
                resp_headers,
                _bytes(_encoded(content.get("text") or "", content), resp_headers),
            )
        )
    return out


def _pairs(name: str, doc: Any) -> list[Exchange]:
    items = doc if isinstance(doc, list) else [doc]
    out = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("request"), dict):
            raise FileError(f'{name}: not a HAR file nor JSON pairs ({{"request": …, "response": …}})')
        req, resp = item["request"], item.get("response") or {}
        req_headers = _header_pairs(req.get("headers"))
        provider = item.get("provider")
        if isinstance(provider, str) and not any(k.lower() == "x-mockllm-provider" for k, _ in req_headers):
            # a pair that names its provider claims a path providers share (Mistral's is OpenAI's)
            req_headers.append(("x-mockllm-provider", provider))
        resp_headers = _header_pairs(resp.get("headers"))
        path = str(req.get("path") or req.get("url") or "/")
        if req.get("query") and "?" not in path:  # the query beside the path (`"query": "api-version=…"`)
            path += "?" + str(req["query"]).lstrip("?")
        # a binary body (an AWS event stream) travels as base64 in `body_b64`
        body = _b64(str(resp["body_b64"])) if "body_b64" in resp else _encoded(resp.get("body"), resp)
        out.append(
            Exchange.of(
                str(req.get("method", "POST")),
                path,
                req_headers,
                _bytes(_encoded(req.get("body"), req), req_headers),
                _status(resp.get("status")),
                resp_headers,
                _bytes(body, resp_headers),
            )
        )
    return out


def _status(status: Any) -> int:
    """A recorded status code (200 when the file has none)."""
    return status if isinstance(status, int) and not isinstance(status, bool) else 200


def _header_pairs(headers: Any) -> list[tuple[str, str]]:
    """Headers as (name, value) pairs from a HAR list, a VCR mapping of lists, or a plain mapping."""
    out: list[tuple[str, str]] = []
    if isinstance(headers, list):
        for h in headers:
            if isinstance(h, dict) and "name" in h:
                out.append((str(h["name"]), str(h.get("value", ""))))
    elif isinstance(headers, dict):
        for k, v in headers.items():
            for value in v if isinstance(v, list) else [v]:
                out.append((str(k), str(value)))
    return out


def _b64(text: str) -> bytes | str:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return text


def _encoded(body: Any, holder: Mapping[str, Any]) -> Any:
    """``body`` decoded when its holder says ``"encoding": "base64"`` (HAR's ``content`` and
    ``postData``, a JSON pair's ``request`` or ``response``): how binary bodies (AWS event streams,
    compressed bodies) travel in JSON."""
    if holder.get("encoding") == "base64" and isinstance(body, str):
        return _b64(body)
    return body


def _bytes(body: Any, headers: list[tuple[str, str]]) -> bytes:
    """A body as bytes: JSON values dumped, text encoded, gzip undone (by header or by magic)."""
    if body is None:
        return b""
    if isinstance(body, (dict, list)):
        return json.dumps(body).encode("utf-8")
    raw = body if isinstance(body, bytes) else str(body).encode("utf-8")
    gzipped = any(k.lower() == "content-encoding" and "gzip" in v.lower() for k, v in headers)
    if gzipped and not raw.startswith(b"\x1f\x8b") and isinstance(body, str):
        decoded = _b64(body)
        raw = decoded if isinstance(decoded, bytes) else raw
    if raw.startswith(b"\x1f\x8b"):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError):
            pass
    return raw
