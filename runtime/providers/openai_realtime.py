"""OpenAI's Realtime API on the wire (``GET /v1/realtime?model=…``, a WebSocket): client events read into
the session and the driver's actions, and a response's beats framed as the server events the real API
sends, in its order (docs/realtime.md lists them, and the facts relied on).

GA event names by default, as ``openai``'s ``client.realtime.connect`` expects; a client sending
``OpenAI-Beta: realtime=v1`` (``client.beta.realtime``) gets the beta names (``conversation.item.created``,
``response.text.delta``, ``response.audio.delta`` …). Every event carries ``event_id``; every field the
SDK's models require is sent (openai-agents validates each event and drops invalid ones). A bad client
event gets an ``error`` event in the real shape and the session stays open."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from json.encoder import encode_basestring
from typing import Any

from mockllm.errors import MockllmError
from mockllm.runtime.jsonout import compact_encoder
from mockllm.runtime.media import audio as sound
from mockllm.runtime.media import inband
from mockllm.runtime.providers.common import error_type_for
from mockllm.runtime.providers.openai_chat import ERROR_CODES, ERROR_TYPES
from mockllm.runtime.realtime import beats as b
from mockllm.runtime.realtime.protocol import Action, Cancel, Frame, Respond, Send
from mockllm.runtime.realtime.session import MAX_BUFFER_BYTES, Ask, Item, Output, Session, Settings, heard
from mockllm.runtime.request import Tool

DEFAULT_MODEL = "gpt-realtime"
PCM_FORMAT = {"type": "audio/pcm", "rate": 24000}
#: the shortest buffer a commit takes: 100 ms of pcm16 at 24 kHz
MIN_COMMIT_BYTES = 4800
CLIENT_EVENTS = (
    "session.update",
    "input_audio_buffer.append",
    "input_audio_buffer.commit",
    "input_audio_buffer.clear",
    "conversation.item.create",
    "conversation.item.retrieve",
    "conversation.item.truncate",
    "conversation.item.delete",
    "response.create",
    "response.cancel",
    "output_audio_buffer.clear",
)
#: GA event names → the beta API's (``OpenAI-Beta: realtime=v1``)
BETA_NAMES = {
    "conversation.item.added": "conversation.item.created",
    "response.output_text.delta": "response.text.delta",
    "response.output_text.done": "response.text.done",
    "response.output_audio.delta": "response.audio.delta",
    "response.output_audio.done": "response.audio.done",
    "response.output_audio_transcript.delta": "response.audio_transcript.delta",
    "response.output_audio_transcript.done": "response.audio_transcript.done",
}
_GA_ONLY = frozenset({"conversation.item.done"})
#: the samples every piece of mockllm-made speech starts with (its marker, spelled in the samples)
_MARKER = inband.encode("")[: len(inband.MAGIC) * 8 * 2]


class EventError(MockllmError):
    """A client event the API refuses: its error event's fields."""

    def __init__(self, message: str, code: str | None = "invalid_value", param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.param = param


_str = encode_basestring  # a string as JSON text, non-ASCII kept (what _dumps writes for one)
_dumps = compact_encoder()  # json.dumps(obj, ensure_ascii=False, separators=(",", ":")), its C encoder reused


def is_beta(headers: Mapping[str, str]) -> bool:
    return "realtime=v1" in headers.get("openai-beta", "").replace(" ", "")


def default_session(session: Session) -> dict[str, Any]:
    """The session object ``session.created`` sends: the real API's defaults."""
    return {
        "type": "realtime",
        "object": "realtime.session",
        "id": session.id,
        "model": session.model,
        "output_modalities": ["audio"],
        "instructions": "",
        "tools": [],
        "tool_choice": "auto",
        "max_output_tokens": "inf",
        "tracing": None,
        "truncation": "auto",
        "prompt": None,
        "include": None,
        "audio": {
            "input": {
                "format": dict(PCM_FORMAT),
                "transcription": None,
                "noise_reduction": None,
                "turn_detection": {
                    "type": "server_vad",
                    "threshold": 0.5,
                    "prefix_padding_ms": 300,
                    "silence_duration_ms": 200,
                    "idle_timeout_ms": None,
                    "create_response": True,
                    "interrupt_response": True,
                },
            },
            "output": {"format": dict(PCM_FORMAT), "voice": "alloy", "speed": 1.0},
        },
    }


def _merge(into: dict[str, Any], update: Mapping[str, Any]) -> None:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def _tools(raw: Any, param: str) -> tuple[Tool, ...]:
    if not isinstance(raw, list):
        raise EventError(
            f"Invalid type for '{param}': expected an array, but got {_kind(raw)} instead.", "invalid_type", param
        )
    out = []
    for i, tool in enumerate(raw):
        if not isinstance(tool, dict):
            raise EventError(f"Invalid type for '{param}[{i}]': expected an object.", "invalid_type", f"{param}[{i}]")
        if tool.get("type", "function") != "function":
            continue  # MCP tools: listed, never called by mockllm
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise EventError(
                f"Missing required parameter: '{param}[{i}].name'.", "missing_required_parameter", f"{param}[{i}].name"
            )
        parameters = tool.get("parameters")
        out.append(Tool(name, str(tool.get("description") or ""), parameters if isinstance(parameters, dict) else {}))
    return tuple(out)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(type(value), "a number")


def _output(modalities: Any, param: str) -> Output | None:
    if modalities is None:
        return None
    if not isinstance(modalities, list) or not all(m in ("text", "audio") for m in modalities) or not modalities:
        raise EventError(
            f"Invalid value for '{param}': supported combinations are ['text'] and ['audio'].", "invalid_value", param
        )
    return "audio" if "audio" in modalities else "text"


def _audio_bytes(data: Any, param: str) -> bytes:
    if not isinstance(data, str):
        raise EventError(f"Invalid type for '{param}': expected a base64 string.", "invalid_type", param)
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise EventError(
            f"Invalid value for '{param}': the audio is not valid base64.", "invalid_value", param
        ) from None


def parse_item(raw: Any, session: Session, param: str = "item") -> Item:
    """A ``conversation.item.create`` item (or a ``response.create`` input item) as a session item."""
    if not isinstance(raw, dict):
        raise EventError(f"Missing required parameter: '{param}'.", "missing_required_parameter", param)
    kind = raw.get("type")
    given = raw.get("id")
    item_id = given if isinstance(given, str) and given else session.next_id("item_")
    if kind == "function_call_output":
        call_id, output = raw.get("call_id"), raw.get("output")
        for name, value in (("call_id", call_id), ("output", output)):
            if not isinstance(value, str):
                raise EventError(
                    f"Missing required parameter: '{param}.{name}'.", "missing_required_parameter", f"{param}.{name}"
                )
        return Item(item_id, "function_call_output", call_id=str(call_id), output=str(output))
    if kind == "function_call":
        fname, arguments = raw.get("name"), raw.get("arguments", "")
        if not isinstance(fname, str) or not isinstance(arguments, str):
            raise EventError(
                f"Missing required parameter: '{param}.name'.", "missing_required_parameter", f"{param}.name"
            )
        return Item(
            item_id, "function_call", call_id=str(raw.get("call_id") or item_id), name=name, arguments=arguments
        )
    if kind != "message":
        raise EventError(
            f"Invalid value: '{kind}'. Supported values are: 'message', 'function_call', and 'function_call_output'.",
            "invalid_value",
            f"{param}.type",
        )
    role = raw.get("role")
    if role not in ("user", "assistant", "system"):
        raise EventError(
            f"Invalid value: '{role}'. Supported values are: 'user', 'assistant', and 'system'.",
            "invalid_value",
            f"{param}.role",
        )
    content = raw.get("content")
    if not isinstance(content, list):
        raise EventError(
            f"Missing required parameter: '{param}.content'.", "missing_required_parameter", f"{param}.content"
        )
    texts: list[str] = []
    audio = 0
    for i, part in enumerate(content):
        where = f"{param}.content[{i}]"
        if not isinstance(part, dict):
            raise EventError(f"Invalid type for '{where}': expected an object.", "invalid_type", where)
        ptype = part.get("type")
        if ptype in ("input_text", "text", "output_text"):
            text = part.get("text")
            if not isinstance(text, str):
                raise EventError(
                    f"Missing required parameter: '{where}.text'.", "missing_required_parameter", f"{where}.text"
                )
            texts.append(text)
        elif ptype in ("input_audio", "audio", "output_audio"):
            if part.get("audio") is not None:
                pcm = _audio_bytes(part.get("audio"), f"{where}.audio")
                audio += len(pcm)
                transcript = part.get("transcript")
                texts.append(transcript if isinstance(transcript, str) and transcript else heard(pcm))
            elif isinstance(part.get("transcript"), str):
                texts.append(part["transcript"])
        elif ptype != "input_image":
            raise EventError(
                f"Invalid value: '{ptype}'. Supported values are: 'input_text', 'input_audio', 'input_image', "
                "'output_text', and 'output_audio'.",
                "invalid_value",
                f"{where}.type",
            )
    return Item(item_id, "message", role=str(role), text="".join(texts), audio_bytes=audio)


def wire_item(item: Item, status: str = "completed", transcribed: bool = False) -> dict[str, Any]:
    """``item`` as the API shows it (``conversation.item.*``, ``response.output_item.*``)."""
    base: dict[str, Any] = {"id": item.id, "type": item.kind, "object": "realtime.item", "status": status}
    if item.kind == "function_call":
        base.update(call_id=item.call_id, name=item.name, arguments=item.arguments)
    elif item.kind == "function_call_output":
        base.update(call_id=item.call_id, output=item.output)
    else:
        base["role"] = item.role
        if item.role == "assistant":
            kind = "output_audio" if item.audio_bytes else "output_text"
            key = "transcript" if item.audio_bytes else "text"
            base["content"] = [{"type": kind, key: item.text}]
        elif item.audio_bytes:
            base["content"] = [{"type": "input_audio", "transcript": item.text if transcribed else None}]
        else:
            base["content"] = [{"type": "input_text", "text": item.text}]
    return base


class OpenAIRealtime:
    """The OpenAI Realtime protocol (:class:`~mockllm.runtime.realtime.protocol.RealtimeProtocol`)."""

    provider = "openai"

    # ---- events out ----------------------------------------------------------------------------------

    def event(self, sess: Session, kind: str, /, **fields: Any) -> str:
        if sess.wire.get("beta"):
            if kind in _GA_ONLY:
                return ""
            kind = BETA_NAMES.get(kind, kind)
        return _dumps({"type": kind, "event_id": sess.next_id("event_"), **fields})

    def error(
        self,
        session: Session,
        message: str,
        code: str | None,
        param: str | None = None,
        client_event: Any = None,
        kind: str = "invalid_request_error",
    ) -> str:
        error = {"type": kind, "code": code, "message": message, "param": param, "event_id": client_event}
        return self.event(session, "error", error=error)

    def failed(self, session: Session, status: int, message: str, code: str | None = None) -> list[Frame]:
        kind = error_type_for(status, ERROR_TYPES, "invalid_request_error", "server_error")
        return [self.error(session, message, code if code is not None else ERROR_CODES.get(status), kind=kind)]

    def _session_view(self, session: Session) -> dict[str, Any]:
        view: dict[str, Any] = session.wire["session"]
        if not session.wire.get("beta"):
            return view
        beta = {k: v for k, v in view.items() if k not in ("output_modalities", "audio", "type")}
        beta["modalities"] = ["text", "audio"] if view["output_modalities"] == ["audio"] else ["text"]
        beta["voice"] = view["audio"]["output"]["voice"]
        beta["input_audio_format"] = beta["output_audio_format"] = "pcm16"
        beta["turn_detection"] = view["audio"]["input"]["turn_detection"]
        beta["input_audio_transcription"] = view["audio"]["input"]["transcription"]
        return beta

    # ---- the protocol --------------------------------------------------------------------------------

    def open(self, session: Session, query: Mapping[str, str]) -> list[Frame]:
        session.wire["beta"] = is_beta(session.headers)
        session.wire["session"] = default_session(session)
        session.wire["conversation"] = "conv_" + session.id.removeprefix("sess_")
        frames: list[Frame] = [self.event(session, "session.created", session=self._session_view(session))]
        if session.wire["beta"]:
            conversation = {"id": session.wire["conversation"], "object": "realtime.conversation"}
            frames.append(self.event(session, "conversation.created", conversation=conversation))
        return frames

    def read(self, frame: Frame, session: Session, active: str | None) -> list[Action]:
        event_id = None
        try:
            try:
                event = json.loads(frame)
            except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                raise EventError(
                    f"Invalid JSON in the client event: {exc}. Each event must be one JSON object.", "invalid_json"
                ) from None
            if not isinstance(event, dict):
                raise EventError("Invalid client event: expected a JSON object.", "invalid_json")
            event_id = event.get("event_id") if isinstance(event.get("event_id"), str) else None
            kind = event.get("type")
            if not isinstance(kind, str):
                raise EventError("Missing required parameter: 'type'.", "missing_required_parameter", "type")
            handler = _HANDLERS.get(kind)
            if handler is None:
                supported = ", ".join(f"'{name}'" for name in CLIENT_EVENTS)
                raise EventError(
                    f"Invalid value: '{kind}'. Supported values are: {supported}.", "invalid_value", "type"
                )
            return handler(self, event, session, active)
        except EventError as err:
            return [Send((self.error(session, err.message, err.code, err.param, event_id),))]

    def _items_added(self, session: Session, item: Item, previous: str | None) -> list[str]:
        wire = wire_item(item)
        frames = [self.event(session, "conversation.item.added", previous_item_id=previous, item=wire)]
        done = self.event(session, "conversation.item.done", previous_item_id=previous, item=wire)
        return [f for f in (*frames, done) if f]

    def _session_update(self, event: dict[str, Any], session: Session, active: str | None) -> list[Action]:
        update = event.get("session")
        if not isinstance(update, dict):
            raise EventError("Missing required parameter: 'session'.", "missing_required_parameter", "session")
        update = dict(update)
        if not session.wire.get("beta"):
            kind = update.get("type")
            if kind is None:
                raise EventError(
                    "Missing required parameter: 'session.type'.", "missing_required_parameter", "session.type"
                )
            if kind not in ("realtime", "transcription"):
                raise EventError(
                    f"Invalid value: '{kind}'. Supported values are: 'realtime' and 'transcription'.",
                    "invalid_value",
                    "session.type",
                )
        else:  # the beta's flat fields, into the GA shape kept
            beta_audio: dict[str, Any] = {}
            if "modalities" in update:
                update["output_modalities"] = ["audio"] if "audio" in (update.pop("modalities") or ()) else ["text"]
            if "voice" in update:
                beta_audio.setdefault("output", {})["voice"] = update.pop("voice")
            if "turn_detection" in update:
                beta_audio.setdefault("input", {})["turn_detection"] = update.pop("turn_detection")
            if "input_audio_transcription" in update:
                beta_audio.setdefault("input", {})["transcription"] = update.pop("input_audio_transcription")
            for dropped in ("input_audio_format", "output_audio_format"):
                update.pop(dropped, None)
            if beta_audio:
                update["audio"] = beta_audio
        settings = session.settings
        instructions = update.get("instructions", settings.instructions)
        if not isinstance(instructions, str):
            raise EventError(
                "Invalid type for 'session.instructions': expected a string.", "invalid_type", "session.instructions"
            )
        tools = _tools(update["tools"], "session.tools") if "tools" in update else settings.tools
        output = _output(update.get("output_modalities"), "session.output_modalities") or settings.output
        if "audio" in update and not isinstance(update["audio"], dict):
            raise EventError("Invalid type for 'session.audio': expected an object.", "invalid_type", "session.audio")
        _merge(session.wire["session"], update)
        session.wire["session"]["output_modalities"] = [output]
        session.settings = Settings(instructions, tools, output, settings.max_output_tokens)
        return [Send((self.event(session, "session.updated", session=self._session_view(session)),))]

    def _item_create(self, event: dict[str, Any], session: Session, active: str | None) -> list[Action]:
        item = parse_item(event.get("item"), session)
        previous = event.get("previous_item_id")
        after = previous if isinstance(previous, str) and previous != "root" else None
        if after is not None and session.find(after) is None:
            raise EventError(f"Previous item with id '{after}' not found.", "item_not_found", "previous_item_id")
        if session.find(item.id) is not None:
            raise EventError(f"Item with id '{item.id}' already exists.", "item_already_exists", "item.id")
        at = session.add(item, after if previous != "root" else None)
        prior = session.items[at - 1].id if at > 0 else None
        return [Send(tuple(self._items_added(session, item, prior)))]

    def _item_retrieve(self, event: dict[str, Any], session: Session, active: str | None) -> list[Action]:
        item = session.find(str(event.get("item_id")))
        if item is None:
            raise EventError(f"Item with item_id not found: {event.get('item_id')}", "item_not_found", "item_id")
        return [Send((self.event(session, "conversation.item.retrieved", item=wire_item(item)),))]

    def _item_delete(self, event: dict[str, Any], session: Session, active: str | None) -> list[Action]:
        item_id = event.get("item_id")
        if not isinstance(item_id, str) or not session.delete(item_id):
            raise EventError(f"Item with item_id not found: {item_id}", "item_not_found", "item_id")
        return [Send((self.event(session, "conversation.item.deleted", item_id=item_id),))]

    def _item_truncate(self, event: dict[str, Any], session: Session, active: str | None) -> list[Action]:
        item_id = event.get("item_id")
        if not isinstance(item_id, str) or session.find(item_id) is None:
            raise EventError(f"Item with item_id not found: {item_id}", "item_not_found", "item_id")
        fields = {
            "item_id": item_id,
            "content_index": event.get("content_index", 0),
            "audio_end_ms": event.get("audio_end_ms", 0),
        }
        return [Send((self.event(session, "conversation.item.truncated", **fields),))]

    def _append(self, event: dict[str, Any], session: Session, active: str | None) -> list[Action]:
        pcm = _audio_bytes(event.get("audio"), "audio")
        if len(session.audio) + len(pcm) > MAX_BUFFER_BYTES:
            raise EventError(
                f"The input audio buffer holds at most {MAX_BUFFER_BYTES} bytes: commit or clear it first.",
                "input_audio_buffer_full",
                "audio",
            )
        session.audio += pcm
        detection = session.wire["session"]["audio"]["input"].get("turn_detection")
        if not isinstance(detection, dict) or detection.get("type") not in ("server_vad", "semantic_vad"):
            return []
        return self._listen(session, active, detection)

    def _listen(self, session: Session, active: str | None, detection: dict[str, Any]) -> list[Action]:
        """Turn detection, for speech mockllm made: once a whole utterance (its carried words, as long as
        speech of them lasts) is in the buffer, the events the server's VAD sends, the commit, and the
        response (``create_response``). Other audio is never detected: commit it yourself."""
        heard_at = session.wire.get("speech")
        buffer = session.audio
        if heard_at == "other":  # audio mockllm did not make: not detected
            return []
        if heard_at is None:  # where speech starts (after any digital silence), and what it says
            quiet = session.wire.get("quiet", 0)  # leading zero bytes already seen (each byte is looked at once)
            start = len(buffer) - len(buffer[quiet:].lstrip(b"\x00"))
            session.wire["quiet"] = start
            start -= start % 2
            if start >= len(buffer):
                return []
            marker = buffer[start : start + len(_MARKER)]
            if len(marker) == len(_MARKER) and marker != _MARKER:  # not speech mockllm made: stop looking
                session.wire["speech"] = "other"
                return []
            text = inband.read(bytes(buffer[start : start + inband.MAX_SAMPLE_BYTES]))
            if text is None:
                if len(buffer) - start >= inband.MAX_SAMPLE_BYTES:
                    session.wire["speech"] = "other"
                return []
            length = max(round(sound.seconds_for(text) * sound.PCM_RATE) * 2, inband.sample_count(text) * 2)
            heard_at = session.wire["speech"] = (start, start + length, session.next_id("item_"))
            started = self.event(
                session, "input_audio_buffer.speech_started", audio_start_ms=start // 48, item_id=heard_at[2]
            )
            frames: list[str] = [started]
            if active is not None and detection.get("interrupt_response", True):  # the caller talks over it
                interrupted: list[Action] = [Send(tuple(frames)), Cancel("turn_detected")]
                return interrupted + self._listen(session, None, detection)
        else:
            frames = []
        start, end, item_id = heard_at
        if len(buffer) < end:
            return [Send(tuple(frames))] if frames else []
        session.wire.pop("speech", None)
        session.wire.pop("quiet", None)
        frames.append(self.event(session, "input_audio_buffer.speech_stopped", audio_end_ms=end // 48, item_id=item_id))
        frames += self._committed(session, end, item_id)
        actions: list[Action] = [Send(tuple(frames))]
        if detection.get("create_response", True) and active is None:
            actions.append(Respond(Ask({"type": "response.create", "turn_detection": detection.get("type")})))
        return actions

    def _commit(self, event: dict[str, Any], session: Session, active: str | None) -> list[Action]:
        size = len(session.audio)
        if size < MIN_COMMIT_BYTES:
            ms = size / 48.0
            raise EventError(
                f"Error committing input audio buffer: buffer too small. Expected at least 100ms of audio, "
                f"but buffer only has {ms:.2f}ms of audio.",
                "input_audio_buffer_commit_empty",
            )
        session.wire.pop("speech", None)
        session.wire.pop("quiet", None)
        return [Send(tuple(self._committed(session, size, session.next_id("item_"))))]

    def _committed(self, session: Session, size: int, item_id: str) -> list[str]:
        """The first ``size`` bytes of the buffer committed as user item ``item_id``: its events."""
        pcm = bytes(session.audio[:size])
        del session.audio[:size]
        item = Item(item_id, "message", role="user", text=heard(pcm), audio_bytes=size)
        previous = session.items[-1].id if session.items else None
        session.add(item)
        transcription = session.wire["session"]["audio"]["input"].get("transcription")
        frames: list[str] = [
            self.event(session, "input_audio_buffer.committed", previous_item_id=previous, item_id=item.id)
        ]
        frames += self._items_added(session, item, previous)
        if transcription:
            common = {"item_id": item.id, "content_index": 0}
            frames.append(
                self.event(session, "conversation.item.input_audio_transcription.delta", delta=item.text, **common)
            )
            usage = {"type": "duration", "seconds": round(size / 48000.0, 3)}
            frames.append(
                self.event(
                    session,
                    "conversation.item.input_audio_transcription.completed",
                    transcript=item.text,
                    usage=usage,
                    **common,
                )
            )
        return [f for f in frames if f]

    def _clear(self, event: dict[str, Any], session: Session, active: str | None) -> list[Action]:
        session.audio.clear()
        session.wire.pop("speech", None)
        session.wire.pop("quiet", None)
        return [Send((self.event(session, "input_audio_buffer.cleared"),))]

    def _output_clear(self, event: dict[str, Any], session: Session, active: str | None) -> list[Action]:
        return [Send((self.event(session, "output_audio_buffer.cleared", response_id=active),))]

    def _response_create(self, event: dict[str, Any], session: Session, active: str | None) -> list[Action]:
        if active is not None:
            raise EventError(
                f"Conversation already has an active response in progress: {active}. "
                "Wait until the response is finished before creating a new one.",
                "conversation_already_has_active_response",
            )
        params = event.get("response") or {}
        if not isinstance(params, dict):
            raise EventError("Invalid type for 'response': expected an object.", "invalid_type", "response")
        modalities = params.get("output_modalities", params.get("modalities"))
        output = _output(modalities, "response.output_modalities")
        instructions = params.get("instructions")
        if instructions is not None and not isinstance(instructions, str):
            raise EventError(
                "Invalid type for 'response.instructions': expected a string.", "invalid_type", "response.instructions"
            )
        tools = _tools(params["tools"], "response.tools") if "tools" in params else None
        conversation = params.get("conversation", "auto") != "none"
        items: list[Item] = []
        raw_input = params.get("input")
        if raw_input is not None:
            if not isinstance(raw_input, list):
                raise EventError(
                    "Invalid type for 'response.input': expected an array.", "invalid_type", "response.input"
                )
            for i, raw in enumerate(raw_input):
                if isinstance(raw, dict) and raw.get("type") == "item_reference":
                    known = session.find(str(raw.get("id")))
                    if known is None:
                        raise EventError(
                            f"Item with id '{raw.get('id')}' not found.", "item_not_found", f"response.input[{i}].id"
                        )
                    items.append(known)
                else:
                    items.append(parse_item(raw, session, f"response.input[{i}]"))
            conversation = False  # a response with its own input reads only that
        ask = Ask(event, output, instructions, tools, conversation, tuple(items))
        return [Respond(ask)]

    def _response_cancel(self, event: dict[str, Any], session: Session, active: str | None) -> list[Action]:
        wanted = event.get("response_id")
        if active is None or (isinstance(wanted, str) and wanted and wanted != active):
            raise EventError("Cancellation failed: no active response found", "response_cancel_not_active")
        return [Cancel()]

    def renderer(self, session: Session, ask: Ask, response_id: str) -> _Renderer:
        return _Renderer(self, session, ask, "resp_" + response_id[:22])


_HANDLERS = {
    "session.update": OpenAIRealtime._session_update,
    "conversation.item.create": OpenAIRealtime._item_create,
    "conversation.item.retrieve": OpenAIRealtime._item_retrieve,
    "conversation.item.delete": OpenAIRealtime._item_delete,
    "conversation.item.truncate": OpenAIRealtime._item_truncate,
    "input_audio_buffer.append": OpenAIRealtime._append,
    "input_audio_buffer.commit": OpenAIRealtime._commit,
    "input_audio_buffer.clear": OpenAIRealtime._clear,
    "output_audio_buffer.clear": OpenAIRealtime._output_clear,
    "response.create": OpenAIRealtime._response_create,
    "response.cancel": OpenAIRealtime._response_cancel,
}


class _Renderer:
    """One response's server events."""

    def __init__(self, proto: OpenAIRealtime, session: Session, ask: Ask, response_id: str) -> None:
        self.proto = proto
        self.session = session
        self.ask = ask
        self.id = response_id
        self.output: Output = ask.output or session.settings.output
        self.items: list[dict[str, Any]] = []  # the response's output items, as response.done lists them
        self.item_id = ""
        self.open: Output | None = None  # the message being written
        self.text: list[str] = []
        self.audio = 0
        self.calls: dict[int, tuple[str, int]] = {}  # index -> (item id, output index) of a call

    def _e(self, kind: str, **fields: Any) -> str:
        return self.proto.event(self.session, kind, **fields)

    def _delta(self, kind: str, delta: str) -> str:
        """``self._e(kind, delta=delta, **self._where())``, the same text written from a template: a
        response streams many deltas, and the dicts and the encoder cost most of each."""
        if self.session.wire.get("beta"):
            return self._e(kind, delta=delta, **self._where())
        return (
            f'{{"type":"{kind}","event_id":{_str(self.session.next_id("event_"))},"delta":{_str(delta)},'
            f'"response_id":{_str(self.id)},"item_id":{_str(self.item_id)},"output_index":{len(self.items)},'
            '"content_index":0}'
        )

    def _response(self, status: str, details: Any = None, usage: Any = None) -> dict[str, Any]:
        output = self.session.wire["session"]["audio"]["output"]
        return {
            "id": self.id,
            "object": "realtime.response",
            "status": status,
            "status_details": details,
            "output": self.items if status != "in_progress" else [],
            "conversation_id": self.session.wire["conversation"] if self.ask.conversation else None,
            "output_modalities": [self.output],
            "max_output_tokens": "inf",
            "audio": {"output": {"format": output.get("format", PCM_FORMAT), "voice": output.get("voice", "alloy")}},
            "usage": usage,
            "metadata": (self.ask.event or {}).get("response", {}).get("metadata")
            if isinstance((self.ask.event or {}).get("response"), dict)
            else None,
        }

    def _where(self) -> dict[str, Any]:
        return {"response_id": self.id, "item_id": self.item_id, "output_index": len(self.items), "content_index": 0}

    def _add_item(self, item: Item, wire: dict[str, Any]) -> list[str]:
        previous = self.session.items[-1].id if self.session.items else None
        if self.ask.conversation:
            self.session.add(item)
        self.items.append(wire)
        return [
            self._e("response.output_item.done", response_id=self.id, output_index=len(self.items) - 1, item=wire),
            self._e("conversation.item.done", previous_item_id=previous, item=wire),
        ]

    def _started(self, wire: dict[str, Any]) -> list[str]:
        previous = self.session.items[-1].id if self.session.items else None
        return [
            self._e("response.output_item.added", response_id=self.id, output_index=len(self.items), item=wire),
            self._e("conversation.item.added", previous_item_id=previous, item=wire),
        ]

    def frame(self, beat: b.Beat) -> list[Frame]:
        frames = self._frame(beat)
        return [f for f in frames if f]

    def _frame(self, beat: b.Beat) -> list[str]:
        t = type(beat)
        if t is b.AudioDelta:
            assert isinstance(beat, b.AudioDelta)
            self.text.append(beat.transcript)
            self.audio += len(beat.pcm)
            out = [self._delta("response.output_audio_transcript.delta", beat.transcript)] if beat.transcript else []
            out.append(self._delta("response.output_audio.delta", base64.b64encode(beat.pcm).decode("ascii")))
            return out
        if t is b.TextDelta:
            assert isinstance(beat, b.TextDelta)
            self.text.append(beat.text)
            return [self._delta("response.output_text.delta", beat.text)]
        if t is b.CallDelta:
            assert isinstance(beat, b.CallDelta)
            item_id, index = self.calls[beat.index]
            fields = {
                "response_id": self.id,
                "item_id": item_id,
                "output_index": index,
                "call_id": beat.call.id_for("call_"),
            }
            return [self._e("response.function_call_arguments.delta", delta=beat.text, **fields)]
        if t is b.Begin:
            return [self._e("response.created", response=self._response("in_progress"))]
        if t is b.MessageStart:
            assert isinstance(beat, b.MessageStart)
            self.output = beat.output
            self.open = beat.output
            self.item_id = self.session.next_id("item_")
            wire = {
                "id": self.item_id,
                "type": "message",
                "object": "realtime.item",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            }
            part = {"type": "audio", "transcript": ""} if beat.output == "audio" else {"type": "text", "text": ""}
            return [*self._started(wire), self._e("response.content_part.added", part=part, **self._where())]
        if t is b.MessageEnd:
            assert isinstance(beat, b.MessageEnd)
            return self._close_message(beat.text, "completed")
        if t is b.CallStart:
            assert isinstance(beat, b.CallStart)
            item_id = self.session.next_id("item_")
            self.calls[beat.index] = (item_id, len(self.items))
            call = beat.call
            wire = {
                "id": item_id,
                "type": "function_call",
                "object": "realtime.item",
                "status": "in_progress",
                "call_id": call.id_for("call_"),
                "name": call.name,
                "arguments": "",
            }
            return self._started(wire)
        if t is b.CallEnd:
            assert isinstance(beat, b.CallEnd)
            item_id, index = self.calls[beat.index]
            call = beat.call
            call_id = call.id_for("call_")
            fields = {"response_id": self.id, "item_id": item_id, "output_index": index, "call_id": call_id}
            done = self._e(
                "response.function_call_arguments.done", name=call.name, arguments=call.arguments_json, **fields
            )
            item = Item(item_id, "function_call", call_id=call_id, name=call.name, arguments=call.arguments_json)
            return [done, *self._add_item(item, wire_item(item))]
        if t is b.Done:
            assert isinstance(beat, b.Done)
            return self._done(beat)
        if t is b.Failed:
            assert isinstance(beat, b.Failed)
            return [str(f) for f in self.proto.failed(self.session, beat.status, beat.message, beat.code)]
        if t is b.StreamError:
            assert isinstance(beat, b.StreamError)
            return [self.proto.error(self.session, beat.message, None, kind="server_error")]
        if t is b.Raw:
            assert isinstance(beat, b.Raw)
            return [beat.body if isinstance(beat.body, str) else _dumps(beat.body)]
        return []  # Wait, Cut, Hang: the driver's

    def _close_message(self, text: str, status: str) -> list[str]:
        if self.open is None:
            return []
        audio = self.open == "audio"
        self.open = None
        where = self._where()
        out: list[str] = []
        if audio:
            out.append(self._e("response.output_audio.done", **where))
            out.append(self._e("response.output_audio_transcript.done", transcript=text, **where))
            part: dict[str, Any] = {"type": "audio", "transcript": text}
        else:
            out.append(self._e("response.output_text.done", text=text, **where))
            part = {"type": "text", "text": text}
        out.append(self._e("response.content_part.done", part=part, **where))
        item = Item(self.item_id, "message", role="assistant", text=text, audio_bytes=self.audio if audio else 0)
        if audio and not item.audio_bytes:
            item = Item(self.item_id, "message", role="assistant", text=text, audio_bytes=1)
        out += self._add_item(item, wire_item(item, status))
        return out

    def _done(self, done: b.Done) -> list[str]:
        out = self._close_message("".join(self.text), "incomplete") if self.open is not None else []
        details: Any = None
        if done.status == "cancelled":
            details = {"type": "cancelled", "reason": done.reason or "client_cancelled"}
        elif done.status == "incomplete":
            details = {"type": "incomplete", "reason": done.reason}
        elif done.status == "failed":
            details = {"type": "failed", "error": {"type": "server_error", "code": None, "message": done.error}}
        text_out = done.output_tokens - done.audio_tokens
        usage = {
            "total_tokens": done.input_tokens + done.output_tokens,
            "input_tokens": done.input_tokens,
            "output_tokens": done.output_tokens,
            "input_token_details": {
                "text_tokens": done.input_tokens,
                "audio_tokens": 0,
                "image_tokens": 0,
                "cached_tokens": 0,
                "cached_tokens_details": {"text_tokens": 0, "audio_tokens": 0, "image_tokens": 0},
            },
            "output_token_details": {"text_tokens": text_out, "audio_tokens": done.audio_tokens},
        }
        out.append(self._e("response.done", response=self._response(done.status, details, usage)))
        total = self.session.responses
        limits = [
            {"name": "requests", "limit": 10000, "remaining": max(0, 10000 - total), "reset_seconds": 0.006},
            {
                "name": "tokens",
                "limit": 2000000,
                "remaining": 2000000 - done.input_tokens - done.output_tokens,
                "reset_seconds": 0.03,
            },
        ]
        out.append(self._e("rate_limits.updated", rate_limits=limits))
        return out

    def cancelled(self, done: b.Done) -> list[Frame]:
        return [f for f in self._done(done) if f]
