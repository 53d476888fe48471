"""The compact JSON writer every reply, streamed chunk and journal entry goes through: byte for byte
what ``json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))`` writes."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockllm.runtime import jsonout
from mockllm.runtime.jsonout import compact_encoder

_keys = st.one_of(st.text(), st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False))
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(),  # NaN and the infinities included: json writes NaN, Infinity, -Infinity
    st.text(),  # lone surrogates and controls included
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.tuples(inner, inner), st.dictionaries(_keys, inner, max_size=5)
    ),
    max_leaves=30,
)


def _reference(value: Any, default: Any = None) -> str:
    return json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=default).encode(value)


@settings(max_examples=400, deadline=None)
@given(_values)
def test_the_same_text_as_json_writes(value: Any) -> None:
    assert compact_encoder()(value) == _reference(value)


@settings(max_examples=100, deadline=None)
@given(_values)
def test_reused_encoder_keeps_no_state_between_values(value: Any) -> None:
    encode = compact_encoder()
    first = encode(value)
    encode({"other": [1.5, "é", None]})
    assert encode(value) == first == _reference(value)


def test_default_turns_what_json_cannot_write() -> None:
    class Odd:
        def __str__(self) -> str:
            return "odd ☃"

    value = {"a": [Odd(), {1, 2} - {1, 2}], "b": math.inf}
    assert compact_encoder(default=str)(value) == _reference(value, default=str)
    assert compact_encoder(default=str)(value) == '{"a":["odd ☃","set()"],"b":Infinity}'


def test_without_default_an_unknown_type_is_a_type_error_as_in_json() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        compact_encoder()({"a": object()})
    encode = compact_encoder()
    with pytest.raises(TypeError):
        encode([1, object()])
    assert encode([1, 2]) == "[1,2]"  # the failure left nothing behind


def test_a_python_without_the_c_encoder_gets_jsons_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json.encoder, "c_make_encoder", None)
    encode = jsonout.compact_encoder(default=str)
    assert encode({"é": (1, 2.5, None)}) == '{"é":[1,2.5,null]}'
