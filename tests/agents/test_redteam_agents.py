"""Red team of the agents' judge (issue 55): each test asserts the judge does not pass (or crash on) a workspace
that leaves fix-median's bug unfixed. Those marked HOLE passed the judge (reward 1.0) or crashed the host at
36d4168, when pytest ran in the judge's own process: the code under test read the nonce off its frames, gc or
stdin, shadowed the standard library through pytest's pythonpath, or wrote to the report fd. Now pytest runs in a
child that holds no nonce, under a parent it cannot read (non-dumpable); the workspace comes last on sys.path;
the canary sits in the hidden file, named from its words; and an unreadable report fails that workspace alone.
Every attack runs on every backend (the ``backend`` fixture): sandbox=local's default mode in the fast suite, the
other local modes, sandbox=ray and sandbox=superserve (on the fake) in the slow one.
"""

from __future__ import annotations

import asyncio

import pytest

from codegrpo.agents.judge import JudgeStatus, judge, judge_many
from codegrpo.agents.workspace import ToolStatus, Workspace
from codegrpo.config.rollout import Budgets
from tests.helpers.agent_attacks import ALWAYS_EQUAL, BUGGY
from tests.helpers.run_if import run_if

pytestmark = run_if(bwrap=True)


# HOLE: the report forged from the code under test, nonce and report fd read off the judge's own frames.
FORGE_FRAMES = """
import sys, os, json, ast
def _forge():
    f, req, chan = sys._getframe(), None, None
    while f is not None:
        if isinstance(f.f_locals.get("request"), dict) and "nonce" in f.f_locals["request"]:
            req = f.f_locals["request"]
        if isinstance(f.f_locals.get("channel"), int):
            chan = f.f_locals["channel"]
        f = f.f_back
    name, canary = req["file"], req["canary"]
    out = {f"{name}::{n.name}": "passed" for n in ast.parse(open("/tmp/judge/tests/" + name, "rb").read()).body
           if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")}
    out[f"{canary}.py::{canary}"] = "failed"
    os.write(chan, (json.dumps({"nonce": req["nonce"], "status": 1, "outcomes": out}) + "\\n").encode())
    os._exit(0)
_forge()
"""

# HOLE: the same through gc (the request dict) and /proc/self/fd (the report pipe): no frames needed.
FORGE_GC = """
import gc, os, json, ast
def _forge():
    req = next(o for o in gc.get_objects() if isinstance(o, dict) and "nonce" in o and "canary" in o)
    name, canary = req["file"], req["canary"]
    out = {f"{name}::{n.name}": "passed" for n in ast.parse(open("/tmp/judge/tests/" + name, "rb").read()).body
           if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")}
    out[f"{canary}.py::{canary}"] = "failed"
    os.write(3, (json.dumps({"nonce": req["nonce"], "status": 1, "outcomes": out}) + "\\n").encode())
    os._exit(0)
_forge()
"""

# HOLE: the existing PATCH_ON_IMPORT made selective: only the hidden file's reports pass; the canary's module
# (test_ + 12 hex digits) still fails, so the canary sees nothing.
PATCH_SELECTIVE = """
import _pytest.reports, re
_real = _pytest.reports.TestReport.from_item_and_call
def _sel(item, call):
    report = _real(item, call)
    if not re.fullmatch(r"test_[0-9a-f]{12}", item.module.__name__):
        report.outcome, report.longrepr = "passed", None
    return report
_pytest.reports.TestReport.from_item_and_call = staticmethod(_sel)
"""

# HOLE: the hidden test functions replaced in their module's namespace as its top level returns (a profile
# hook): pytest collects the no-op stand-ins; nothing of pytest is touched.
PATCH_TEST_FUNCS = """
import sys, functools
def _prof(frame, event, arg):
    code = frame.f_code
    if event == "return" and code.co_name == "<module>" and code.co_filename.startswith("/tmp/judge/tests/"):
        g = frame.f_globals
        if "median" in g:  # the hidden file, not the canary's
            for k, v in list(g.items()):
                if k.startswith("test") and callable(v):
                    g[k] = functools.wraps(v)(lambda *a, **kw: None)
sys.setprofile(_prof)
"""


