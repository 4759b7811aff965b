"""The feedback environment (codegrpo.rollout.feedback): the message a model is shown after a turn."""

from __future__ import annotations

import asyncio

import pytest

from codegrpo import MemoryBackend, Outcome, RunResult
from codegrpo.config.rollout import RolloutConfig
from codegrpo.data.problems import IOTest
from codegrpo.data.public_tests import public
from codegrpo.errors import UsageError
from codegrpo.reward.reports import ProgramReport, RunReport
from codegrpo.reward.verdict import Status, Verdict
from codegrpo.rollout.environment import Response
from codegrpo.rollout.episode import Episode, Stop
from codegrpo.rollout.feedback import Feedback, feedback_message
from tests.helpers.feedback import DOUBLE, PUBLIC, SAME, SUM, fenced, scorer_of
from tests.helpers.sandbox import answering


def _result(*runs: RunReport | None) -> ProgramReport:
    failed = [r for r in runs if r is None or r.status is not Status.PASSED]
    return ProgramReport(Verdict(Status.FAILED if failed else Status.PASSED, 0.0), runs)


PASS = RunReport(Status.PASSED, "", "", "")


def test_feedback_shows_input_expected_and_output_of_the_failing_tests():
    tests = [IOTest("1 2\n", "3\n"), IOTest("5 5\n", "10\n")]
    wrong = RunReport(Status.FAILED, 'got "11", expected "10"', "11\n", "")
    text = feedback_message(tests, _result(PASS, wrong), RolloutConfig())
    assert "2 public tests: 1 passed, 1 failed" in text
    assert "Test 2: wrong answer." in text and "```\n5 5\n```" in text and "```\n10\n```" in text
    assert "Your code printed:\n```\n11\n```" in text and 'First difference: got "11", expected "10"' in text
    assert "Test 1" not in text and text.endswith("in one ```python code block.")


def test_feedback_without_expected_outputs_shows_none_even_in_the_reason():
    tests = [IOTest("5 5\n", "EXPECTED-10\n")]
    wrong = RunReport(Status.FAILED, 'got "11", expected "EXPECTED-10"', "11\n", "")
    text = feedback_message(tests, _result(wrong), RolloutConfig(show_expected=False))
    assert "EXPECTED-10" not in text and "Expected" not in text and "```\n11\n```" in text


def test_feedback_cuts_long_text_and_keeps_the_end_of_an_error():
    long_input = "x" * 1000
    traceback = "Traceback (most recent call last):\n" + "  frame\n" * 200 + "ZeroDivisionError: division by zero"
    crash = RunReport(Status.ERROR, "exited (exit 1): ZeroDivisionError", "", traceback)
    text = feedback_message([IOTest(long_input, "y" * 1000)], _result(crash), RolloutConfig(truncate_chars=50))
    assert "x" * 50 + "\n... (950 more characters)" in text and "x" * 51 not in text
    assert "y" * 50 + "\n... (950 more characters)" in text
    assert text.count("ZeroDivisionError: division by zero") == 1 and "characters before" in text
    assert "Traceback (most recent" not in text  # the head of a long traceback is what is cut


def test_feedback_shows_at_most_max_failures_and_counts_the_rest():
    tests = [IOTest(f"in{n}\n", f"out{n}\n") for n in range(5)]
    runs = [RunReport(Status.FAILED, "", "nope\n", "")] * 4 + [RunReport(Status.TIMEOUT, "timed out", "", "timed out")]
    text = feedback_message(tests, _result(*runs), RolloutConfig(max_failures=2))
    assert "in0" in text and "in1" in text and "in2" not in text and "(3 more failing tests not shown.)" in text


def test_feedback_for_no_code_asks_for_a_code_block():
    text = feedback_message([PUBLIC], ProgramReport(Verdict(Status.NO_CODE, 0.0)), RolloutConfig(), fence="js")
    assert text.startswith("No code was found") and "```js code block" in text


def test_feedback_settings_are_checked():
    with pytest.raises(UsageError, match=r"rollout\.max_turns=0"):
        RolloutConfig(max_turns=0)


def test_the_environment_stops_a_solved_or_untested_episode_and_tells_a_failing_one():
    """Feedback, the environment: each episode's last code run on its public tests (on the public in-memory
    backend, which prints what CPython prints for these codes; print(1) has no answer: nothing may run it)."""
    right = "a, b = map(int, input().split())\nprint(a + b)"
    sandbox = answering(
        prints={right: lambda stdin: f"{sum(map(int, (stdin or '').split()))}\n", "print(0)": lambda _: "0\n"}
    )
    problems = [public(SUM, SAME), public(SUM, SAME), public(DOUBLE, SAME)]
    environment = Feedback(scorer_of(sandbox, problems), RolloutConfig())
    episodes = [Episode(problem, []) for problem in problems]
    replies = [fenced(right), fenced("print(0)"), fenced("print(1)")]
    for episode, reply in zip(episodes, replies, strict=True):
        episode.codes.append(environment.code(reply))
    solved, told, untested = asyncio.run(environment.respond(episodes))
    assert solved.stop is Stop.SOLVED and solved.report is not None and solved.report.passed
    assert told.stop is None and told.message.startswith("Your code was run on the 1 public test: 0 passed, 1 failed.")
    assert "Your code printed:\n```\n0\n```" in told.message
    assert untested == Response(None, stop=Stop.UNTESTED)  # DOUBLE has no public tests: nothing ran


def test_a_sandbox_failure_stops_the_episode_as_a_fault():
    """On the public in-memory backend: a sandbox that fails the public run stops the episode (FAULT), with
    the report that says so; nothing is told to the model."""
    sandbox = MemoryBackend(lambda program, stdin: RunResult(Outcome.SANDBOX_ERROR, error="the VM went away"))
    problem = public(SUM, SAME)
    environment = Feedback(scorer_of(sandbox, [problem]), RolloutConfig())
    episode = Episode(problem, [])
    episode.codes.append("print(3)")
    (response,) = asyncio.run(environment.respond([episode]))
    assert response.stop is Stop.FAULT and response.report is not None and response.report.fault
    assert response.message == "" and len(sandbox.programs) == 1
