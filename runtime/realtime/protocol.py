"""What a realtime protocol module gives the shared WebSocket driver: a reader that turns each client
frame into actions, and a renderer per response that turns beats into frames.

A protocol (``runtime/providers/openai_realtime.py``; Gemini Live beside it) decides everything about
its wire: event names, ids, which client events change the session and what they answer. The driver
(``server/realtime/driver.py``) only carries out the actions in order, runs responses through the
engine, waits, cancels and closes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from mockllm.runtime.realtime.beats import Beat, Done
from mockllm.runtime.realtime.session import Ask, Session
from mockllm.runtime.values import fast_frozen

Frame = str | bytes  # a text frame (JSON, as the protocols send it) or a binary one


@fast_frozen
class Send:
    """Send these frames now, in order."""

    frames: tuple[Frame, ...]


@fast_frozen
class Respond:
    """Start the response ``ask`` asks for (the protocol has checked that none is running)."""

    ask: Ask


@fast_frozen
class Cancel:
    """Cancel the running response (the protocol has checked that one is): ``reason`` says why, as the
    cancelled response reports it (the client asked, or its speech interrupted the answer)."""

    reason: str = "client_cancelled"


@fast_frozen
class Close:
    """Close the session with this WebSocket close code and reason."""

    code: int = 1000
    reason: str = ""


Action = Send | Respond | Cancel | Close
#: what a renderer (and ``failed``) gives: frames, and a :class:`Close` that ends the session after the
#: frames before it (Gemini Live reports errors by closing the socket)
Out = Frame | Close


class Renderer(Protocol):
    """One response's framing: made per response (it may keep state: the item being written, its
    index), fed every beat in order."""

    def frame(self, beat: Beat) -> Sequence[Out]:
        """The frames ``beat`` becomes (none for beats the protocol does not send)."""
        ...

    def cancelled(self, done: Done) -> Sequence[Out]:
        """The frames that end the response early (``done.status`` "cancelled" or "failed"): what is
        open is closed as the protocol closes it."""
        ...


class RealtimeProtocol(Protocol):
    """A protocol's reader and its renderers' maker. Every method is pure over the session it is
    given (it may change the session: items, settings, the audio buffer) and does no I/O."""

    def open(self, session: Session, query: Mapping[str, str]) -> list[Frame]:
        """The frames a new session sends first (OpenAI's ``session.created``), before any client frame."""
        ...

    def read(self, frame: Frame, session: Session, active: str | None) -> list[Action]:
        """What the client's ``frame`` does, in order. ``active``: the running response's id, if any.
        A bad frame gets the protocol's error in a :class:`Send`: the session stays open."""
        ...

    def renderer(self, session: Session, ask: Ask, response_id: str) -> Renderer:
        """The renderer of response ``response_id`` (an id unique to the engine)."""
        ...

    def failed(self, session: Session, status: int, message: str, code: str | None = None) -> Sequence[Out]:
        """The protocol's error for something the session could not do (a response that could not be
        decided: the state store unavailable, an internal error)."""
        ...
