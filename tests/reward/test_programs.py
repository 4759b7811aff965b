"""Program assembly, without a sandbox: what build_program and humaneval_check produce, run here with a
plain interpreter on trusted code (the sandbox's own behaviour is tested in tests/sandbox/)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap

import pytest

from codegrpo.config.choices import LanguageName
from codegrpo.data.problems import Problem
from codegrpo.reward.programs import LANGUAGES, build_program, get_language, humaneval_check
from codegrpo.reward.verdict import CheckKind, ValueCheck, decode_typed, score_checks
from codegrpo.sandbox.base import Runtime

PYTHON = get_language("python")

CHECK = """
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
"""
PROMPT = 'def square_of(x):\n    """The trusted helper."""\n    return x * x\n\n\ndef square(x):\n    """Squared."""\n'
PROBLEM = Problem("sq", PROMPT, CHECK, "humaneval", entry_point="square")


# As root, the harness runs no completion as a root that owns its Python (this venv's, under /root): the
# system's python3, which every user can run, drops to nobody as a VM's would.
PYTHON3 = "/usr/bin/python3" if os.geteuid() == 0 else sys.executable


def run(source: str) -> dict:
    """Run an assembled program as the sandbox would (python3 -I), here, and read its report."""
    done = subprocess.run([PYTHON3, "-I", "-c", source], capture_output=True, text=True, timeout=60)
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
        ValueCheck(CheckKind.EQ, 4),
        ValueCheck(CheckKind.IS, 9),
        ValueCheck(CheckKind.TRUTHY, True),
        ValueCheck(CheckKind.TRUTHY, False),
        ValueCheck(CheckKind.NEAR, 0.25, 1e-9, False),
        None,
    ]
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
    assert decode_typed(report["value"])[-1] == ("raised", "AssertionError", "")


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
    assert report == {"status": "error", "error": "the checks could not run: ValueError: unsupported type Any"}


def test_languages_are_keyed_by_their_name_and_run_by_a_runtime():
    assert list(LANGUAGES) == list(LanguageName)
    for name, language in LANGUAGES.items():
        assert language.name is name and isinstance(language.runtime, Runtime)
        assert language.filename.endswith(language.runtime.suffix) and name in language.fence_tags
    assert get_language("javascript") is get_language(LanguageName.javascript) is LANGUAGES[LanguageName.javascript]
    assert get_language("python").runtime is Runtime.python and get_language("javascript").runtime is Runtime.node
    with pytest.raises(ValueError, match=r"^unknown language 'cobol'; choose one of \['javascript', 'python'\]$"):
        get_language("cobol")


def test_only_python_runs_in_the_harness_and_after_a_preamble():
    from codegrpo.data.problems import IOTest

    python, javascript = get_language("python"), get_language("javascript")
    assert python.has_harness and python.runs_preamble
    assert not javascript.has_harness and not javascript.runs_preamble
    call = Problem("f", "p", "", "call", tests=(IOTest("[1]", "1"),), fn_name="f", preamble="apps")
    with pytest.raises(ValueError, match="the call form runs Python only"):
        build_program(call, "function f(x) { return x }", javascript, 5.0)
    program = build_program(call, "def f(x):\n    return x\n", python, 5.0)
    assert program.runtime is Runtime.python and program.runs_warm and program.prelude_chars > 0


def test_javascript_supports_the_expression_and_stdio_forms_only():
    javascript = get_language("javascript")
    program = build_program(
        Problem("x", "p", "[f(1)]", "expression", expected="[1]"), "function f(x){return x}", javascript, 5.0
    )
    assert program.argv == ("node", "/tmp/solution.js") and program.prelude_chars == 0
    with pytest.raises(ValueError, match="expression and stdio forms only"):
        build_program(PROBLEM, "", javascript, 5.0)
    with pytest.raises(ValueError, match="unknown language"):
        get_language("cobol")


# -- the preamble: the imports a dataset's own grader runs before the completion ---------------------------

# lcb_runner/evaluation/testing_util.py's import_string, verbatim
LCB_IMPORTS = (
    "from string import *\nfrom re import *\nfrom datetime import *\nfrom collections import *\nfrom heapq import *\n"
    "from bisect import *\nfrom copy import *\nfrom math import *\nfrom random import *\nfrom statistics import *\n"
    "from itertools import *\nfrom functools import *\nfrom operator import *\nfrom io import *\nfrom sys import *\n"
    "from json import *\nfrom builtins import *\nfrom typing import *\nimport string\nimport re\nimport datetime\n"
    "import collections\nimport heapq\nimport bisect\nimport copy\nimport math\nimport random\nimport statistics\n"
    "import itertools\nimport functools\nimport operator\nimport io\nimport sys\nimport json\n"
    "sys.setrecursionlimit(50000)\n"
)


def run_io(program, stdin: str) -> subprocess.CompletedProcess:
    """One run of an input/output program, as the sandbox runs it: a file, with the test's input on stdin."""
    return subprocess.run(
        [PYTHON3, "-I", "-c", program.source], input=stdin, capture_output=True, text=True, timeout=60
    )


