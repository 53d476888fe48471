"""Gemini's Live API on the wire (``BidiGenerateContent``, a WebSocket, as google-genai's
``client.aio.live.connect(...)`` opens it): client messages read into the session and the driver's
actions, and a turn's beats framed as the server messages the real API sends (docs/realtime.md lists
them, and the facts relied on).

The client's first message is ``setup`` (model, generation config, instructions, tools, whether to
transcribe); the server answers ``setupComplete``. A turn is asked for by ``clientContent`` with
``turnComplete``, by ``realtimeInput`` text, or by the end of realtime audio (``audioStreamEnd`` or
``activityEnd``: mockllm detects no silence); a ``toolResponse`` continues the turn that called the
tools. The model's turn comes as ``serverContent`` messages (``modelTurn`` parts: text, or
``inlineData`` audio ``audio/pcm;rate=24000``; ``inputTranscription``/``outputTranscription`` when
the setup asked; ``generationComplete``; ``turnComplete`` with ``usageMetadata``) or as one
``toolCall`` (every function call with an ``id``, which the SDK needs to answer it), after which the
turn waits for the tool response.

Client messages may spell their top-level and inner keys in camelCase or snake_case (the SDK sends
``client_content`` over camelCase insides); server messages are camelCase only (the SDK treats a
message with no key it knows as an error). The real service reports a bad message, and every error,
by closing the socket with a code and a reason (1007 for an invalid argument, 1008 for a refusal,
1011 for the rest); the SDK raises ``errors.APIError(code, reason)`` on the next receive. mockllm does
the same: a close reason holds at most 123 bytes, so a long message is cut there (the journal keeps
it whole)."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from mockllm.errors import MockllmError
from mockllm.runtime.providers.gemini import _camel, _get, json_schema  # a field spelled either way
from mockllm.runtime.realtime import beats as b
from mockllm.runtime.realtime.protocol import Action, Cancel, Close, Frame, Out, Respond, Send
from mockllm.runtime.realtime.session import MAX_BUFFER_BYTES, Ask, Item, Output, Session, Settings, heard
from mockllm.runtime.request import Tool

DEFAULT_MODEL = "gemini-live-2.5-flash-preview"
OUTPUT_MIME = "audio/pcm;rate=24000"
#: the input audio rate when the MIME type names none (what the SDK's examples send)
INPUT_RATE = 16000
MESSAGES = ("setup", "clientContent", "realtimeInput", "toolResponse")
INVALID, REFUSED, INTERNAL = 1007, 1008, 1011
#: the longest close reason WebSocket allows, in bytes
MAX_REASON = 123
_RATE = re.compile(r"rate=(\d+)")
#: base64 longer than this is not kept in the journal's copy of a message
MAX_KEPT_DATA = 64


class LiveError(MockllmError):
    """A client message the service refuses: the socket closes with ``code`` and the message as reason."""

    def __init__(self, message: str, code: int = INVALID) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _obj(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise LiveError(f"Invalid JSON payload received. Invalid value at '{where}': expected an object.")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise LiveError(f"Invalid JSON payload received. Invalid value at '{where}': expected a list.")
    return value


def reason(text: str) -> str:
    """``text`` as a close reason: its first line, cut to :data:`MAX_REASON` bytes of UTF-8."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    raw = line.encode("utf-8")
    if len(raw) <= MAX_REASON:
        return line
    return raw[: MAX_REASON - 3].decode("utf-8", "ignore") + "..."


def close_code(status: int) -> int:
    """The close code the service reports an HTTP-like ``status`` with."""
    if status in (401, 403):
        return REFUSED
    if status >= 500 or status == 429:
        return INTERNAL
    return INVALID


