"""Realtime sessions on the wire: each WebSocket route of the provider registry whose operation is
``"realtime"`` (OpenAI's ``/v1/realtime``) served by one shared driver (``driver.py``) and the provider's
protocol module (``routes.py`` names them: ``runtime/providers/openai_realtime.py``).

How a protocol plugs in (Gemini Live is the second): its path is a ``Route(path, ("GET",), "realtime",
transport="websocket")`` in its provider's registry entry; its module in ``runtime/providers/`` gives a
class with the four methods of :class:`~mockllm.runtime.realtime.protocol.RealtimeProtocol` (``open``,
``read``, ``renderer``, ``failed``: pure code over the session, no I/O); its class goes in
:data:`~.routes.PROTOCOLS` under the provider's name. Everything else is shared: the session and its
items (``runtime/realtime/session.py``), each response as one engine request with operation
``"realtime"`` through the state store (journal, ``verify``, the admin views and the inspector list it
like a chat request), the plan's beats (``runtime/realtime/beats.py``: text, audio with its transcript,
tool calls, usage, latency, spacing, scripted errors, ``disconnect``, ``hang``), cancelling, closing,
bounded buffering for slow clients, and the graceful stop (docs/realtime.md)."""
