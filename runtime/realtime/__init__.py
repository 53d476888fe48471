"""Realtime sessions (server spec §15), the part every protocol shares: a session's items and settings,
the engine request each response becomes, and the engine's plan turned into a neutral sequence of
beats that a protocol's renderer frames.

One WebSocket session is one conversation. Whatever the protocol (OpenAI Realtime, Gemini Live), the
client adds items (a user's text or audio, a tool's output), changes settings (instructions, tools,
text or audio out) and asks for responses. Each response is one engine request with operation
``"realtime"``, so it matches the same steps as a chat turn (language spec §10), with captures,
order, consumption, latency, spacing, errors and ``disconnect``; with no script the echo responder
answers.

The pieces, all plain synchronous code over values (no I/O, no clock):

- :mod:`.session`: :class:`~.session.Item` (one conversation item), :class:`~.session.Settings` and
  :class:`~.session.Session` (one connection's state), :func:`~.session.heard` (what audio mockllm
  made says), and :meth:`~.session.Session.request`, the engine request of a response.
- :mod:`.beats`: the engine's plan as a :class:`~.beats.Response`: its beats in order (text or audio
  with its transcript, tool calls, the end with usage), its latency and spacing, and its faults
  (a scripted error, a cut connection, a hang).
- :mod:`.protocol`: what a protocol module gives: a reader of client frames (frames → actions for
  the session driver) and a renderer per response (beats → frames). Its actions are values
  (:class:`~.protocol.Send`, :class:`~.protocol.Respond`, :class:`~.protocol.Cancel`,
  :class:`~.protocol.Close`).

A protocol is one module in ``runtime/providers/`` (the wire format is the provider's:
``openai_realtime.py``) registered by provider in ``server/realtime/routes.py``; its path is a
``Route(..., "realtime", transport="websocket")`` in the provider's registry entry. The WebSocket
driver (``server/realtime/driver.py``) is shared: it reads frames, runs each response through the
state store (journal, verify, the admin views), waits out latency and spacing, sends what the
renderer frames, cancels, cuts and closes. A second protocol (Gemini Live) writes only its reader and
renderer."""
