"""The tests' literals (codegrpo.reward.monitor.literals): a problem's inputs, argument lists and expected values
as keys, read from each form's tests, and which literals of a completion are one of them."""

from __future__ import annotations

import ast

import pytest

from codegrpo.config.choices import LanguageName
from codegrpo.data.problems import IOTest, Problem
from codegrpo.reward.monitor.literals import (
    _base_case,
    _js_test_literals,
    _key,
    _python_test_literals,
    _rich,
    _TestLiterals,
    _trivial,
)

EXPRESSION = Problem("p", "prompt", "[f(97), f(91), g(3, 50)] == [1, 2]", "expression", expected="[true, false, false]")
CALL = Problem(
    "c",
    "prompt",
    "",
    "call",
    tests=(IOTest("[1, 2]", "36"), IOTest("[2, 2]", "[5, 6]"), IOTest("not json", "nor this")),
    public_tests=(IOTest("[40]", "4000"),),
    fn_name="f",
)
STDIO = Problem(
    "s",
    "prompt",
    "",
    "stdio",
    tests=(IOTest("3 4\n", "7\n"), IOTest("abc\n", " 1 2 3 4\n"), IOTest("1\n2\n", "1234\n"), IOTest("1 23", "5")),
    public_tests=(IOTest("5 6 7\n", "18\n"),),
)
HUMANEVAL_CHECK = Problem(
    "h",
    "prompt",
    "def check(candidate):\n    assert candidate([1.0, 2.0, 3.5]) == True\n    assert candidate(100, 3) == 12345\n",
    "humaneval",
    entry_point="f",
)


def _node(source: str) -> ast.expr:
    return ast.parse(source, mode="eval").body


def test_a_key_tells_types_apart_and_sorts_dicts():
    assert _key(1) != _key(True) and _key(1) != _key("1")
    assert _key({"b": 1, "a": 2}) == _key({"a": 2, "b": 1})
    assert _key((1, 2)) == _key([1, 2])
    assert _key(object) is not None  # what JSON cannot write is its repr


@pytest.mark.parametrize("value", [None, True, False, 0, 2, -2, 2.0, "", "a", " a ", b"x", [], [1], {}, {1: 2}, (2,)])
def test_trivial_values(value):
    assert _trivial(value)


@pytest.mark.parametrize("value", [3, -3, 2.5, "ab", [1, 2], [3], {"a": 1, "b": 2}, object()])
def test_values_past_trivial(value):
    assert not _trivial(value)


def test_a_base_case_is_trivial_or_an_int_up_to_ten():
    assert _base_case(10) and _base_case(-10) and _base_case("a")
    assert not _base_case(11) and not _base_case(10.0) and not _base_case("ab")


def test_a_rich_value_has_several_items_a_long_text_or_a_large_or_fractional_number():
    assert _rich([1, 2]) and _rich({"a": 1, "b": 2}) and _rich("abcdefgh") and _rich(1000) and _rich(-1000)
    assert _rich(2.5)
    assert not _rich([1]) and not _rich("abcdefg") and not _rich(999) and not _rich(3.0)
    assert not _rich(True) and not _rich(None)


def test_python_test_literals_are_call_arguments_and_compared_values():
    assert list(_python_test_literals("[f(97), f(1, 2), g([3, 4]) == [5, 6], h(x) == 7]")) == [
        ("input", 97),
        ("input", 1),
        ("input", 2),
        ("arguments", (1, 2)),
        ("output", [5, 6]),
        ("output", 7),
        ("input", [3, 4]),
    ]
    assert list(_python_test_literals("f(1, x)")) == [("input", 1)]  # not every argument a literal: no list
    assert list(_python_test_literals("f(1) == 3 == g(2)")) == [("input", 1), ("input", 2)]  # a chain: no output
    assert list(_python_test_literals("def (")) == []


def test_javascript_test_literals_are_call_arguments_and_values_compared_for_equality():
    assert sorted(_js_test_literals("[f(97), f(1, 2) === 30, g(x) == 'abc', h(3) < 4]"), key=str) == sorted(
        [("input", 97), ("input", 1), ("input", 2), ("output", 30), ("output", "abc"), ("input", 3)], key=str
    )
    assert list(_js_test_literals("function (")) == []


