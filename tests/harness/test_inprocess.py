"""codegrpo.harness.inprocess: a program run in a process forked from the warm runner, as `python3 -I <path>` would
run it, under an audit hook that reports what its own code does (the monitor's evidence). The programs here run
in the real local sandbox (its runner forks them and calls run_as_main); cold runs of the same file, with
``command``, are what a warm run must match."""

from __future__ import annotations

import pytest

from codegrpo.harness import inprocess
from codegrpo.sandbox.base import Outcome, Program
from tests.helpers.sandbox import PYTHON, run, run_source

MARK = inprocess.AUDIT_MARK


def tokens(stderr: str) -> list[str]:
    """The evidence the program's audit hook wrote, in order."""
    return [line.removeprefix(MARK) for line in stderr.splitlines() if line.startswith(MARK)]


def run_prelude(sandbox, source: str, prelude_chars: int):
    """A warm program whose first ``prelude_chars`` characters are a trusted prelude."""
    return run(sandbox.run_many([Program(source, timeout_s=5, prelude_chars=prelude_chars)]))[0]


def both(sandbox, source: str):
    """(warm, cold): the program run by run_as_main and by a fresh `python3 -I`."""
    return run_source(sandbox, source), run_source(sandbox, source, command=PYTHON)


# -- as python3 -I runs it ------------------------------------------------------------------------------


def test_the_program_runs_as_main_with_the_argv_a_cold_run_has(local_sandbox):
    warm = run_source(local_sandbox, "import sys\nprint(__name__, __file__, sys.argv, sys.stdout.seekable())")
    assert warm.stdout == "__main__ /tmp/solution.py ['/tmp/solution.py'] False\n"


@pytest.mark.parametrize(
    ("source", "code", "stderr"),
    [
        ("raise SystemExit", 0, ""),
        ("raise SystemExit(3)", 3, ""),
        ("raise SystemExit(259)", 3, ""),  # the low byte, as the interpreter's exit status
        ("raise SystemExit(-1)", 255, ""),
        ("raise SystemExit('bye')", 1, "bye\n"),
    ],
)
def test_system_exit_ends_the_program_with_the_interpreters_status(local_sandbox, source, code, stderr):
    warm, cold = both(local_sandbox, source)
    assert (warm.exit_code, warm.stderr) == (cold.exit_code, cold.stderr) == (code, stderr)


def test_exit_status_is_what_the_interpreter_makes_of_system_exits_argument(capsys):
    assert [inprocess.exit_status(code) for code in (None, 0, 7, 256, 257, -1, True)] == [0, 0, 7, 0, 1, 255, 1]
    assert inprocess.exit_status("message") == 1
    assert capsys.readouterr().err == "message\n"


def test_an_uncaught_exception_prints_the_traceback_a_cold_run_prints(local_sandbox):
    warm, cold = both(local_sandbox, "def f():\n    raise ValueError('no')\nf()")
    assert warm.exit_code == cold.exit_code == 1
    assert warm.stderr == cold.stderr  # no frame of the runner or of inprocess
    assert warm.stderr.startswith('Traceback (most recent call last):\n  File "/tmp/solution.py", line 3')


def test_an_uncaught_keyboard_interrupt_ends_the_run_as_sigint_would(local_sandbox):
    warm = run_source(local_sandbox, "raise KeyboardInterrupt")
    assert warm.outcome is Outcome.SIGNALED and warm.exit_code == 128 + 2
    assert warm.stderr.endswith("KeyboardInterrupt\n")


def test_threads_atexit_hooks_and_unflushed_files_all_finish_before_the_end(local_sandbox):
    source = """
        import atexit, sys, threading, time
        atexit.register(print, "atexit")
        threading.Thread(target=lambda: (time.sleep(0.1), print("thread"))).start()
        kept = open(1, "w", closefd=False)
        kept.write("buffered\\n")
        sys.stdout.write("stdout\\n")
    """
    warm, cold = both(local_sandbox, source)
    assert sorted(warm.stdout.splitlines()) == sorted(cold.stdout.splitlines())
    assert sorted(warm.stdout.splitlines()) == ["atexit", "buffered", "stdout", "thread"]


def test_a_coding_line_and_a_bom_mean_what_they_mean_to_the_interpreter(local_sandbox):
    for source in ("# -*- coding: latin-1 -*-\nprint(len('é'))\n", "\ufeffprint(len('é'))\n"):
        warm, cold = both(local_sandbox, source)
        assert (warm.exit_code, warm.stdout) == (cold.exit_code, cold.stdout), source
    assert run_source(local_sandbox, "# -*- coding: latin-1 -*-\nprint(len('é'))\n").stdout == "2\n"


def test_the_recursion_limit_is_a_cold_interpreters_in_depth_and_in_value(local_sandbox):
    source = """
        import sys
        def f(n):
            return f(n - 1) if n else 0
        deepest = 0
        for n in range(900, 1100):
            try:
                f(n)
                deepest = n
            except RecursionError:
                break
        print(deepest, sys.getrecursionlimit())
        sys.setrecursionlimit(2000)
        print(sys.getrecursionlimit())
        for bad in (0, -5, 2**31, 1.5):
            try:
                sys.setrecursionlimit(bad)
            except Exception as error:
                print(type(error).__name__)
        print(sys.getrecursionlimit())
    """
    warm, cold = both(local_sandbox, source)
    assert warm.exit_code == 0 and warm.stdout == cold.stdout, (warm, cold)
    assert warm.stdout.splitlines()[1:] == ["2000", "ValueError", "ValueError", "OverflowError", "TypeError", "2000"]


