"""Red team round 5: what a correct program prints comes out as under `python3 -I`, where the warm
parent's state used to leak into the program's process. Each form against a real `/usr/bin/python3 -I`
(stdout a pipe, as in a sandbox), then through the real reward as a stdin/stdout problem, warm and cold.

- A file object on fd 1 kept in __main__ with a function beside it (so __main__'s globals are a cycle):
  the collection at exit finalized its FileIO before the buffer above it was flushed; the output was lost.
- sys.stdout was the warm parent's, made when its fd 1 was /dev/null: it said it could seek, so
  io.TextIOWrapper(sys.stdout.buffer) failed with ESPIPE on the run's pipe.
- __builtins__ was the builtins dict (what an imported module has), not the module a script's __main__
  has: __builtins__.abs raised AttributeError.
"""

from __future__ import annotations

import asyncio
import subprocess
import textwrap
from pathlib import Path

import pytest

from codegrpo.data.problems import IOTest, Problem
from codegrpo.reward.programs import build_program, get_language
from codegrpo.reward.scorer import Scorer
from tests.helpers.run_if import run_if
from tests.helpers.sandbox import backends

pytestmark = run_if(bwrap=True, system_python=True)

INPUT = "21\n"
FORMS = {
    "open(1) in a global, read by a function": (
        "out = open(1, 'w')\ndef solve():\n    out.write(f'{int(input()) * 2}\\n')\nsolve()\n"
    ),
    "os.fdopen(1) in a class attribute": (
        "import os\nclass IO:\n    out = os.fdopen(1, 'w', buffering=1 << 16)\nIO.out.write(f'{int(input()) * 2}\\n')\n"
    ),
    "a file object in an object that refers to itself": (
        "import io\nclass Out:\n    def __init__(self):\n        self.me = self\n"
        "        self.f = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, 'w', closefd=False)))\n"
        "o = Out()\no.f.write(f'{int(input()) * 2}\\n')\n"
    ),
    "sys.stdout rewrapped": (
        "import io, sys\nsys.stdout = io.TextIOWrapper(sys.stdout.buffer, encoding='utf-8')\nprint(int(input()) * 2)\n"
    ),
    "sys.stdout detached and rewrapped": (
        "import io, sys\nsys.stdout = io.TextIOWrapper(sys.stdout.detach(), encoding='utf-8')\n"
        "print(int(input()) * 2)\n"
    ),
    "__builtins__ is the module": "print(__builtins__.abs(-int(input())) * 2, type(__builtins__).__name__)\n",
    "what the std streams say of themselves": (
        "import sys\nn = int(input())\nprint(n * 2, sys.stdout.seekable(), sys.stdout.line_buffering, sys.stdout.mode,"
        " sys.stdout.name, sys.stdin.name, sys.stderr.line_buffering, sys.stdout is sys.__stdout__)\n"
    ),
}


box = backends("warm", "cold", "ray", name="box")


@pytest.fixture(scope="module")
def expected(tmp_path_factory) -> dict[str, str]:
    outputs = {}
    for name, source in FORMS.items():
        path = Path(tmp_path_factory.mktemp("round5")) / "solution.py"
        path.write_text(source)
        done = subprocess.run(
            ["/usr/bin/python3", "-I", str(path)],
            input=INPUT,
            capture_output=True,
            text=True,
            timeout=30,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        )
        assert done.stdout.startswith("42"), (name, done)
        outputs[name] = done.stdout
    return outputs


@pytest.mark.parametrize("form", FORMS)
def test_output_comes_out_as_under_python3(box, expected, form):
    problem = Problem("round5", "Print twice the number.", "", "stdio", tests=(IOTest(INPUT, expected[form]),))
    scorer = Scorer([problem], box, get_language("python"), "binary", timeout_s=5.0)
    (scored,) = asyncio.run(scorer.score(["round5"], [textwrap.dedent(FORMS[form])]))
    assert scored.verdict.reward == 1.0, scored.verdict


def test_a_programs_runs_go_in_an_order_drawn_for_it(box):
    # A run can learn how many of its program's runs went before it (the host's page cache, the sandbox
    # root's timestamps, or as here the clock): drawn at random, that count is not its test's place, so a
    # program cannot answer, or replay a dataset's examples, by position.
    tests = tuple(IOTest(f"{i}\n", f"{i}\n") for i in range(10))
    problem = Problem("order", "Print the number.", "", "stdio", tests=tests)
    program = build_program(
        problem, "import time\nprint(input(), time.monotonic())\n", get_language("python"), timeout_s=5.0
    )
    orders = []
    for _ in range(2):
        (result,) = asyncio.run(box.run_many([program]))
        runs = [run.stdout.split() for run in result.runs]
        assert [int(test) for test, _ in runs] == list(range(10))  # each result is its own test's
        started = [float(at) for _, at in runs]
        orders.append(sorted(range(10), key=started.__getitem__))
    assert orders[0] != list(range(10)) and orders[0] != orders[1], orders  # 1 in 10! to be in order by chance
