"""The trivial programs that a problem's tests should all fail: which fit each form, and that each does what
it is named for."""

from __future__ import annotations

import contextlib
import io
import sys

import pytest

from codegrpo.config.choices import Form
from codegrpo.data.problems import IOTest, Problem, parse_problem
from codegrpo.data.weak_tests import trivial_programs


def _stdio(*tests: IOTest) -> Problem:
    return Problem("echo", "Print it.", "", Form.stdio, tests=tests)


def _call(*outputs: str) -> Problem:
    return Problem("add", "Add.", "", Form.call, fn_name="add", tests=tuple(IOTest("[1, 2]", out) for out in outputs))


def _run_stdio(code: str, stdin: str, monkeypatch) -> str:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code, {"__name__": "__main__"})
    return out.getvalue()


def _function(code: str, name: str):
    namespace: dict = {}
    exec(code, namespace)
    return namespace[name]


def test_a_stdio_problem_gets_three_programs_that_print_nothing_the_input_or_the_first_output(monkeypatch):
    problem = _stdio(IOTest("1 2\n", "3\n"), IOTest("2 2\n", "4\n"))
    programs = trivial_programs(problem)
    assert [what for what, _ in programs] == ["prints nothing", "echoes its input", "prints the first test's output"]
    outputs = [_run_stdio(code, "2 2\n5 5\n", monkeypatch) for _, code in programs]
    assert outputs == ["", "2 2\n5 5\n", "3\n"]  # all of its input, not a line


def test_the_first_output_is_printed_exactly_whatever_it_holds(monkeypatch):
    awkward = 'it\'s "quoted"\\n\n\ttabbed\n'
    [*_, (_, code)] = trivial_programs(_stdio(IOTest("", awkward)))
    assert _run_stdio(code, "", monkeypatch) == awkward
    [*_, (_, code)] = trivial_programs(_stdio())  # no tests: prints nothing at all
    assert _run_stdio(code, "x\n", monkeypatch) == ""


def test_a_call_problem_gets_functions_returning_none_the_first_argument_and_the_first_output():
    programs = trivial_programs(_call("3", "4"))
    assert [what for what, _ in programs] == [
        "returns None",
        "returns its first argument",
        "returns the first test's output",
    ]
    functions = [_function(code, "add") for _, code in programs]
    assert [f(1, 2) for f in functions] == [None, 1, 3]
    assert functions[1]() is None  # no arguments: nothing to return


@pytest.mark.parametrize(
    ("output", "value"),
    [([1, [2, None]], [1, [2, None]]), (True, True), ("ab", "ab"), ({"k": 1.5}, {"k": 1.5}), (None, None)],
)
def test_the_first_output_is_returned_as_the_value_the_test_expects(output, value):
    """The output as a loaded problem holds it (JSON text), returned as the Python value its test compares."""
    record = {"id": "c", "prompt": "p", "fn_name": "f", "tests": [{"input": [1], "output": output}]}
    problem = parse_problem(record, "p.jsonl:1")
    [*_, (what, code)] = trivial_programs(problem)
    assert what == "returns the first test's output" and _function(code, "f")(1) == value


def test_a_call_problem_without_tests_gets_no_constant():
    assert [what for what, _ in trivial_programs(_call())] == ["returns None", "returns its first argument"]


def test_a_humaneval_problem_gets_functions_named_for_its_entry_point():
    problem = Problem("H/0", "def close(xs):\n", "def check(candidate): pass", Form.humaneval, entry_point="close")
    programs = trivial_programs(problem)
    assert [what for what, _ in programs] == ["returns None", "returns its first argument"]
    assert [_function(code, "close")([1.0, 2.0], 0.5) for _, code in programs] == [None, [1.0, 2.0]]


def test_no_trivial_program_fits_an_expression_problem_or_one_without_a_function_name():
    assert trivial_programs(Problem("e", "f(x).", "f(1)", Form.expression, expected="1")) == []
    assert trivial_programs(Problem("H/1", "p", "def check(c): pass", Form.humaneval)) == []
    assert trivial_programs(Problem("c", "p", "", Form.call, tests=(IOTest("[1]", "1"),))) == []