def test_expression_form_literals_include_the_expected_value():
    tests = _TestLiterals(EXPRESSION)
    assert tests.inputs == {"97", "91", "3", "50"}
    assert tests.arguments == {"[3, 50]"}
    assert tests.outputs == {"[1, 2]", "[true, false, false]"}


def test_javascript_expression_literals_come_from_esprima():
    test = "[isPrime(97), isPrime(91)].map((x) => !x)"  # not Python
    problem = Problem("j", "prompt", test, "expression", expected="[true, false]")
    tests = _TestLiterals(problem, LanguageName.javascript)
    assert (tests.inputs, tests.outputs) == ({"97", "91"}, {"[true, false]"})


def test_call_form_literals_are_each_tests_json_and_the_public_tests_too():
    tests = _TestLiterals(CALL)
    assert tests.inputs == {"40"}  # 1 and 2 are trivial
    assert tests.arguments == {"[1, 2]", "[2, 2]"}
    assert tests.outputs == {"36", "[5, 6]", "4000"}


def test_humaneval_literals_come_from_the_check():
    tests = _TestLiterals(HUMANEVAL_CHECK)
    assert tests.inputs == {"[1.0, 2.0, 3.5]", "100", "3"}
    assert tests.arguments == {"[100, 3]"}
    assert tests.outputs == {"12345"}  # True is trivial


def test_stdio_literals_are_whole_texts_of_several_words():
    tests = _TestLiterals(STDIO)
    assert tests.texts == {"1 2 3 4", "5 6 7", "1 23"}  # "3 4" and "1\n2" are too short, "1234" one word
    assert tests.is_input_value(" 1 2 3 4\n") and not tests.is_input_value("3 4")


def test_no_problem_has_no_literals():
    tests = _TestLiterals(None)
    assert not (tests.inputs or tests.outputs or tests.texts or tests.arguments)
    assert not tests.is_input(_node("97")) and not tests.is_expected_value([1, 2])


def test_is_input_is_a_literal_of_a_tests_input():
    tests = _TestLiterals(EXPRESSION)
    assert tests.is_input(_node("97")) and tests.is_input(_node("(97, 5)"))
    for source in ("(97,)", "[97]", "'97'", "x", "f(97)", "{97: 1}", "5"):
        assert not tests.is_input(_node(source)), source


def test_a_literal_of_argument_lists_needs_two_of_them():
    tests = _TestLiterals(CALL)
    assert tests.is_input_value({(1, 2), (2, 2)})
    assert not tests.is_input_value({(1, 2), (5, 5)})


def test_is_arguments_is_a_tuple_that_is_a_whole_argument_list():
    tests = _TestLiterals(EXPRESSION)
    assert tests.is_arguments(_node("(3, 50)"))
    assert not tests.is_arguments(_node("(50, 3)")) and not tests.is_arguments(_node("[3, 50]"))


def test_a_compared_input_is_evidence_unless_every_item_is_a_base_case():
    tests = _TestLiterals(EXPRESSION)
    assert tests.is_compared(_node("97")) and tests.is_compared(_node("(3, 50)"))
    assert not tests.is_compared(_node("3"))  # a test's input, and a base case
    assert tests.is_compared_value((3, 50)) and not tests.is_compared_value((3, 4))


def test_an_expected_literal_must_be_rich():
    tests = _TestLiterals(EXPRESSION)
    assert tests.is_expected(_node("[True, False, False]")) and tests.is_expected(_node("(1, 2)"))
    assert not tests.is_expected(_node("[1]")) and not tests.is_expected(_node("x"))
    assert _TestLiterals(CALL).is_expected_value(4000)
    assert not _TestLiterals(CALL).is_expected_value(36)  # an expected value, but not rich: an honest answer


def test_an_expected_text_is_json_that_begins_with_a_bracket():
    tests = _TestLiterals(EXPRESSION)
    assert tests.is_expected_text("[true, false, false]") and tests.is_expected_text("[1,2]")
    assert (
        not tests.is_expected_text(" [1, 2]") and not tests.is_expected_text("[1, 2") and not tests.is_expected_text("")
    )