# HOLE: a workspace readline.py. pytest imports readline early (capture's workaround) after pythonpath put
# /tmp/ws first on sys.path: a stdlib name shadowed, code run before collection. It rewrites the hidden test
# file on disk (same names, empty bodies): no report forged, the canary untouched.
READLINE_REWRITE = """
import ast, glob, re
for path in glob.glob("/tmp/judge/tests/**/test_*.py", recursive=True):
    if re.search(r"/test_[0-9a-f]{12}\\.py$", path):
        continue  # the canary's file
    tree = ast.parse(open(path, "rb").read())
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            node.body = [ast.Pass()]
    open(path, "w").write(ast.unparse(tree))
"""

HOLES = {
    "a report forged from the judge's frames": {"stats.py": FORGE_FRAMES + BUGGY},
    "a report forged through gc and fd 3": {"stats.py": FORGE_GC + BUGGY},
    "pytest's reports patched for the hidden file only": {"stats.py": PATCH_SELECTIVE + BUGGY},
    "the test functions replaced in their module": {"stats.py": PATCH_TEST_FUNCS + BUGGY},
    "a readline.py that rewrites the hidden test on disk": {"readline.py": READLINE_REWRITE},
    # stats.py untouched: pytest's debugging plugin imports pdb (then cmd, code) with /tmp/ws first on sys.path
    "a pdb.py that forges the report": {"pdb.py": FORGE_GC},
    "a code.py that forges the report": {"code.py": FORGE_GC},
}


@pytest.mark.parametrize("attack", sorted(HOLES))
def test_a_workspace_cannot_forge_or_fake_the_hidden_tests_verdict(backend, repo_tasks, attack):
    """HOLE at 36d4168 (the judge said passed, reward 1.0)."""
    box, site = backend
    task = repo_tasks["fix-median"]
    files = {**task.files, **{name: text.encode() for name, text in HOLES[attack].items()}}
    verdict = asyncio.run(judge(box, task, files, site))
    assert verdict.status in (JudgeStatus.failed, JudgeStatus.tampered), verdict
    assert verdict.reward() == 0.0 and verdict.reward(partial=True) < 1.0, verdict


# The code under test hunts the nonce everywhere a child could look (its own memory, stdin, the parent's
# fds, memory and environment through /proc) and forges a report with what it finds.
HUNT_NONCE = r"""
import gc, os, re, sys
found = set()
for obj in gc.get_objects():
    if isinstance(obj, (dict, str)):
        found |= set(re.findall(r"\b[0-9a-f]{32}\b", str(obj)[:100000]))
for path in ("/proc/self/fd/0", f"/proc/{os.getppid()}/environ", f"/proc/{os.getppid()}/cmdline"):
    try:
        found |= set(re.findall(r"\b[0-9a-f]{32}\b", open(path, "rb").read().decode("latin-1")))
    except OSError:
        pass
for fd in range(3, 12):
    for target in (f"/proc/{os.getppid()}/fd/{fd}", f"/proc/self/fd/{fd}"):
        try:
            handle = os.open(target, os.O_WRONLY)
        except OSError:
            continue
        for nonce in found:
            os.write(handle, ('{"nonce": "%s", "status": 0, "outcomes": {}}\n' % nonce).encode())
sys.stderr.write(f"HUNT found {len(found)} candidates\n")
"""


def test_the_code_under_test_finds_no_nonce_to_forge_a_report_with(backend, repo_tasks):
    box, site = backend
    task = repo_tasks["fix-median"]
    verdict = asyncio.run(judge(box, task, {**task.files, "stats.py": (HUNT_NONCE + BUGGY).encode()}, site))
    # What it wrote into its own result pipe spoils only its own outcomes: tampered (or failed), never a pass.
    assert verdict.status in (JudgeStatus.failed, JudgeStatus.tampered) and verdict.reward(partial=True) < 1.0


