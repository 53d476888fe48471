"""The echo responder's content: the text it answers and the tools it calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from mockllm.runtime.echo.answer import EchoAnswer, echo_answer
from mockllm.runtime.echo.naming import mention, split_words, stem, words_of
from mockllm.runtime.request import ChatRequest, Message, Tool, ToolCall, ToolResult

SCHEMAS = Path(__file__).parent / "schemas"
WEATHER = json.loads((SCHEMAS / "weather_get_weather.json").read_text())
EMAIL = json.loads((SCHEMAS / "email_send_email.json").read_text())


def user(text: str) -> Message:
    return Message(role="user", text=text)


def assistant(text: str = "", *calls: str) -> Message:
    return Message(role="assistant", text=text, tool_calls=tuple(ToolCall(f"call_{n}", n, {}) for n in calls))


def result(name: str, content: str = "done") -> Message:
    return Message(role="tool", tool_result=ToolResult(f"call_{name}", name, content))


def chat(*messages: Message, tools: tuple[Tool, ...] = ()) -> ChatRequest:
    return ChatRequest(
        provider="openai", endpoint="/v1/chat/completions", model="gpt-test", stream=False,
        messages=messages, tools=tools,
    )  # fmt: skip


def tool(name: str, parameters: dict[str, Any] | None = None) -> Tool:
    return Tool(name=name, parameters=parameters or {})


def names(answer: EchoAnswer) -> list[str]:
    return [n for n, _ in answer.tool_calls]


# ---------------------------------------------------------------- text


def test_single_message_is_echoed_exactly() -> None:
    text = "  Hello, world!\n  with spacing  "
    assert echo_answer(chat(user(text))) == EchoAnswer(text, ())


def test_last_user_message_is_echoed_in_a_multi_message_history() -> None:
    history = chat(
        Message(role="system", text="Be nice."),
        user("First message"),
        assistant("Assistant response"),
        user("Final message"),
        assistant("prefilled"),
    )
    assert echo_answer(history).text == "Final message"


def test_no_user_message_answers_empty_text() -> None:
    assert echo_answer(chat()) == EchoAnswer("")
    assert echo_answer(chat(Message(role="system", text="sys"), assistant("hi"))) == EchoAnswer("")


def test_no_tools_offered_means_no_calls() -> None:
    assert echo_answer(chat(user("please send_email now"))).tool_calls == ()


def test_tools_offered_but_none_named_answers_plain_text() -> None:
    answer = echo_answer(chat(user("Hello there"), tools=(tool("send_email"), tool("get_weather"))))
    assert answer == EchoAnswer("Hello there", ())


# ---------------------------------------------------------------- naming styles


@pytest.mark.parametrize(
    "tool_name", ["send_email", "sendEmail", "SendEmail", "send-email", "send email", "SEND_EMAIL"]
)
@pytest.mark.parametrize(
    "text",
    [
        "call send_email",
        "please sendEmail to the team",
        "SendEmail now",
        "use send-email",
        "please send email to the team",
        "SEND_EMAIL!",
        "run sendemail",
        "send an email to Bob",
        "Could you send two emails?",
        "Email Bob and send it",
        "I am sending emails",
    ],
)
def test_tool_named_in_any_style_is_called(tool_name: str, text: str) -> None:
    answer = echo_answer(chat(user(text), tools=(tool(tool_name),)))
    assert names(answer) == [tool_name]
    assert answer.text == text


@pytest.mark.parametrize("text", ["email me later", "send it", "resend the mail", "emailsend", "sender"])
def test_partial_names_do_not_call(text: str) -> None:
    assert echo_answer(chat(user(text), tools=(tool("send_email"),))).tool_calls == ()


def test_a_leading_generic_verb_may_be_left_out() -> None:
    answer = echo_answer(chat(user("What's the weather in San Francisco?"), tools=(tool("get_weather", WEATHER),)))
    assert answer.tool_calls == (
        ("get_weather", {"location": "San Francisco, CA", "unit": "celsius", "days": 5, "include_hourly": True}),
    )


def test_only_user_messages_name_tools() -> None:
    history = chat(Message(role="system", text="you can send_email"), assistant("I could send an email"), user("ok"))
    assert echo_answer(chat(*history.messages, tools=(tool("send_email"),))).tool_calls == ()


# ---------------------------------------------------------------- parallel calls and order


def test_parallel_calls_in_the_order_named() -> None:
    tools = (tool("calculate"), tool("get_time"), tool("get_weather"))
    answer = echo_answer(chat(user("Get weather and time for San Francisco and calculate 10+5"), tools=tools))
    assert names(answer) == ["get_weather", "get_time", "calculate"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("send an email, then search the web", ["send_email", "search_web"]),
        ("search_web first and sendEmail after", ["search_web", "send_email"]),
        ("send the weather report by email", ["get_weather", "send_email"]),  # by where each name completes
    ],
)
def test_order_follows_the_text_not_the_tool_list(text: str, expected: list[str]) -> None:
    tools = (tool("search_web"), tool("send_email"), tool("delete_file"), tool("get_weather"))
    assert names(echo_answer(chat(user(text), tools=tools))) == expected


def test_each_tool_is_called_once_even_if_named_twice_or_offered_twice() -> None:
    tools = (tool("send_email"), tool("send_email"))
    answer = echo_answer(chat(user("send_email, send_email, sendEmail"), tools=tools))
    assert names(answer) == ["send_email"]


# ---------------------------------------------------------------- history rules


def test_a_tool_result_last_ends_the_loop_with_the_last_user_text() -> None:
    tools = (tool("send_email"),)
    history = chat(user("send an email"), assistant("", "send_email"), result("send_email"), tools=tools)
    assert echo_answer(history) == EchoAnswer("send an email", ())


def test_a_tool_named_in_an_earlier_message_is_called_when_never_called_since() -> None:
    tools = (tool("send_email"), tool("get_weather"))
    history = chat(user("I need to send an email"), user("to Bob, please"), tools=tools)
    answer = echo_answer(history)
    assert answer.text == "to Bob, please"
    assert names(answer) == ["send_email"]


def test_a_tool_already_called_is_not_called_again_on_later_turns() -> None:
    tools = (tool("send_email"), tool("get_weather"))
    history = chat(
        user("send an email"),
        assistant("", "send_email"),
        result("send_email"),
        assistant("Sent."),
        user("thanks! and the weather?"),
        tools=tools,
    )
    assert names(echo_answer(history)) == ["get_weather"]


def test_naming_a_tool_again_calls_it_again() -> None:
    tools = (tool("send_email"),)
    history = chat(
        user("send an email"),
        assistant("", "send_email"),
        result("send_email"),
        assistant("Sent."),
        user("send another email"),
        tools=tools,
    )
    assert names(echo_answer(history)) == ["send_email"]


def test_earlier_pending_tools_come_before_tools_of_the_last_message() -> None:
    tools = (tool("get_weather"), tool("send_email"))
    history = chat(user("send an email"), user("and the weather"), tools=tools)
    assert names(echo_answer(history)) == ["send_email", "get_weather"]


# ---------------------------------------------------------------- arguments


def test_arguments_validate_against_the_tool_schema() -> None:
    tools = (tool("send_email", EMAIL), tool("get_weather", WEATHER))
    answer = echo_answer(chat(user("Send an email about the weather"), tools=tools))
    assert names(answer) == ["send_email", "get_weather"]
    for (name, args), t in zip(answer.tool_calls, tools, strict=True):
        assert name == t.name
        validator = jsonschema.Draft202012Validator(dict(t.parameters), format_checker=jsonschema.FormatChecker())
        assert list(validator.iter_errors(args)) == []


def test_tools_without_parameters_get_an_empty_object() -> None:
    tools = (tool("ping"), tool("pong", {"type": "string"}))
    assert echo_answer(chat(user("ping and pong"), tools=tools)).tool_calls == (("ping", {}), ("pong", {}))


def test_same_request_same_answer() -> None:
    tools = (tool("send_email", EMAIL), tool("get_weather", WEATHER))
    request = chat(user("weather?"), assistant("hm"), user("send email and get weather"), tools=tools)
    assert echo_answer(request) == echo_answer(request)
    assert json.dumps(echo_answer(request).tool_calls) == json.dumps(echo_answer(request).tool_calls)


# ---------------------------------------------------------------- naming helpers


@pytest.mark.parametrize(
    "name", ["send_email", "sendEmail", "SendEmail", "send-email", "send email", "SEND_EMAIL", "Send.Email"]
)
def test_split_words_normalises_every_style(name: str) -> None:
    assert split_words(name) == ("send", "email")


def test_split_words_acronyms_and_digits() -> None:
    assert split_words("getHTTPResponse") == ("get", "http", "response")
    assert split_words("fetch_v2Data") == ("fetch", "v", "2", "data")


@pytest.mark.parametrize(
    ("a", "b"), [("emails", "email"), ("searching", "search"), ("searches", "search"), ("queries", "query")]
)
def test_stem_tolerates_plurals_and_verb_forms(a: str, b: str) -> None:
    assert stem(a) == stem(b)


def test_mention_position_is_where_the_name_completes() -> None:
    words = words_of("please get the weather then sendEmail")
    assert mention("get_weather", words) == 3
    assert mention("send_email", words) == 6
    assert mention("delete_file", words) is None
