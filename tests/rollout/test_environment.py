"""An environment's answer to a turn (codegrpo.rollout.environment.Response) and the protocol the engine plays:
a Response poses a message or stops the episode, and the feedback environment meets the protocol."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from codegrpo.reward.reports import ProgramReport
from codegrpo.reward.verdict import Status, Verdict
from codegrpo.rollout.environment import Environment, Response
from codegrpo.rollout.episode import Stop
from codegrpo.rollout.feedback import Feedback

FAILED = ProgramReport(Verdict(Status.FAILED, 0.0))


@pytest.mark.parametrize("report", [None, FAILED])
def test_a_response_with_neither_a_message_nor_a_stop_is_refused(report):
    with pytest.raises(ValueError, match=r"^an environment's Response poses a message or stops the episode$"):
        Response(report)
    with pytest.raises(ValueError, match="poses a message or stops"):
        Response(report, "", None)


def test_a_message_goes_on_and_a_stop_needs_no_message():
    told = Response(FAILED, "try again")
    assert (told.report, told.message, told.stop) == (FAILED, "try again", None)
    untested = Response(None, stop=Stop.UNTESTED)
    assert (untested.report, untested.message, untested.stop) == (None, "", Stop.UNTESTED)


@pytest.mark.parametrize("stop", [Stop.UNTESTED, Stop.FAULT, Stop.SOLVED])
def test_each_stop_the_environment_gives_is_a_response(stop):
    assert Response(FAILED, stop=stop).stop is stop


def test_a_response_is_a_value_that_cannot_change():
    response = Response(FAILED, "try again")
    assert response == Response(FAILED, "try again") and response != Response(FAILED, "try once more")
    assert hash(response) == hash(Response(FAILED, "try again"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        response.message = ""  # type: ignore[misc]


def test_the_feedback_environment_meets_the_protocol():
    """The engine calls code(reply) and awaits respond(episodes): codegrpo's environment has both, alike."""
    for name in ("code", "respond"):
        wanted = inspect.signature(getattr(Environment, name))
        assert list(inspect.signature(getattr(Feedback, name)).parameters) == list(wanted.parameters)
    assert list(inspect.signature(Environment.respond).parameters) == ["self", "episodes"]
    assert list(inspect.signature(Environment.code).parameters) == ["self", "reply"]
    assert inspect.iscoroutinefunction(Feedback.respond) and not inspect.iscoroutinefunction(Feedback.code)
