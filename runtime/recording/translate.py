"""Recorded exchanges → one syntax tree per conversation (printed by :mod:`mockllm.dsl.format.formatter`).

Conversations are grouped by the keys serving uses (docs/index.md, "How mockllm tells conversations
apart"): the ``x-mockllm-conversation`` header, else the fingerprint of the opening; a Responses
request with ``previous_response_id`` (or an Anthropic one continuing a message thread, whose
``previous_message_id`` the adapter reads into the same field) continues the conversation whose answer
had that id. Each
conversation becomes one file holding one scenario whose steps are its requests in order: the
scenario's ``when:`` names the provider and model, each step's names the new user message (a
``contains`` of its first words when long) or the tool results it carries; its reply reproduces what
the API answered."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import unquote

import attrs

from mockllm.dsl.tree import nodes as n
from mockllm.errors import ProviderError
from mockllm.runtime.engine.conversations import CONVERSATION_HEADER, fingerprint
from mockllm.runtime.providers.registry import adapter_for, entry
from mockllm.runtime.recording import embeddings
from mockllm.runtime.recording.answer import Answer, error_message, load_json, parse_arguments
from mockllm.runtime.recording.exchange import Exchange
from mockllm.runtime.recording.media import (
    Asset,
    asset,
    audio_extension,
    folder_for,
    picture_extension,
    picture_sources,
    speech_audio,
)
from mockllm.runtime.recording.readers import READERS, provider_for
from mockllm.runtime.reply.planner import arguments_text, split_arguments, split_text
from mockllm.runtime.request import ChatRequest, HttpRequest, Message, resolve_tool_names

__all__ = ["Asset", "Conversation", "Script", "Turn", "conversations", "read_exchange", "scripts"]

#: Longer user messages (or any holding a newline) become a ``contains`` of their first words.
LONG_MESSAGE = 80
_CONTAINS_CHARS = 48
_STOPWORDS = frozenset(
    "a an and are at be can could do does for from hi hello how i in is it me my of on or please tell "
    "that the this to was what when where which who why will with would you your".split()
)


@attrs.frozen
class Turn:
    """One exchange, read: the request as serving parses it, and the answer."""

    exchange: Exchange
    provider: str
    chat: ChatRequest
    answer: Answer | None  # None for an error status
    # an images answer's pictures given as a `url`: their bytes, by URL, when the recorder fetched them
    fetched: Mapping[str, bytes] = attrs.field(factory=dict, eq=False)


@attrs.frozen
class Conversation:
    key: str
    turns: tuple[Turn, ...]


@attrs.frozen
class Script:
    """A conversation's file: the name to write it under, its tree, and the files its ``audio`` and
    ``image`` lines name (paths relative to the script's folder), to be written beside it."""

    filename: str
    tree: n.ScriptFile
    assets: tuple[Asset, ...] = ()


def read_exchange(ex: Exchange, fetched: Mapping[str, bytes] | None = None) -> Turn | None:
    """The exchange as a turn; None when it is not a chat call of a known provider, or its request
    does not parse (it would not be an LLM call the server can answer). ``fetched``: the pictures an
    images answer gave as URLs, by URL, when whoever recorded it fetched them."""
    provider = provider_for(ex.method, ex.path, ex.headers)
    if provider is None:
        return _read_embedding(ex, fetched)
    reader = READERS[provider]
    params: dict[str, str] = {}
    if entry(provider).model_methods:  # `…/models/{model}:{method}`
        model, _, method = ex.path.rpartition("/models/")[2].rpartition(":")
        params = {"model": model, "method": method}
    # the path as the server sees it: percent-decoded (Bedrock's `amazon.nova-micro-v1%3A0` is `…:0`)
    http = HttpRequest(ex.method, unquote(ex.path), ex.query, ex.headers, ex.request_body, params)
    try:
        chat = adapter_for(provider).parse(http)
    except ProviderError:
        return None
    if ex.status >= 400:
        answer = None
    elif chat.operation == "chat":
        answer = reader.read(ex.body, chat.stream)
    else:  # an embedding call on a chat route (Bedrock's invoke with a Titan or Cohere body)
        answer = embeddings.read(ex.body, ex.response_headers, chat.body)
    return Turn(ex, provider, chat, answer, dict(fetched or {}))


def transcript_of(body: bytes) -> str | None:
    """The text of a recorded transcription answer: ``json`` and ``verbose_json`` bodies' ``text``, a
    stream's ``transcript.text.done``, a ``text`` body as it is, and the cues' text of ``srt`` and ``vtt``
    bodies (served, the cues are written again from it); None for a body with none."""
    raw = body.decode("utf-8", "replace")
    for line in raw.splitlines():  # a stream: its last event says the whole text
        if line.startswith("data: {") and '"transcript.text.done"' in line:
            done = load_json(line[6:].encode())
            if isinstance(done, dict) and isinstance(done.get("text"), str):
                return str(done["text"])
    data = load_json(body)
    if isinstance(data, dict):
        text = data.get("text")
        return text if isinstance(text, str) else None
    if "-->" in raw:  # SubRip or WebVTT: the cues' text lines, without numbers, times and the header
        lines = [ln.strip() for ln in raw.splitlines()]
        kept = [ln for ln in lines if ln and ln != "WEBVTT" and "-->" not in ln and not ln.isdigit()]
        return " ".join(kept)
    return raw.strip() if raw.strip() and not raw.startswith("data:") else None


def _read_embedding(ex: Exchange, fetched: Mapping[str, bytes] | None) -> Turn | None:
    """An embeddings, speech, transcription or images call (what the server answers beside chat)."""
    route = embeddings.embedding_route(ex.method, ex.path, ex.headers)
    if route is None:
        return None
    try:
        chat = embeddings.parse(route, HttpRequest(ex.method, unquote(ex.path), ex.query, ex.headers, ex.request_body))
    except ProviderError:
        return None
    answer = None if ex.status >= 400 else embeddings.read(ex.body, ex.response_headers, chat.body)
    return Turn(ex, chat.provider, chat, answer, dict(fetched or {}))


def conversations(turns: Iterable[Turn]) -> list[Conversation]:
    """The turns grouped into conversations, each in recorded order; conversations in order of their
    first turn."""
    order: list[str] = []
    groups: dict[str, list[Turn]] = {}
    by_response: dict[str, str] = {}
    for turn in turns:
        chat = turn.chat
        key = chat.header(CONVERSATION_HEADER) or ""
        if not key and chat.previous_response_id:
            key = by_response.get(chat.previous_response_id, "")
        if not key:
            key = fingerprint(chat)
        if chat.operation != "chat":  # embedding calls: a scenario of their own, in any order
            key = f"{chat.operation} {key}"
        if key not in groups:
            order.append(key)
            groups[key] = []
        groups[key].append(turn)
        if turn.answer is not None and turn.answer.response_id:
            by_response[turn.answer.response_id] = key
    return [Conversation(k, tuple(groups[k])) for k in order]


def scripts(convs: Iterable[Conversation], keep_timing: bool = False) -> list[Script]:
    return [script(c, keep_timing) for c in convs]


def script(conv: Conversation, keep_timing: bool = False) -> Script:
    first = conv.turns[0]
    providers = {t.provider for t in conv.turns}
    models = {t.chat.model for t in conv.turns}
    scenario_when: list[n.Condition] = []
    if len(providers) == 1:
        scenario_when.append(_is("provider", first.provider))
    if len(models) == 1:
        scenario_when.append(_is("model", first.chat.model))
    opening = first.chat.last_user_message() or first.chat.system or first.chat.operation
    title = " ".join(opening.split())[:60].strip() or "conversation"
    short = conv.key if re.fullmatch(r"[0-9a-f]{16}", conv.key) else hashlib.sha256(conv.key.encode()).hexdigest()
    name = f"{title} ({short[:8]})"
    slug = "_".join(_words(opening)[:6]) or "conversation"
    filename = f"{first.provider}_{slug}_{short[:8]}.mockllm"
    steps: list[n.Step] = []
    assets: list[Asset] = []
    used: set[str] = set()
    call_names: dict[str, str] = {}
    inputs = first.chat.operation != "chat"
    for turn in conv.turns:
        when: list[n.Condition] = []
        if len(providers) > 1:
            when.append(_is("provider", turn.provider))
        if len(models) > 1:
            when.append(_is("model", turn.chat.model))
        if inputs:  # an embedding call: named by its endpoint and first input
            when += [_is("endpoint", turn.chat.operation), *_text_condition("input", turn.chat.inputs[:1])]
            prefix = "embed_" if turn.chat.operation in ("embeddings", "moderations") else f"{turn.chat.operation}_"
            step = _unique(
                prefix + ("_".join(_key_words(turn.chat.inputs[0] if turn.chat.inputs else "")) or "input"), used
            )
            reply = _reply(turn, keep_timing)
            kept = _media_files(turn, folder_for(filename), step)
            if kept:  # the audio or pictures the API sent, as files beside the script
                assets += kept
                reply = _with_media(reply, turn, kept)
            steps.append(n.Step(step, tuple(when), reply=reply))
            continue
        messages = tuple(_named(m, call_names) for m in resolve_tool_names(turn.chat.messages))
        results = _trailing_results(messages)
        if results:
            when += [_cond("tool_result", "present", None, name) for name in results]
        else:
            when += _user_condition(turn.chat)
        step_name = _unique(_step_name(turn, bool(results)), used)
        reply = _reply(turn, keep_timing)
        if turn.answer is not None and turn.answer.media:  # Gemini's pictures and sound, as files
            kept = [
                asset(folder_for(filename), step_name, data, _extension(mime, data)) for mime, data in turn.answer.media
            ]
            assets += kept
            lines = [
                n.Audio(path=a.path) if mime.startswith("audio/") else n.Image(a.path)
                for (mime, _), a in zip(turn.answer.media, kept, strict=True)
            ]
            said = tuple(el for el in reply.elements if el != n.Text(""))  # (an answer of sound alone)
            reply = n.ReplyBlock((*said, *lines))
        steps.append(n.Step(step_name, tuple(when), reply=reply))
        if turn.answer is not None:
            call_names.update((c.id, c.name) for c in turn.answer.calls if c.id)
    scenario = n.Scenario(
        name, tags=("recorded",), order_any=inputs, conditions=tuple(scenario_when), steps=tuple(steps)
    )
    return Script(filename, n.ScriptFile(filename, version=1, scenarios=(scenario,)), tuple(assets))


def _named(m: Message, names: dict[str, str]) -> Message:
    r = m.tool_result
    if r is not None and r.name is None and r.call_id in names:
        return attrs.evolve(m, tool_result=attrs.evolve(r, name=names[r.call_id]))
    return m


def _trailing_results(messages: Sequence[Message]) -> list[str]:
    """The tool names whose results end the history (the tool turn this request sends), in order."""
    names: list[str] = []
    for m in reversed(messages):
        result = m.tool_result
        if m.role != "tool" or result is None:
            break
        if result.name and result.name not in names:
            names.insert(0, result.name)
    return names


def _user_condition(chat: ChatRequest) -> list[n.Condition]:
    text = chat.last_user_message()
    return [] if text is None else _text_condition("last_user_message", (text,))


def _text_condition(kind: n.SubjectKind, texts: Sequence[str]) -> list[n.Condition]:
    """``KIND is "TEXT"``, or a ``contains`` of its first words when it is long (none without text)."""
    if not texts:
        return []
    text = texts[0]
    if len(text) <= LONG_MESSAGE and "\n" not in text:
        return [_is(kind, text)]
    first = text.split("\n", 1)[0]
    head = first[:_CONTAINS_CHARS]
    if len(first) > _CONTAINS_CHARS and not first[_CONTAINS_CHARS].isspace() and " " in head.strip():
        head = head.rsplit(" ", 1)[0]  # end on a whole word
    return [_cond(kind, "contains", head.strip() or text[:_CONTAINS_CHARS])]


def _is(kind: n.SubjectKind, value: str) -> n.Condition:
    return _cond(kind, "is", value)


def _cond(kind: n.SubjectKind, op: n.PredicateOp, value: object, arg: str | None = None) -> n.Condition:
    return n.Condition(n.Subject(kind, arg), n.Predicate(op, value))


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _step_name(turn: Turn, tool_turn: bool) -> str:
    answer = turn.answer
    if tool_turn:
        if answer is not None and answer.calls:
            return "call_" + _ident(answer.calls[0].name)
        return "answer" if answer is not None else f"error_{turn.exchange.status}"
    return "ask_" + ("_".join(_key_words(turn.chat.last_user_message() or "")) or "model")


def _key_words(text: str) -> list[str]:
    """The first two words of ``text`` that say something (for a step's name)."""
    return [w for w in _words(text) if w not in _STOPWORDS and len(w) > 1][:2]


def _ident(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return cleaned or "tool"


def _unique(name: str, used: set[str]) -> str:
    candidate, k = name, 2
    while candidate in used:
        candidate, k = f"{name}_{k}", k + 1
    used.add(candidate)
    return candidate


def _duration(ms: float) -> n.Duration:
    return n.Duration(float(max(0, round(ms))))


def _reply(turn: Turn, keep_timing: bool) -> n.ReplyBlock:
    ex = turn.exchange
    out: list[n.ReplyElement] = []
    timing = ex.timing if keep_timing else None
    if timing is not None:
        out.append(n.Latency(_duration(timing.first_byte_ms)))
    answer = turn.answer
    if answer is None:
        out.append(n.Error(ex.status, error_message(ex.body)))
        retry = _retry_after_ms(ex)
        if retry is not None:
            out.append(n.RetryAfter(_duration(retry)))
        return n.ReplyBlock(tuple(out))
    if turn.chat.operation in ("transcription", "translation"):  # the transcript, as a `text` line
        transcript = transcript_of(ex.body)
        out.append(n.Text(transcript) if transcript is not None else n.Echo())
        return n.ReplyBlock(tuple(out))
    if turn.chat.operation in ("speech", "images"):  # its files, when kept, replace this (_with_media)
        out.append(n.Echo())
        return n.ReplyBlock(tuple(out))
    if turn.chat.operation != "chat":  # an embedding: its vectors and input count
        out += [n.Vector(v) for v in answer.vectors]
        if answer.usage is not None:
            out.append(n.Usage(*answer.usage))
        elif not answer.vectors:  # nothing to keep (vectors of a lossy type): the default embedder's
            out.append(n.Echo())
        return n.ReplyBlock(tuple(out))
    if answer.thinking:
        out.append(n.Thinking(answer.thinking))
    chunks = tuple(c for c in answer.text_chunks if c)
    stream: n.Stream | None = None
    fragments = [c.fragments for c in answer.calls if c.fragments]
    explicit = False
    if turn.chat.stream and (chunks or fragments):
        stream, explicit = _chunking(answer.text, chunks, fragments)
    if explicit and chunks:
        out.append(n.Chunks(chunks))
    elif answer.text:
        out.append(n.Text(answer.text))
    if answer.refusal:
        out.append(n.Refusal(answer.refusal))
    ids = getattr(READERS.get(turn.provider), "CALL_IDS", False)  # the reader says whether calls carry ids
    out += [n.ToolCall(c.name, c.arguments, c.id if ids else None) for c in answer.calls]
    default = "tool_calls" if answer.calls else "stop"
    if answer.finish is not None and answer.finish != default:
        out.append(n.Finish(answer.finish))
    if answer.usage is not None:
        out.append(n.Usage(*answer.usage))
    if timing is not None and turn.chat.stream and timing.gaps_ms:
        gap = _duration(sum(timing.gaps_ms) / len(timing.gaps_ms))
        stream = attrs.evolve(stream, apart=gap) if stream is not None else n.Stream("word", apart=gap)
    if stream is not None and stream != _BY_WORD:
        out.append(stream)
    if ex.disconnected:
        out.append(n.Disconnect(answer.events))
    elif answer.error is not None:
        out.append(n.StreamError(answer.error, answer.events))
    if not out:
        out.append(n.Text(""))
    return n.ReplyBlock(tuple(out))


_BY_WORD = n.Stream("word")


def _media_files(turn: Turn, folder: str, step: str) -> list[Asset]:
    """The audio of a speech answer, or the pictures of an images answer, as files in ``folder``
    (pictures given as a URL that was not fetched are left out)."""
    ex, op = turn.exchange, turn.chat.operation
    if turn.answer is None or op not in ("speech", "images"):
        return []
    if op == "speech":
        audio = speech_audio(ex.body, ex.response_headers)
        return [] if audio is None else [asset(folder, step, audio, audio_extension(turn.chat.body))]
    pictures = [turn.fetched.get(p) if isinstance(p, str) else p for p in picture_sources(ex.body, ex.response_headers)]
    return [asset(folder, step, p, picture_extension(p)) for p in pictures if p]


def _extension(mime: str, data: bytes) -> str:
    """A file extension for an answer's picture or sound (raw PCM for Gemini's ``audio/L16``)."""
    if mime.startswith("audio/"):
        return "pcm" if "l16" in mime.lower() or "pcm" in mime.lower() else mime[6:].split(";")[0] or "bin"
    return picture_extension(data)


def _with_media(reply: n.ReplyBlock, turn: Turn, kept: Sequence[Asset]) -> n.ReplyBlock:
    """``reply`` with its ``echo`` replaced by the ``audio "PATH"`` or ``image "PATH"`` lines of ``kept``."""
    lines: list[n.ReplyElement] = [
        n.Audio(path=a.path) if turn.chat.operation == "speech" else n.Image(a.path) for a in kept
    ]
    out: list[n.ReplyElement] = []
    for el in reply.elements:
        out += lines if isinstance(el, n.Echo) else [el]
    return n.ReplyBlock(tuple(out))


def _chunking(text: str, chunks: tuple[str, ...], fragments: Sequence[tuple[str, ...]]) -> tuple[n.Stream | None, bool]:
    """The ``stream`` line that splits the text into ``chunks`` and each tool call's arguments into its
    ``fragments`` (by word, N chunks, by N characters: one line governs both), and whether the text
    needs an explicit ``chunks:`` block because no line splits it the same way as the arguments.

    The arguments are written as compact JSON; fragments that do not join to it, or that no line
    reproduces, get the line giving the same number of fragments (the client still assembles the
    same arguments)."""
    pieces = [f for f in fragments if "".join(f) == _compact("".join(f))]
    counts = [len(p) for p in (chunks, *pieces) if p]
    sizes = [len(p[0]) for p in (chunks, *pieces) if p]
    candidates = [_BY_WORD, *(n.Stream("chunks", k) for k in counts), *(n.Stream("characters", k) for k in sizes)]

    def splits_text(line: n.Stream | None) -> bool:
        return not chunks or split_text(text, line) == chunks

    def splits_arguments(line: n.Stream) -> bool:
        return all(split_arguments("".join(p), line) == p for p in pieces)

    for line in candidates:
        if splits_arguments(line) and splits_text(line):
            return line, False
    for line in candidates:
        if splits_arguments(line) and len(pieces) == len(fragments):
            return line, True
    if fragments:
        line = n.Stream("chunks", len(fragments[0]))
        return line, not splits_text(line)
    return None, True


def _compact(arguments: str) -> str:
    """The arguments as a script's ``tool call`` sends them: compact JSON (the raw text if not JSON)."""
    return arguments_text(parse_arguments(arguments))


def _retry_after_ms(ex: Exchange) -> float | None:
    h = ex.response_headers
    for name, scale in (("retry-after-ms", 1.0), ("retry-after", 1000.0)):
        try:
            return float(h[name]) * scale
        except (KeyError, ValueError):
            continue
    return None