def test_the_largest_recursion_limit_a_cold_interpreter_takes_is_taken(local_sandbox):
    source = "import sys\nsys.setrecursionlimit(2147483647)\nprint(sys.getrecursionlimit())"
    assert run_source(local_sandbox, source).stdout == "2147483647\n"


def test_a_prelude_keeps_the_line_numbers_of_the_whole_file(local_sandbox):
    source = "x = 1\ny = 2\nraise ValueError(x + y)\n"
    result = run_prelude(local_sandbox, source, len("x = 1\ny = 2\n"))
    assert result.exit_code == 1
    assert 'File "/tmp/solution.py", line 3' in result.stderr and "ValueError: 3" in result.stderr


# -- the prelude's cache ---------------------------------------------------------------------------------------


def test_a_prelude_is_compiled_only_where_it_is_whole_lines_of_the_source():
    source = "a = 1\nb = 2\n"
    assert inprocess.prelude_code("/tmp/p1.py", source, 0) is None
    assert inprocess.prelude_code("/tmp/p1.py", "a = 12\n", 5) is None  # not at a line's end ("a = 1")
    assert inprocess.prelude_code("/tmp/p1.py", source, len(source) + 1) is None  # past the source
    code = inprocess.prelude_code("/tmp/p1.py", source, 6)
    namespace: dict = {}
    exec(code, namespace)
    assert namespace["a"] == 1 and "b" not in namespace
    assert inprocess.prelude_code("/tmp/p1.py", source + "c = 3\n", 6) is code  # compiled once, found again


def test_a_prelude_that_does_not_compile_is_none():
    assert inprocess.prelude_code("/tmp/p2.py", "def (\n", 6) is None


def test_the_prelude_cache_holds_no_more_than_its_limit():
    saved = dict(inprocess._preludes)
    inprocess._preludes.clear()
    try:
        codes = [inprocess.prelude_code(f"/tmp/many{index}.py", f"v = {index}\n", 6) for index in range(20)]
        assert len(inprocess._preludes) == inprocess.PRELUDE_CACHE == 8
        assert all(codes[: inprocess.PRELUDE_CACHE]) and codes[inprocess.PRELUDE_CACHE] is None
    finally:
        inprocess._preludes.clear()
        inprocess._preludes.update(saved)


# -- the evidence of the program's own code ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "token"),
    [
        ("import os\nos.system('true')\nos.system('true')", "process:os.system"),
        ("import os\nos.kill(os.getpid(), 0)", "exit:os.kill"),
        ("import os\nos.kill(1, 0)", "exit:os.kill"),
        ("import signal\nsignal.signal(signal.SIGTERM, lambda *a: None)", "exit:signal.signal"),
        ("import builtins\nbuiltins.len = lambda value: 0", "patch:builtins"),
        ("import builtins\nbuiltins.extra = 1", "patch:builtins"),
        ("import builtins\ndel builtins.input", "patch:builtins"),
        ("try:\n    open('/etc/evil', 'w')\nexcept OSError:\n    pass", "filesystem:open"),
        ("import os\nos.listdir('/run')", "filesystem:os.listdir"),
        ("import sys\nsys._getframe()", "introspection:sys._getframe"),
        ("import socket\nsocket.socket()", "network:socket.__new__"),
    ],
)
def test_what_the_programs_own_code_does_is_reported_once(local_sandbox, source, token):
    result = run_source(local_sandbox, source)
    assert tokens(result.stderr) == [token], result


@pytest.mark.parametrize(
    "source",
    [
        "open('/tmp/mine', 'w').write('x')\nprint(open('mine').read())",  # its own /tmp and cwd
        "import os\nprint(len(open(os.__file__).read()) > 0)",  # reading the standard library
        "import sys\nprint(open('/dev/stdout', 'w') is not None)",  # its own streams
        "import signal\nsignal.signal(signal.SIGPIPE, signal.SIG_DFL)",  # an honest handler
        "import json, collections, heapq\nprint(json.dumps(collections.Counter('aab')))",  # the library's own work
    ],
)
def test_what_a_plain_program_does_is_no_evidence(local_sandbox, source):
    result = run_source(local_sandbox, source)
    assert result.exit_code == 0 and tokens(result.stderr) == [], result


def test_no_evidence_reaches_stdout_once_stderr_points_there(local_sandbox):
    result = run_source(local_sandbox, "import os\nos.dup2(1, 2)\nos.system('true')\nprint('answer')")
    assert result.stdout == "answer\n" and MARK not in result.stderr


def test_the_evidence_cannot_be_taken_back(local_sandbox):
    source = "import os, sys\nos.system('true')\nsys.stderr.write('\\r' * 100)\nsys.stderr.flush()\nos._exit(0)"
    assert "process:os.system" in tokens(run_source(local_sandbox, source).stderr)


def test_a_program_cannot_pass_for_the_harness_by_its_first_line(local_sandbox):
    # Only a trusted prelude (the host's) that is the harness goes without the program's hook.
    source = inprocess.HARNESS_MARK + "'x')\nimport os\nos.system('true')\n"
    assert tokens(run_source(local_sandbox, source).stderr) == ["process:os.system"]
    prelude = "import os\n"  # a trusted prelude that is not the harness: the program's hook stays
    assert tokens(run_prelude(local_sandbox, prelude + "os.system('true')\n", len(prelude)).stderr) == [
        "process:os.system"
    ]


def test_the_harness_as_the_trusted_prelude_runs_without_the_programs_hook(local_sandbox):
    prelude = inprocess.HARNESS_MARK + "'x')\nimport os\n"
    assert tokens(run_prelude(local_sandbox, prelude + "os.system('true')\n", len(prelude)).stderr) == []
