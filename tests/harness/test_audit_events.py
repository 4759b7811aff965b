"""Both audit hooks (harness/audit_events.py's parts, installed by python_harness.py in the harness's child and by
inprocess.py for a stdin/stdout program) hold their own references, taken before the program runs: a program that
rebinds what the hook would otherwise look up when an event comes (the builtins type, len and any, os.write, the
tables and the mark among the harness's globals) and puts it back before it ends still leaves its evidence. Through
the real local sandbox, warm."""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.helpers.run_if import run_if
from tests.helpers.sandbox import PROBLEMS, run_source, score

pytestmark = run_if(bwrap=True)

MARK = "codegrpo-audit "
FRAME = "try:\n    1 / 0\nexcept ZeroDivisionError as error:\n    error.__traceback__.tb_frame\n"
READ = "try:\n    open('/etc/hostname')\nexcept OSError:\n    pass\n"


def rebound(module: str, name: str, value: str, then: str) -> str:
    """A program that rebinds ``module.name`` to ``value``, runs ``then`` and puts the old value back."""
    head = f"import builtins, os, sys\n_saved = {module}.{name}\n{module}.{name} = {value}\n"
    return f"{head}{then}{module}.{name} = _saved\n"


# The harness's globals are its module's, sys.modules["__main__"] in its child.
HARNESSED = {
    "type": (rebound("builtins", "type", "lambda value: int", "sys._getframe()\n"), "introspection:sys._getframe"),
    "len": (rebound("builtins", "len", "lambda value: 0", FRAME), "introspection:object.__getattr__"),
    "any": (rebound("builtins", "any", "lambda values: True", READ), "filesystem:open"),
    "the harness's table": (
        rebound("sys.modules['__main__']", "AUDIT_EVENTS", "{}", "sys._getframe()\n"),
        "introspection:sys._getframe",
    ),
}


@pytest.mark.parametrize("name", HARNESSED)
def test_the_harness_hook_keeps_its_own_references(local_sandbox, name):
    code, token = HARNESSED[name]
    _, result = score(local_sandbox, "is_prime", code + PROBLEMS["is_prime"].reference)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["status"] == "ok" and token in report.get("audit", []), (report, result.stderr[-2000:])


# inprocess.py's globals are in reach of a stdio program: sys.getrecursionlimit is one of its functions.
GLOBALS = "sys.getrecursionlimit.__globals__"
STDIO = {
    "os.write": (
        rebound("os", "write", "lambda fd, data: len(data)", "sys._getframe()\n"),
        "introspection:sys._getframe",
    ),
    "len": (rebound("builtins", "len", "lambda value: 0", FRAME), "introspection:object.__getattr__"),
    "any": ("import builtins\nbuiltins.any = lambda values: False\n", "patch:builtins"),
    "the mark": (
        f"import sys\n_saved = {GLOBALS}['AUDIT_MARK']\n{GLOBALS}['AUDIT_MARK'] = 'x'\nsys._getframe()\n"
        f"{GLOBALS}['AUDIT_MARK'] = _saved\n",
        "introspection:sys._getframe",
    ),
    "the table": (
        f"import sys\n_saved = {GLOBALS}['AUDIT_EVENTS']\n{GLOBALS}['AUDIT_EVENTS'] = {{}}\nsys._getframe()\n"
        f"{GLOBALS}['AUDIT_EVENTS'] = _saved\n",
        "introspection:sys._getframe",
    ),
}


@pytest.mark.parametrize("name", STDIO)
def test_a_stdio_programs_hook_keeps_its_own_references(local_sandbox, name):
    code, token = STDIO[name]
    result = run_source(local_sandbox, textwrap.dedent(code) + "print('done')\n")
    tokens = [line.removeprefix(MARK) for line in result.stderr.splitlines() if line.startswith(MARK)]
    assert result.stdout == "done\n" and token in tokens, result


# Red team (issue 54): a path object whose metaclass hashes got the program's code into the hook (its table
# lookup hashed the class), which rewrote the frame walker's cell: nothing after it was ever recorded.
SILENCER = """
import sys
def _silence(cls):
    for depth in range(1, 6):
        for value in list(sys._getframe(depth).f_locals.values()):
            for cell in getattr(value, "__closure__", None) or ():
                if cell.cell_contents is sys._getframe:
                    cell.cell_contents = lambda depth: None
    return id(cls) >> 4
Path = type("M", (type,), {"__hash__": _silence})("Path", (), {"__fspath__": lambda self: "/nonexistent"})
sys.audit("os.walk", Path())
sys._getframe()
"""


def test_no_method_of_a_path_object_runs_in_the_harness_hook(local_sandbox):
    _, result = score(local_sandbox, "is_prime", SILENCER + PROBLEMS["is_prime"].reference)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert {"filesystem:os.walk", "introspection:sys._getframe"} <= set(report.get("audit", [])), report


def test_no_method_of_a_path_object_runs_in_a_stdio_programs_hook(local_sandbox):
    result = run_source(local_sandbox, SILENCER + "print('done')\n")
    tokens = {line.removeprefix(MARK) for line in result.stderr.splitlines() if line.startswith(MARK)}
    assert result.stdout == "done\n" and {"filesystem:os.walk", "introspection:sys._getframe"} <= tokens, result
