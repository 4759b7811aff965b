"""Why a completion got its reward (codegrpo.reward.explain): the first line of the error, the reason shown, the head
of the scored code and the record that holds them."""

from __future__ import annotations

import json

import pytest

from codegrpo.reward.explain import code_head, explain, first_error_line, reason
from codegrpo.reward.verdict import Scored, Status, Verdict


def scored_as(status: Status, detail: str = "", code: str = "") -> Scored:
    return Scored("p1", code, Verdict(status, 0.0, detail), 0.0)


def test_first_error_line_names_the_exception():
    def scored(status: Status, detail: str = "") -> Scored:
        return Scored("add", "", Verdict(status, 0.0, detail), 0.0)

    assert first_error_line(scored(Status.ERROR, "NameError: name 'add' is not defined\nmore")) == (
        "NameError: name 'add' is not defined"
    )
    assert first_error_line(scored(Status.FAILED)) == "wrong answer"
    assert first_error_line(scored(Status.PASSED)) == ""
    long = first_error_line(scored(Status.ERROR, "ValueError: " + "x" * 500))
    assert len(long) == 160 and long.endswith("...")


def test_the_first_error_line_skips_blank_lines_and_is_cut_only_past_160_characters():
    assert first_error_line(scored_as(Status.ERROR, "\n   \n  ValueError: bad  \nline 2")) == "ValueError: bad"
    assert first_error_line(scored_as(Status.ERROR, "E" * 160)) == "E" * 160
    assert first_error_line(scored_as(Status.ERROR, "E" * 161)) == "E" * 157 + "..."


@pytest.mark.parametrize("status", [Status.ERROR, Status.TIMEOUT, Status.NO_CODE, Status.INFRA])
def test_a_verdict_without_detail_is_named_by_its_status(status):
    assert first_error_line(scored_as(status, " \n")) == status.value


def test_the_reason_for_no_code_says_what_the_completion_lacked():
    assert reason(scored_as(Status.NO_CODE)) == (
        "no code: the completion is empty, or its code blocks are all in another language or empty"
    )
    assert reason(scored_as(Status.NO_CODE, "the code block is in rust")) == "the code block is in rust"


@pytest.mark.parametrize(
    ("status", "detail", "shown"),
    [
        (Status.PASSED, "ran in 3 ms", ""),
        (Status.FAILED, 'got "11", expected "10"\ntest 2', 'got "11", expected "10"'),
        (Status.FAILED, "", "wrong answer"),
        (Status.TIMEOUT, "", "timeout"),
        (Status.ERROR, "ZeroDivisionError: division by zero", "ZeroDivisionError: division by zero"),
    ],
)
def test_the_reason_is_the_first_error_line_for_every_other_verdict(status, detail, shown):
    assert reason(scored_as(status, detail)) == shown


def test_the_code_head_keeps_the_first_three_lines_without_trailing_space():
    assert code_head("\n\nimport sys  \nx = 1\t\nprint(x)\n\n") == "import sys\nx = 1\nprint(x)"
    assert code_head("a\nb\nc\nd\ne") == "a\nb\nc\n..."
    assert code_head("a\nb\nc\nd", lines=1) == "a\n..."
    assert code_head("") == ""


def test_the_code_head_is_cut_to_240_characters():
    assert code_head("x" * 240) == "x" * 240
    assert code_head("x" * 241) == "x" * 240 + "\n..."
    assert code_head("y" * 200 + "\n" + "z" * 100) == "y" * 200 + "\n" + "z" * 39 + "\n..."
    assert code_head("abcdef", chars=4) == "abcd\n..."


def test_the_code_head_escapes_what_no_writer_takes():
    head = code_head("s = '\ud800'\nbell = '\x07'")
    assert head == "s = '\\ud800'\nbell = '\\x07'"
    head.encode("utf-8")  # a lone surrogate would raise here


def test_explain_holds_what_a_person_reads_of_a_verdict():
    scored = Scored(
        "two_sum",
        "def f(a, b):\n    return a - b\nprint(f(1, 2))\nprint(f(2, 3))\n",
        Verdict(Status.FAILED, 0.25, 'got "-1", expected "3"\nmore'),
        0.4,
        ("exit", "print_expected"),
    )
    record = explain(scored)
    assert record == {
        "problem_id": "two_sum",
        "status": "failed",
        "reward": 0.25,
        "reason": 'got "-1", expected "3"',
        "code": "def f(a, b):\n    return a - b\nprint(f(1, 2))\n...",
        "flags": ["exit", "print_expected"],
    }
    assert json.loads(json.dumps(record)) == record


def test_explain_keeps_an_unscored_reward_as_none():
    record = explain(Scored("p", "", Verdict(Status.INFRA, None, "sandbox unreachable"), 0.0))
    assert (record["status"], record["reward"], record["reason"], record["code"], record["flags"]) == (
        "infra",
        None,
        "sandbox unreachable",
        "",
        [],
    )
