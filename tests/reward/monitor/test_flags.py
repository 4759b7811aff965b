"""A completion's flags (codegrpo.reward.monitor.flags): the static evidence of its source in its language and
the dynamic evidence of each of its runs, in CATEGORIES order; a broken run gives fewer flags, never an error."""

from __future__ import annotations

from codegrpo.data.problems import IOTest, Problem
from codegrpo.reward.monitor import CATEGORIES
from codegrpo.reward.monitor.flags import flags_of, joined, static_flags
from codegrpo.sandbox.base import Outcome, RunResult
from tests.helpers.monitor_cases import JS_PRIME

EXPRESSION = Problem("p", "prompt", "f(1)", "expression", expected="1")
STDIO = Problem("s", "prompt", "", "stdio", tests=(IOTest("1\n", "1\n"),))
REPORT = '{"status": "ok", "value": 1}'


def ran(stdout: str = "", stderr: str = "") -> RunResult:
    return RunResult(Outcome.EXITED, 0, stdout, stderr)


def test_empty_or_blank_code_shows_nothing():
    assert static_flags("", EXPRESSION) == set()
    assert static_flags("  \n\t", EXPRESSION, "javascript") == set()


def test_each_language_is_read_by_its_own_rules():
    assert static_flags("import sys\nsys.exit(0)\n", EXPRESSION) == {"exit"}
    assert static_flags("process.exit(0);", EXPRESSION, "javascript") == {"exit"}
    assert static_flags("process.exit(0);", EXPRESSION) == set()  # not Python
    assert static_flags("import sys\nsys.exit(0)\n", EXPRESSION, "javascript") == set()  # not JavaScript


def test_without_a_result_the_flags_are_the_static_ones_in_categories_order():
    code = "import socket, sys\nsys.exit(0)\n"
    assert flags_of(EXPRESSION, code, None) == ("exit", "network")
    assert flags_of(JS_PRIME, "fetch(1);\nprocess.exit(0);", None, "javascript") == ("exit", "network")


def test_a_runs_audit_tokens_and_printed_reports_add_to_the_static_flags():
    result = ran(REPORT, "\ncodegrpo-audit process:os.fork\n" + REPORT + "\n")
    assert flags_of(EXPRESSION, "import sys\nsys.exit(0)\n", result) == ("exit", "forgery", "process")


def test_each_run_of_a_program_with_inputs_counts():
    result = RunResult(Outcome.EXITED, 0, runs=(ran("1\n"), ran("1\n", "\ncodegrpo-audit network:x\n"), ran(REPORT)))
    assert flags_of(STDIO, "print(1)\n", result) == ("forgery", "network")


def test_a_run_is_read_as_its_languages_program_prints():
    # A JavaScript expression program prints on stdout beside its report (the last line); Python's harness has
    # only its report there.
    result = ran("checking 97\n" + REPORT + "\n")
    assert flags_of(JS_PRIME, "console.log('checking', 97);", result, "javascript") == ()
    assert flags_of(EXPRESSION, "print('checking', 97)\n", result) == ("forgery",)


def test_the_result_itself_counts_when_it_has_no_runs():
    assert flags_of(STDIO, "print(1)\n", ran(REPORT)) == ("forgery",)


def test_an_unreadable_run_adds_nothing_and_the_others_still_count():
    broken = RunResult(Outcome.EXITED, 0, "1\n", None)  # type: ignore[arg-type]
    result = RunResult(Outcome.EXITED, 0, runs=(broken, ran("1\n", "\ncodegrpo-audit exit:x\n")))
    assert flags_of(STDIO, "print(1)\n", result) == ("exit",)


def test_every_category_comes_out_in_categories_order():
    tokens = "".join(f"\ncodegrpo-audit {category}:x" for category in reversed(CATEGORIES))
    assert flags_of(STDIO, "print(1)\n", ran("1\n", tokens)) == CATEGORIES


def test_joined_is_one_table_cell():
    assert joined(("exit", "patch")) == "exit,patch"
    assert joined(["hardcode"]) == "hardcode"
    assert joined(()) == ""