def _pcm(inline: Mapping[str, Any], where: str) -> tuple[bytes, str]:
    data = _get(inline, "data")
    mime = _get(inline, "mimeType")
    if not isinstance(data, str):
        raise LiveError(f"Invalid JSON payload received. Invalid value at '{where}.data': expected base64 text.")
    try:  # google-genai sends URL-safe base64 (pydantic's), raw clients the standard alphabet
        raw = base64.b64decode(data.replace("-", "+").replace("_", "/") + "=" * (-len(data) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise LiveError(f"Invalid value at '{where}.data' (TYPE_BYTES), Base64 decoding failed.") from None
    return raw, mime if isinstance(mime, str) else ""


def _rate(mime: str) -> int:
    found = _RATE.search(mime)
    return int(found.group(1)) if found and int(found.group(1)) > 0 else INPUT_RATE


def _tools(value: Any) -> tuple[Tool, ...]:
    tools: list[Tool] = []
    for i, raw in enumerate(_list(value, "setup.tools")):
        declarations = _get(_obj(raw, f"setup.tools[{i}]"), "functionDeclarations")
        for j, decl in enumerate(_list(declarations, f"setup.tools[{i}].functionDeclarations")):
            where = f"setup.tools[{i}].functionDeclarations[{j}]"
            decl = _obj(decl, where)
            name = _get(decl, "name")
            if not isinstance(name, str) or not name:
                raise LiveError(f"Invalid JSON payload received. {where}.name: Name cannot be empty.")
            described = _get(decl, "description")
            schema = _get(decl, "parametersJsonSchema")
            if schema is None:
                schema = json_schema(_get(decl, "parameters") or {})
            params = schema if isinstance(schema, dict) else {}
            tools.append(Tool(name, described if isinstance(described, str) else "", params))
    return tuple(tools)


def _text(value: Any) -> str:
    """A ``systemInstruction``: a string, or a content whose text parts are joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        parts = _list(_get(value, "parts"), "setup.systemInstruction.parts")
        return "".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))
    return ""


class GeminiLive:
    """The Gemini Live protocol (:class:`~mockllm.runtime.realtime.protocol.RealtimeProtocol`)."""

    provider = "gemini"

    def failed(self, session: Session, status: int, message: str, code: str | None = None) -> list[Out]:
        return [Close(close_code(status), reason(message))]

    def open(self, session: Session, query: Mapping[str, str]) -> list[Frame]:
        return []  # the client speaks first (setup)

    def read(self, frame: Frame, session: Session, active: str | None) -> list[Action]:
        try:
            try:
                message = json.loads(frame)
            except (ValueError, UnicodeDecodeError, RecursionError):
                raise LiveError("Invalid JSON payload received. Each message must be one JSON object.") from None
            message = _obj(message, "message")
            fields = {_camel(key): value for key, value in message.items()}
            unknown = [key for key in fields if key not in MESSAGES]
            if unknown:
                raise LiveError(f'Invalid JSON payload received. Unknown name "{unknown[0]}": Cannot find field.')
            if len(fields) != 1:
                raise LiveError(
                    "Invalid JSON payload received. A message holds exactly one of setup, clientContent, "
                    "realtimeInput, toolResponse."
                )
            [(kind, body)] = fields.items()
            if kind == "setup":
                return self._setup(_obj(body, "setup"), session)
            if not session.wire.get("setup"):
                raise LiveError(f"mockllm: the first message must be setup, not {kind}.")
            if kind == "clientContent":
                return self._client_content(_obj(body, kind), session, active, message)
            if kind == "realtimeInput":
                return self._realtime_input(_obj(body, kind), session, active, message)
            return self._tool_response(_obj(body, kind), session, active, message)
        except LiveError as err:
            return [Close(err.code, reason(err.message))]

    # ---- client messages -----------------------------------------------------------------------------

    def _setup(self, setup: dict[str, Any], session: Session) -> list[Action]:
        if session.wire.get("setup"):
            raise LiveError("mockllm: setup is sent once, as the first message.")
        model = _get(setup, "model")
        if not isinstance(model, str) or not model:
            raise LiveError("Invalid JSON payload received. setup.model: Model name is required.")
        config = _obj(_get(setup, "generationConfig") or {}, "setup.generationConfig")
        modalities = [str(m).upper() for m in _list(_get(config, "responseModalities"), "responseModalities")]
        output: Output = "text" if modalities and "AUDIO" not in modalities else "audio"
        limit = _get(config, "maxOutputTokens")
        session.model = model.rsplit("models/", 1)[
            -1
        ]  # `models/M`; Vertex: `projects/P/locations/L/publishers/google/models/M`
        session.settings = Settings(
            instructions=_text(_get(setup, "systemInstruction")),
            tools=_tools(_get(setup, "tools")),
            output=output,
            max_output_tokens=limit if isinstance(limit, int) else None,
        )
        session.wire.update(
            setup=True,
            input_transcription=_get(setup, "inputAudioTranscription") is not None,
            output_transcription=_get(setup, "outputAudioTranscription") is not None,
            rate=INPUT_RATE,
        )
        return [Send((_dumps({"setupComplete": {}}),))]

    def _client_content(
        self, content: dict[str, Any], session: Session, active: str | None, message: Any
    ) -> list[Action]:
        for i, raw in enumerate(_list(_get(content, "turns"), "clientContent.turns")):
            turn = _obj(raw, f"clientContent.turns[{i}]")
            role = "assistant" if _get(turn, "role") == "model" else "user"
            texts: list[str] = []
            audio = 0
            for j, rawpart in enumerate(_list(_get(turn, "parts"), f"clientContent.turns[{i}].parts")):
                part = _obj(rawpart, f"clientContent.turns[{i}].parts[{j}]")
                where = f"clientContent.turns[{i}].parts[{j}]"
                if isinstance(_get(part, "text"), str):
                    texts.append(_get(part, "text"))
                elif _get(part, "inlineData") is not None:
                    raw_bytes, mime = _pcm(_obj(_get(part, "inlineData"), f"{where}.inlineData"), f"{where}.inlineData")
                    if mime.startswith("audio/"):
                        texts.append(heard(raw_bytes, _rate(mime)))
                        audio += len(raw_bytes)
                elif _get(part, "functionCall") is not None:
                    call = _obj(_get(part, "functionCall"), f"{where}.functionCall")
                    arguments = _dumps(_get(call, "args") or {})
                    name = str(_get(call, "name") or "")
                    call_id = str(_get(call, "id") or session.next_id("function-call-"))
                    session.add(
                        Item(session.next_id("item_"), "function_call", call_id=call_id, name=name, arguments=arguments)
                    )
                elif _get(part, "functionResponse") is not None:
                    answer = _obj(_get(part, "functionResponse"), f"{where}.functionResponse")
                    session.add(self._output(answer, session))
            if texts or audio:
                session.add(
                    Item(session.next_id("item_"), "message", role=role, text="".join(texts), audio_bytes=audio)
                )
        if _get(content, "turnComplete") is True:
            return self._respond(active, message)
        return []

    def _realtime_input(self, data: dict[str, Any], session: Session, active: str | None, message: Any) -> list[Action]:
        chunks = [_get(data, "audio")] if _get(data, "audio") is not None else []
        chunks += _list(_get(data, "mediaChunks"), "realtimeInput.mediaChunks")
        for chunk in chunks:
            pcm, mime = _pcm(_obj(chunk, "realtimeInput.audio"), "realtimeInput.audio")
            if not mime.startswith("audio/"):
                continue  # video and images: seen, not heard
            if len(session.audio) + len(pcm) > MAX_BUFFER_BYTES:
                raise LiveError(f"mockllm: the realtime audio of one turn holds at most {MAX_BUFFER_BYTES} bytes.")
            session.wire["rate"] = _rate(mime)
            session.audio += pcm
        actions: list[Action] = []
        if _get(data, "activityStart") is not None:
            session.audio.clear()
            if active is not None:  # the user speaks over the model: its turn is interrupted
                actions.append(Cancel())
        text = _get(data, "text")
        if isinstance(text, str) and text:
            session.add(Item(session.next_id("item_"), "message", role="user", text=text))
            return [*actions, *self._respond(active if not actions else None, message)]
        ended = _get(data, "audioStreamEnd") is True or _get(data, "activityEnd") is not None
        if ended and session.audio:
            pcm = bytes(session.audio)
            session.audio.clear()
            said = heard(pcm, int(session.wire.get("rate", INPUT_RATE)))
            session.add(Item(session.next_id("item_"), "message", role="user", text=said, audio_bytes=len(pcm)))
            session.wire["transcribe"] = said
            return [*actions, *self._respond(active if not actions else None, message)]
        return actions

    def _output(self, answer: Mapping[str, Any], session: Session) -> Item:
        call_id = _get(answer, "id")
        response = _get(answer, "response")
        output = response if isinstance(response, str) else _dumps(response if response is not None else {})
        name = _get(answer, "name")
        if not isinstance(call_id, str) or not call_id:  # the SDK always sends the id; a raw client may not
            call_id = next(
                (i.call_id for i in reversed(session.items) if i.kind == "function_call" and i.name == name), ""
            )
        return Item(session.next_id("item_"), "function_call_output", call_id=call_id, output=output)

    def _tool_response(self, data: dict[str, Any], session: Session, active: str | None, message: Any) -> list[Action]:
        answers = _list(_get(data, "functionResponses"), "toolResponse.functionResponses")
        if not answers:
            raise LiveError("Invalid JSON payload received. toolResponse.functionResponses: at least one is needed.")
        for i, raw in enumerate(answers):
            session.add(self._output(_obj(raw, f"toolResponse.functionResponses[{i}]"), session))
        return self._respond(active, message)

    def _respond(self, active: str | None, message: Any) -> list[Action]:
        """A turn: the running one (if any) is interrupted first, as the service does when the user speaks."""
        ask = Ask(event=journaled(message))
        return [Cancel(), Respond(ask)] if active is not None else [Respond(ask)]

    def renderer(self, session: Session, ask: Ask, response_id: str) -> _Renderer:
        return _Renderer(session, ask)


class _Renderer:
    """One model turn's server messages."""

    def __init__(self, session: Session, ask: Ask) -> None:
        self.session = session
        self.output: Output = ask.output or session.settings.output
        self.calls: list[dict[str, Any]] = []
        self.text: list[str] = []
        self.audio = 0
        self.open = False

    def _content(self, **fields: Any) -> str:
        return _dumps({"serverContent": fields})

    def frame(self, beat: b.Beat) -> Sequence[Out]:
        session = self.session
        t = type(beat)
        if t is b.AudioDelta:
            assert isinstance(beat, b.AudioDelta)
            self.text.append(beat.transcript)
            self.audio += len(beat.pcm)
            data = base64.b64encode(beat.pcm).decode("ascii")
            out = [self._content(modelTurn={"parts": [{"inlineData": {"mimeType": OUTPUT_MIME, "data": data}}]})]
            if beat.transcript and session.wire.get("output_transcription"):
                out.append(self._content(outputTranscription={"text": beat.transcript}))
            return out
        if t is b.TextDelta:
            assert isinstance(beat, b.TextDelta)
            self.text.append(beat.text)
            return [self._content(modelTurn={"parts": [{"text": beat.text}]})]
        if t is b.Begin:
            said = session.wire.pop("transcribe", None)
            if said is not None and session.wire.get("input_transcription"):
                return [self._content(inputTranscription={"text": said, "finished": True})]
            return []
        if t is b.MessageStart:
            self.open = True
            return []
        if t is b.MessageEnd:
            assert isinstance(beat, b.MessageEnd)
            self._keep(beat.text)
            return []
        if t is b.CallEnd:
            assert isinstance(beat, b.CallEnd)
            call = beat.call
            call_id = call.id_for("function-call-", 20)
            self.calls.append({"id": call_id, "name": call.name, "args": _args(call.arguments_json)})
            session.add(
                Item(
                    session.next_id("item_"),
                    "function_call",
                    call_id=call_id,
                    name=call.name,
                    arguments=call.arguments_json,
                )
            )
            return []
        if t is b.Done:
            assert isinstance(beat, b.Done)
            return self._done(beat)
        if t is b.Failed:
            assert isinstance(beat, b.Failed)
            return [Close(close_code(beat.status), reason(beat.message))]
        if t is b.StreamError:
            assert isinstance(beat, b.StreamError)
            return [Close(INTERNAL, reason(beat.message))]
        if t is b.Raw:
            assert isinstance(beat, b.Raw)
            return [beat.body if isinstance(beat.body, str) else _dumps(beat.body)]
        return []  # CallStart, CallDelta (a call is sent whole), Wait, Cut, Hang (the driver's)

    def _keep(self, text: str) -> None:
        """The model's words join the conversation (as what they say, for audio)."""
        if self.open:
            self.open = False
            item = Item(self.session.next_id("item_"), "message", role="assistant", text=text, audio_bytes=self.audio)
            self.session.add(item)

    def _done(self, done: b.Done) -> list[Out]:
        if self.calls:  # the turn goes on once the client answers the calls (toolResponse)
            return [_dumps({"toolCall": {"functionCalls": self.calls}})]
        modality = "AUDIO" if self.output == "audio" else "TEXT"
        usage = {
            "promptTokenCount": done.input_tokens,
            "responseTokenCount": done.output_tokens,
            "totalTokenCount": done.input_tokens + done.output_tokens,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": done.input_tokens}],
            "responseTokensDetails": [{"modality": modality, "tokenCount": done.output_tokens}],
        }
        return [
            self._content(generationComplete=True),
            _dumps({"serverContent": {"turnComplete": True}, "usageMetadata": usage}),
        ]

    def cancelled(self, done: b.Done) -> Sequence[Out]:
        self._keep("".join(self.text))
        return [self._content(interrupted=True)]


def journaled(value: Any) -> Any:
    """A client message as the journal keeps it: inline bytes (audio, pictures) named by their size, not
    kept (the turn's items say what the audio said)."""
    if isinstance(value, list):
        return [journaled(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {key: journaled(v) for key, v in value.items()}
    data = out.get("data")
    if isinstance(data, str) and len(data) > MAX_KEPT_DATA:
        out["data"] = f"<{len(data) * 3 // 4} bytes>"
    return out


def _args(text: str) -> Any:
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return {}
