"""`fast_frozen` (runtime/values.py): the request path's values are frozen to mypy and built without the
setattr guard at run time, with attrs.frozen's equality, hash, repr and evolve."""

from __future__ import annotations

import ast
import copy
import pickle
from pathlib import Path

import attrs
import pytest

from mockllm.runtime.echo.answer import EchoAnswer
from mockllm.runtime.echo.naming import Words
from mockllm.runtime.echo.schema_args import _Ctx
from mockllm.runtime.engine.conversations import MachineState, StoredResponse
from mockllm.runtime.engine.engine import Turn, _Selection
from mockllm.runtime.engine.journal import Delivery
from mockllm.runtime.engine.outcome import Outcome
from mockllm.runtime.providers import events
from mockllm.runtime.providers.base import Frame, RenderContext, Rendered
from mockllm.runtime.providers.bedrock.eventstream import EventMessage
from mockllm.runtime.providers.common import WireTurn
from mockllm.runtime.providers.gemini import _Target
from mockllm.runtime.providers.responses import _Parsed
from mockllm.runtime.reply.plan import MessagePlan, PlannedToolCall
from mockllm.runtime.reply.planner import _Call, _Resolved
from mockllm.runtime.request import ChatRequest, HttpRequest, Message, Tool, ToolCall, ToolResult
from mockllm.runtime.values import fast_frozen
from mockllm.server.http.responder import Answer
from mockllm.server.http.streaming import Faults, StreamResult

VALUES = Path(__file__).resolve().parents[1] / "runtime" / "values.py"

#: every class of the request path built per request (a stream's events per chunk): declared with fast_frozen
STREAM_EVENTS = tuple(
    c for c in vars(events).values() if isinstance(c, type) and attrs.has(c) and c.__module__ == events.__name__
)
REQUEST_PATH = (
    *STREAM_EVENTS,
    _Call,
    _Resolved,
    HttpRequest,
    ChatRequest,
    Message,
    ToolCall,
    ToolResult,
    Tool,
    _Selection,
    Turn,
    Outcome,
    MachineState,
    StoredResponse,
    Delivery,
    Frame,
    Rendered,
    RenderContext,
    PlannedToolCall,
    MessagePlan,
    WireTurn,
    EventMessage,
    _Target,
    _Parsed,
    EchoAnswer,
    Words,
    _Ctx,
    Faults,
    StreamResult,
    Answer,
)


@fast_frozen
class Fast:
    name: str
    count: int = 0
    tags: tuple[str, ...] = ()


@attrs.frozen
class Frozen:
    name: str
    count: int = 0
    tags: tuple[str, ...] = ()


@fast_frozen(eq=False)
class ByIdentity:
    name: str


def test_every_stream_event_is_counted() -> None:
    assert len(STREAM_EVENTS) == 14, [c.__name__ for c in STREAM_EVENTS]


def test_the_type_checker_sees_attrs_frozen() -> None:
    """mypy's attrs plugin knows `fast_frozen` as `attrs.frozen` only through the TYPE_CHECKING import:
    with anything else there, an assignment to a field would pass the lint unnoticed."""
    tree = ast.parse(VALUES.read_text(encoding="utf-8"))
    guarded = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
    ]
    assert len(guarded) == 1, "runtime/values.py has one `if TYPE_CHECKING:` block"
    (imported,) = guarded[0].body
    assert isinstance(imported, ast.ImportFrom)
    assert imported.module == "attrs"
    assert [(a.name, a.asname) for a in imported.names] == [("frozen", "fast_frozen")]


@pytest.mark.parametrize("cls", REQUEST_PATH, ids=lambda c: c.__name__)
def test_request_path_values_are_built_without_the_setattr_guard(cls: type) -> None:
    """attrs.frozen sets each field through object.__setattr__ (about 840 instructions a field); these
    classes store them directly. A class put back on attrs.frozen fails here."""
    assert attrs.has(cls)
    assert "__slots__" in cls.__dict__
    assert cls.__setattr__ is object.__setattr__, f"{cls.__name__} has a setattr guard: declare it @fast_frozen"
    # and not merely mutable (attrs.define): mypy sees attrs.frozen only through fast_frozen
    assert cls.__dict__.get("__fast_frozen__") is True, f"{cls.__name__} is not declared @fast_frozen"


def test_equality_hash_and_repr_are_attrs_frozen_ones() -> None:
    fast, frozen = Fast("a", 2, ("x",)), Frozen("a", 2, ("x",))
    assert fast == Fast("a", 2, ("x",))
    assert fast != Fast("a", 3, ("x",))
    assert hash(fast) == hash(Fast("a", 2, ("x",)))
    assert len({fast, Fast("a", 2, ("x",)), Fast("b")}) == 2
    assert repr(fast).replace("Fast", "Frozen") == repr(frozen)
    assert [f.name for f in attrs.fields(Fast)] == [f.name for f in attrs.fields(Frozen)]
    assert Fast("a") != Frozen("a")  # different classes are never equal, as with attrs.frozen


def test_evolve_copy_and_pickle_give_new_equal_values() -> None:
    fast = Fast("a", 2)
    changed = attrs.evolve(fast, count=3)
    assert (fast.count, changed.count, changed.name) == (2, 3, "a")
    assert copy.copy(fast) == fast
    assert copy.deepcopy(fast) == fast
    assert pickle.loads(pickle.dumps(fast)) == fast


def test_eq_false_keeps_identity_equality_and_hash() -> None:
    one, other = ByIdentity("a"), ByIdentity("a")
    assert one != other
    assert hash(one) == object.__hash__(one)
    assert len({one, other}) == 2


def test_options_that_would_break_the_promise_are_refused() -> None:
    with pytest.raises(TypeError, match="no frozen= option"):
        fast_frozen(frozen=True)
    with pytest.raises(TypeError, match="defines __eq__ or __hash__"):

        @fast_frozen
        class OwnEquality:
            name: str

            def __eq__(self, other: object) -> bool:
                return True


def test_a_real_request_value_hashes_by_value() -> None:
    """A history message is a value: equal messages are one set member, as with attrs.frozen."""
    call = ToolCall("call_1", "get_weather", '{"city": "Paris"}')
    message = Message("assistant", tool_calls=(call,), index=1)
    same = Message("assistant", tool_calls=(ToolCall("call_1", "get_weather", '{"city": "Paris"}'),), index=1)
    assert message == same
    assert len({message, same, Message("user", "hi")}) == 2