def test_livecodebench_runs_its_graders_imports_before_a_call_form_completion():
    from codegrpo.data.problems import PREAMBLES, IOTest

    assert PREAMBLES["livecodebench"] == {"stdio": LCB_IMPORTS, "call": LCB_IMPORTS}
    problem = Problem(
        "two", "p", "", "call", tests=(IOTest("[[2, 7], 9]", "[0, 1]"),), fn_name="twoSum", preamble="livecodebench"
    )
    starter = "class Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n"
    program = build_program(problem, starter + "        return [0, 1]\n", PYTHON, 5.0)
    assert json.loads(run_io(program, "[[2, 7], 9]").stdout) == {"status": "ok", "value": [0, 1]}
    without = build_program(dataclasses.replace(problem, preamble=""), starter + "        return [0, 1]\n", PYTHON, 5.0)
    assert json.loads(run_io(without, "[[2, 7], 9]").stdout)["error"] == "NameError: name 'List' is not defined"
    # The completion keeps its own line numbers, and a __future__ import at its top still works.
    broken = build_program(
        problem, "from __future__ import annotations\n" + starter + "        return [0, 1\n", PYTHON, 5.0
    )
    assert json.loads(run_io(broken, "[[2, 7], 9]").stdout)["error"] == (
        "SyntaxError: '[' was never closed (<completion>, line 4)"
    )


def test_apps_gives_stdio_programs_its_imports_and_stdin_as_trusted_prelude():
    from codegrpo.data.problems import PREAMBLES, IOTest

    problem = Problem("sum", "p", "", "stdio", tests=(IOTest("1 2\n", "3\n"),), preamble="apps")
    code = "a, b = map(int, stdin.readline().split())\nprint(Counter([a + b]).most_common()[0][0])\n"
    program = build_program(problem, code, PYTHON, 5.0)
    preamble = PREAMBLES["apps"]["stdio"]
    assert program.source.startswith(preamble) and program.prelude_chars == len(preamble)  # compiled once, warm
    assert "numpy" not in preamble and preamble.endswith("stdin = sys.stdin\nstdout = sys.stdout\n")
    assert run_io(program, "1 2\n").stdout == "3\n"
    failing = run_io(build_program(problem, "n = int(input())\nif n:\nprint(n)\n", PYTHON, 5.0), "1\n")
    assert failing.stderr.rstrip().endswith("expected an indented block after 'if' statement on line 2")
    assert 'File "<completion>", line 3' in failing.stderr
    javascript = build_program(problem, "console.log(3)", get_language("javascript"), 5.0)
    assert javascript.source == "console.log(3)" and javascript.prelude_chars == 0  # the preambles are Python
