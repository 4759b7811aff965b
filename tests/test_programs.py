"""Program assembly, without a sandbox: what build_program and humaneval_check produce, run here with a
plain interpreter on trusted code (the sandbox's own behaviour is tested in tests/sandbox/)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from codegrpo.problems import Problem
from codegrpo.programs import build_program, get_language, humaneval_check
from codegrpo.verdict import decode_typed, score_checks

PYTHON = get_language("python")

CHECK = '''
import math

def check(candidate):
    assert candidate(2) == 4
    assert candidate(3) is 9
    assert candidate(1)
    assert not candidate(0)
    assert abs(candidate(0.5) - 1.0 / 4.0) < 1e-9
    seen = [candidate(x) for x in range(3)]
    for x in range(4):
        assert candidate(x) == square_of(x)
'''
PROMPT = 'def square_of(x):\n    """The trusted helper."""\n    return x * x\n\n\ndef square(x):\n    """Squared."""\n'
PROBLEM = Problem("sq", PROMPT, CHECK, "humaneval", entry_point="square")


def run(source: str) -> dict:
    """Run an assembled program as the sandbox would (python3 -I), here, and read its report."""
    done = subprocess.run([sys.executable, "-I", "-c", source], capture_output=True, text=True, timeout=60)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_expression_programs_carry_the_harness_and_report_a_value():
    problem = Problem("add", "Add.", "[add(1, 2), add(-1, 1)]", "expression", expected="[3, 0]")
    program = build_program(problem, "def add(a, b):\n    return a + b\n", PYTHON, 5.0)
    assert program.argv == ("python3", "-I", "/tmp/solution.py") and program.runs_warm
    assert 0 < program.prelude_chars < len(program.source) and program.source[program.prelude_chars - 1] == "\n"
    assert "[3, 0]" not in program.source  # the expected value stays on the host
    assert run(program.source) == {"status": "ok", "value": [3, 0]}
    assert run(build_program(problem, "raise ValueError('no')", PYTHON, 5.0).source)["status"] == "error"


def test_humaneval_checks_split_into_host_judged_values_and_asserts():
    check = humaneval_check(PROBLEM)
    assert check.expected == [
        ["eq", 4], ["is", 9], ["truthy", True], ["truthy", False], ["near", 0.25, 1e-9, False], None,
    ]  # fmt: skip
    # What a value check must be is not in the program; the loop's assert is decided in the harness.
    assert "== 4" not in check.source and "is 9" not in check.source and "1.0 / 4.0" not in check.source
    assert "seen = [candidate(x) for x in range(3)]" in check.source  # statements without asserts stay


def test_a_right_candidate_passes_every_check_and_a_wrong_one_fails_them():
    right = build_program(PROBLEM, "    return x * x\n", PYTHON, 5.0)
    report = run(right.source)
    assert report["status"] == "ok"
    assert score_checks(decode_typed(report["value"]), humaneval_check(PROBLEM).expected, partial=False).reward == 1.0
    wrong = run(build_program(PROBLEM, "    return x + x\n", PYTHON, 5.0).source)
    verdict = score_checks(decode_typed(wrong["value"]), humaneval_check(PROBLEM).expected, partial=True)
    assert 0.0 < verdict.reward < 1.0  # x + x is right for 2 and 0 only


def test_the_checks_use_the_prompts_helpers_not_the_completions():
    # The completion redefines the helper the check compares against: the check still uses the prompt's.
    cheat = "    return 0\n\n\ndef square_of(x):\n    return 0\n"
    report = run(build_program(PROBLEM, cheat, PYTHON, 5.0).source)
    assert decode_typed(report["value"])[-1] == ("raised", "AssertionError")


def test_a_completion_that_forges_the_records_gets_an_error():
    forge = textwrap.dedent("""
        import marshal, os, struct, sys
        frame, fd = sys._getframe(), None
        while frame is not None and fd is None:
            fd = frame.f_locals.get("result_fd")
            frame = frame.f_back
        data = marshal.dumps(("ok", [["assert", True]] * 6))
        os.write(fd, struct.pack(">I", len(data)) + data)
        os._exit(0)
    """)
    assert run(build_program(PROBLEM, forge, PYTHON, 5.0).source)["status"] == "error"


def test_values_that_are_not_plain_builtins_never_reach_the_checks():
    forged_eq = "    class Any(int):\n        def __eq__(self, other):\n            return True\n    return Any(1)\n"
    report = run(build_program(PROBLEM, forged_eq, PYTHON, 5.0).source)
    # The stand-in raises for a value of another type: here in a statement outside any assert, so no check runs.
    assert report == {"status": "error", "error": "the checks could not run: ValueError: "}


def test_javascript_supports_the_expression_and_stdio_forms_only():
    javascript = get_language("javascript")
    program = build_program(Problem("x", "p", "[f(1)]", "expression", expected="[1]"), "function f(x){return x}",
                            javascript, 5.0)  # fmt: skip
    assert program.argv == ("node", "/tmp/solution.js") and program.prelude_chars == 0
    with pytest.raises(ValueError, match="expression and stdio forms only"):
        build_program(PROBLEM, "", javascript, 5.0)
    with pytest.raises(ValueError, match="unknown language"):
        get_language("cobol")