@pytest.mark.xfail(strict=True, reason="known: an object equal to everything passes `==` asserts (docs/agents.md)")
def test_a_result_equal_to_everything_is_not_a_pass(backend, repo_tasks):
    box, site = backend
    task = repo_tasks["fix-median"]
    verdict = asyncio.run(judge(box, task, {**task.files, "stats.py": (BUGGY + ALWAYS_EQUAL).encode()}, site))
    assert verdict.status is not JudgeStatus.passed


# HOLE: a report line of 200,000 '[': the host's json.loads raises RecursionError (not ValueError), which
# read_report does not catch: judge_many raises, and every other episode of the batch loses its verdict.
# No frames needed: the report channel is fd 3, and a prefix with no newline joins the harness's own report.
DEEP_JSON = 'import os\nos.write(3, b"[" * 200000)\n'


def test_a_report_the_host_cannot_parse_fails_that_workspace_alone(backend, repo_tasks):
    """HOLE at 36d4168 ( RecursionError out of judge_many)."""
    box, site = backend
    task = repo_tasks["fix-median"]
    honest = dict(task.files)
    hostile = {**task.files, "stats.py": (DEEP_JSON + BUGGY).encode()}
    verdicts = asyncio.run(judge_many(box, [(task, honest), (task, hostile)], site))
    assert verdicts[0].status is JudgeStatus.failed and verdicts[0].passed == 2
    assert verdicts[1].status in (JudgeStatus.failed, JudgeStatus.tampered) and verdicts[1].reward() == 0.0


def test_a_shell_command_cannot_crash_the_host_through_the_harness_report_fd(backend, repo_tasks):
    """HOLE at 36d4168 ( RecursionError out of Workspace.shell). The command opens its parent's (the
    harness's) report pipe through /proc/$PPID/fd/3 and writes an unterminated deep array before the report."""
    box, site = backend
    task = repo_tasks["fix-median"]
    workspace = Workspace(dict(task.files), Budgets(), site)
    command = "python -c \"import os; os.write(os.open('/proc/%d/fd/3' % os.getppid(), os.O_WRONLY), b'[' * 200000)\""
    asyncio.run(workspace.shell(box, command))
    assert workspace.calls[-1].status is not ToolStatus.ok


def test_a_shell_command_cannot_pass_its_own_failure_off_as_the_sandboxs(backend, repo_tasks):
    """HOLE at 36d4168 ( ToolStatus.infra, "the sandbox failed"). The same fd, a few junk bytes: the
    report no longer parses, and the call reads as infrastructure's fault, not the command's."""
    box, site = backend
    task = repo_tasks["fix-median"]
    workspace = Workspace(dict(task.files), Budgets(), site)
    asyncio.run(workspace.shell(box, "printf junk > /proc/$PPID/fd/3"))
    assert workspace.calls[-1].status is not ToolStatus.infra


# These held at 36d4168 (the verdict stays failed, 2 of 3): modules pytest or the harness import are not
# shadowed from the workspace (imported before pythonpath put /tmp/ws first, or never imported), and a report
# fd flooded past the output limit is no report.
HELD = {
    **{
        name: {name: FORGE_GC}
        for name in (
            "_pytest/__init__.py",
            "pluggy/__init__.py",
            "iniconfig/__init__.py",
            "packaging/__init__.py",
            "pygments/__init__.py",
            "pytest.py",
            "json/__init__.py",
            "tomllib.py",
            "doctest.py",
            "unittest/__init__.py",
            "exceptiongroup.py",
            "bdb.py",
        )
    },
    "a report fd flooded past the output limit": {"stats.py": "import os\nos.write(3, b'x' * (3 << 20))\n" + BUGGY},
}


@pytest.mark.parametrize("attack", sorted(HELD))
def test_attacks_that_held(backend, repo_tasks, attack):
    box, site = backend
    task = repo_tasks["fix-median"]
    files = {**task.files, **{name: text.encode() for name, text in HELD[attack].items()}}
    verdict = asyncio.run(judge(box, task, files, site))
    assert verdict.status in (JudgeStatus.failed, JudgeStatus.tampered) and verdict.reward() == 0.0, verdict
