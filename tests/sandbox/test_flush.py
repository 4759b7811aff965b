"""Issue 32, finding 3: what a program leaves buffered at exit comes out as under `python3 -I`, which
flushes every file object as it clears them: a right answer written through another file object than
sys.stdout scores as right. Each form against a real `/usr/bin/python3 -I` on this machine (the same
stdout), then through the real reward as a stdin/stdout problem, warm and cold, and in Superserve chunks.
"""

from __future__ import annotations

import asyncio
import subprocess
import textwrap
from pathlib import Path

import pytest

from codegrpo.data.problems import IOTest, Problem
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer
from tests.helpers.run_if import run_if
from tests.helpers.sandbox import Recording, backends

pytestmark = run_if(bwrap=True, system_python=True)

INPUT = "21\n"
FORMS = {
    "open(1) never closed": "n = int(input())\nopen(1, 'w').write(f'{n * 2}\\n')\n",
    "open(1) kept in a global": "n = int(input())\nout = open(1, 'w')\nout.write(f'{n * 2}\\n')\n",
    "os.fdopen(1)": "import os\nn = int(input())\nout = os.fdopen(1, 'w')\nout.write(f'{n * 2}\\n')\n",
    "a BufferedWriter on fd 1": (
        "import io\nn = int(input())\nout = io.BufferedWriter(io.FileIO(1, 'w', closefd=False))\n"
        "out.write(f'{n * 2}\\n'.encode())\n"
    ),
    "sys.__stdout__ behind a replaced sys.stdout": (
        "import io, sys\nn = int(input())\nsys.stdout = io.StringIO()\nsys.__stdout__.write(f'{n * 2}\\n')\n"
    ),
    "print to sys.__stdout__": (
        "import sys\nn = int(input())\nsys.stdout = sys.stderr\nprint(n * 2, file=sys.__stdout__)\n"
    ),
    # The order python3 -I keeps: sys.stdout first, then the other file objects as they are cleared.
    "sys.stdout, then a file object": (
        "n = int(input())\nout = open(1, 'w', closefd=False)\nout.write('second\\n')\nprint(n * 2)\n"
    ),
    "a file object that prints as it is finalized": (
        "import sys\nn = int(input())\nclass Last:\n    def __del__(self):\n        print('bye', n * 2)\n"
        "keep = Last()\nsys.stdout = None\n"
    ),
}


backend = backends("warm", "cold", "superserve")


@pytest.fixture(scope="module")
def expected(tmp_path_factory) -> dict[str, str]:
    """What each form prints under the real thing: /usr/bin/python3 -I on a file, its input on stdin."""
    outputs = {}
    for name, source in FORMS.items():
        path = Path(tmp_path_factory.mktemp("flush")) / "solution.py"
        path.write_text(source)
        done = subprocess.run(
            ["/usr/bin/python3", "-I", str(path)],
            input=INPUT,
            capture_output=True,
            text=True,
            timeout=30,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        )
        assert done.stdout.strip(), (name, done)
        outputs[name] = done.stdout
    return outputs


@pytest.mark.parametrize("form", FORMS)
def test_buffered_output_comes_out_as_under_python3(backend, expected, form):
    problem = Problem("flush", "Print twice the number.", "", "stdio", tests=(IOTest(INPUT, expected[form]),))
    recording = Recording(backend)
    scorer = Scorer([problem], recording, get_language("python"), "binary", timeout_s=5.0)
    (scored,) = asyncio.run(scorer.score(["flush"], [textwrap.dedent(FORMS[form])]))
    (result,) = recording.results
    assert result.runs[0].stdout == expected[form], result.runs[0]
    assert scored.verdict.reward == 1.0, scored.verdict
