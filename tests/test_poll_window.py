"""When a process polls for Redis's answer (server/state/poll_window.py): each wait for at most the window, and
not at all for a while once answers keep coming later than the window (Redis on another host, or a
process too busy for polling to pay)."""

from __future__ import annotations

import pytest

from mockllm.server.state.poll_window import MAX_POLL_S, MISSES_TO_REST, REST_WAITS, PollWindow


def test_answers_within_the_window_keep_every_wait_polled() -> None:
    window = PollWindow(200e-6)
    for _ in range(1000):
        assert window.polls()
        window.answered(150e-6)
    assert window.misses == 0
    assert window.resting == 0


def test_answers_later_than_the_window_in_a_row_rest_polling_then_it_is_tried_again() -> None:
    window = PollWindow(200e-6)
    for _ in range(MISSES_TO_REST - 1):
        assert window.polls()
        window.answered(0.002)
    assert window.polls()  # not yet: one miss short
    window.answered(0.002)
    assert [window.polls() for _ in range(REST_WAITS)] == [False] * REST_WAITS
    assert window.polls()  # tried again
    window.answered(100e-6)
    assert window.polls()


def test_an_answer_within_the_window_starts_the_count_of_misses_again() -> None:
    window = PollWindow(200e-6)
    for _ in range(3):
        for _ in range(MISSES_TO_REST - 1):
            window.answered(0.002)
        window.answered(200e-6)  # on the window's edge: a hit
    assert window.misses == 0
    assert window.polls()


def test_a_window_of_zero_never_polls_and_the_window_is_bounded() -> None:
    window = PollWindow(0.0)
    assert not any(window.polls() for _ in range(10))
    PollWindow(MAX_POLL_S)  # the longest accepted
    for wrong in (-1e-6, MAX_POLL_S * 1.01):
        with pytest.raises(ValueError):
            PollWindow(wrong)
