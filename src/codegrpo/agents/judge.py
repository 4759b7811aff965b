"""A workspace judged against its task's hidden tests, the verdict decided here on the host.

Each hidden test file runs in a run of its own (a fresh process and /tmp: no file can change another's
run), handed the workspace's files and the host's copy of the tests (harness/workspace.py, ``judge``). A run's
report counts only with its nonce, drawn here for that run, and only if every canary among its tests failed;
every test function the host finds in the file must have run and passed. Anything else fails the file:
a missing or second report, a test never collected, a canary that passed (flagged as tampering).
"""

from __future__ import annotations

import ast
import enum
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from codegrpo.agents.workspace import encode_files, read_report, workspace_program
from codegrpo.data.repo_tasks import RepoTask
from codegrpo.harness import sandbox_source
from codegrpo.reward.verdict import clean_text
from codegrpo.sandbox.base import Outcome, RunResult, SandboxBackend

# A report's names reach the host's writers (the completions table, eval.json): a few, cut, control characters
# escaped, however many the workspace's code made pytest report.
MAX_ERRORS, NAME_CHARS = 10, 200
NO_PYTEST = (
    "the sandbox has no pytest: the local sandbox binds sandbox.pytest_site's folder "
    "(agents.workspace.sandbox_config), a Superserve VM's image must install it (docs/agents.md)"
)


class JudgeStatus(enum.StrEnum):
    passed = "passed"
    failed = "failed"
    tampered = "tampered"  # a report without its nonce, two reports, or a canary that passed
    infra = "infra"  # the sandbox failed: no verdict (reward None)


@dataclass(frozen=True)
class Judgment:
    status: JudgeStatus
    passed: int  # the hidden test functions that passed
    total: int
    failing: tuple[str, ...] = ()  # the tests that failed, by node id
    detail: str = ""

    def reward(self, partial: bool = False) -> float | None:
        if self.status is JudgeStatus.infra:
            return None
        if self.status is JudgeStatus.tampered:
            return 0.0
        if partial:
            return self.passed / self.total if self.total else 0.0
        return 1.0 if self.status is JudgeStatus.passed else 0.0


@dataclass
class _File:
    name: str
    tests: tuple[str, ...]  # the test functions the host finds in it: "name" or "Class::name"
    nonce: str
    canaries: tuple[str, ...]
    outcomes: dict[str, str] = field(default_factory=dict)


def collected_tests(source: bytes) -> tuple[str, ...]:
    """The test functions pytest collects from a file by default: module-level test_*, Test*.test_*."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            names.append(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            names += [
                f"{node.name}::{item.name}"
                for item in node.body
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("test")
            ]
    return tuple(names)


def canary_name(source: bytes) -> str:
    """A test name made of the file's own words, which no test of it has: nothing in its name tells it apart."""
    words = sorted({w for w in re.findall(r"[a-z]+", source.decode("utf-8", "replace")) if 3 <= len(w) <= 12})
    taken = set(re.findall(rb"def (test\w*)", source))
    draw = secrets.SystemRandom()
    while True:
        name = "_".join(["test", *draw.sample(words or ["case", "value", "check"], k=min(2, len(words) or 2))])
        name += f"_{draw.randrange(2, 10)}" if draw.random() < 0.5 else ""
        if name.encode() not in taken:
            return name


def with_canaries(source: bytes) -> tuple[bytes, tuple[str, ...]]:
    """The hidden file with two or three canaries among its tests (``with_canary``), and their names: however a
    workspace picks the one test it reports failed (the last, the first, ...), a canary it missed is caught."""
    names: list[str] = []
    for _ in range(secrets.SystemRandom().choice((2, 3))):
        names.append(canary_name(source))
        source = with_canary(source, names[-1], models_besides=names)
    return source, tuple(names)


def with_canary(source: bytes, name: str, models_besides: Sequence[str] = ()) -> bytes:
    """The hidden file with a canary test named ``name`` among its own tests, at a random place: a copy of one of
    its tests whose expected value in one ``==`` assert is changed (so it fails however the code under test
    behaves, and reads like the file's tests), or where the file has none such, an assert of two numbers."""
    draw = secrets.SystemRandom()
    plain = f"def {name}():\n    assert {draw.randrange(10, 500)} == {draw.randrange(500, 999)}"
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source + f"\n\n{plain}\n".encode()
    tests = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
    # Never a canary's copy: its changed expectation changed back would pass.
    originals = [test for test in tests if not test.args.args and test.name not in models_besides]
    models = [(test, where) for test in originals for where in _expectations(test)]
    text = plain
    if models:
        test, constant = draw.choice(models)
        original = constant.value
        constant.value = _changed(cast(int | float | str, original), draw)
        canary = ast.FunctionDef(name, test.args, test.body, [], test.returns, test.type_comment)
        text = ast.unparse(ast.fix_missing_locations(canary))
        constant.value = original
    lines = source.decode("utf-8", "replace").splitlines(keepends=True)
    starts = [min([t.lineno, *(d.lineno for d in t.decorator_list)]) - 1 for t in tests] + [len(lines)]
    at = draw.choice(starts)
    gap = "\n" if at and not lines[at - 1].endswith("\n") else ""
    return "".join([*lines[:at], gap, text, "\n\n\n", *lines[at:]]).encode()


def _expectations(test: ast.FunctionDef) -> list[ast.Constant]:
    """The literal expected values of ``test``'s top-level ``assert a == b`` statements (numbers and strings)."""
    found = []
    for statement in test.body:
        if isinstance(statement, ast.Assert) and isinstance(statement.test, ast.Compare):
            compare = statement.test
            if len(compare.ops) == 1 and isinstance(compare.ops[0], ast.Eq):
                for side in (compare.left, compare.comparators[0]):
                    if isinstance(side, ast.Constant) and type(side.value) in (int, float, str):
                        found.append(side)
    return found


def _changed(value: int | float | str, draw: secrets.SystemRandom) -> int | float | str:
    if isinstance(value, str):
        return value + draw.choice("abcdefghijklmnopqrstuvwxyz")
    return value + draw.choice((1, 2, 3, 5, 7)) * (1 if draw.random() < 0.5 else -1)


def judge_programs(task: RepoTask, files: dict[str, bytes], site: str) -> tuple[list[_File], list]:
    """One judging program per hidden test file of ``task``, against ``files``."""
    test_files = sorted(n for n in task.hidden_tests if n.rsplit("/", 1)[-1].startswith("test_") and n.endswith(".py"))
    plans, programs = [], []
    for name in test_files:
        source = task.hidden_tests[name]
        tests, canaries = with_canaries(source)
        plan = _File(name, collected_tests(source), secrets.token_hex(16), canaries)
        request = {
            "mode": "judge",
            "files": encode_files(files),
            "tests": encode_files({**task.hidden_tests, name: tests}),
            "file": name,
            "site": site,
            "nonce": plan.nonce,
            "runner": sandbox_source("workspace"),  # the judge's child runs this same program
        }
        plans.append(plan)
        programs.append(workspace_program(request, task.verifier_timeout_s))
    return plans, programs


async def judge(backend: SandboxBackend, task: RepoTask, files: dict[str, bytes], site: str) -> Judgment:
    """``files`` (a workspace) against ``task``'s hidden tests."""
    return (await judge_many(backend, [(task, files)], site))[0]


async def judge_many(
    backend: SandboxBackend, workspaces: Sequence[tuple[RepoTask, dict[str, bytes]]], site: str
) -> list[Judgment]:
    """Every workspace against its task's hidden tests, all in one sandbox batch."""
    planned = [judge_programs(task, files, site) for task, files in workspaces]
    results = await backend.run_many([program for _, programs in planned for program in programs])
    judgments, at = [], 0
    for plans, _ in planned:
        judgments.append(_verdict(plans, results[at : at + len(plans)]))
        at += len(plans)
    return judgments


def _verdict(plans: list[_File], results: Sequence[RunResult]) -> Judgment:
    passed = total = 0
    failing: list[str] = []
    for plan, result in zip(plans, results, strict=True):
        run = result.runs[0] if result.runs else result
        if Outcome.SANDBOX_ERROR in (result.outcome, run.outcome):
            return Judgment(JudgeStatus.infra, 0, 0, detail=result.error or run.error)
        report = read_report(result)
        total += len(plan.tests)
        if report is None:
            failing.append(f"{plan.name}: {run.outcome.value}, no report")
            continue
        outcomes = report.get("outcomes")
        if report.get("nonce") != plan.nonce or not isinstance(outcomes, dict):
            return Judgment(JudgeStatus.tampered, 0, total, detail=f"{plan.name}: a report not the judge's")
        if report.get("no_pytest") is True:  # said before the workspace's code ran: the sandbox's fault
            return Judgment(JudgeStatus.infra, 0, 0, detail=NO_PYTEST)
        collected = not any(o == "error" and "::" not in n for n, o in outcomes.items())
        canaries = [[o for nodeid, o in outcomes.items() if _names(nodeid, plan.name, c)] for c in plan.canaries]
        runs = {test: [o for nodeid, o in outcomes.items() if _names(nodeid, plan.name, test)] for test in plan.tests}
        ran = any(canaries)
        if any(canary != ["failed"] for canary in canaries) and (collected or ran):  # uncollected: no canary runs
            if all(mine and all(o == "passed" for o in mine) for mine in runs.values()):
                return Judgment(JudgeStatus.tampered, 0, total, detail=f"{plan.name}: the canary test did not fail")
            # Wrong code can meet the canary's changed expectation: a failure, and none of the file's tests counts.
            failing.append(f"{plan.name}: the canary test did not fail")
            continue
        for test, mine in runs.items():
            if mine and all(o == "passed" for o in mine):
                passed += 1
            else:
                failing.append(f"{plan.name}::{test}" + ("" if mine else " (not run)"))
        errors = [n for n, o in outcomes.items() if o == "error" and "::" not in n]  # collection errors
        failing += [clean_text(str(name)[:NAME_CHARS]) for name in errors[:MAX_ERRORS]]
    status = JudgeStatus.passed if not failing and passed == total and total else JudgeStatus.failed
    return Judgment(status, passed, total, tuple(failing))


def _names(nodeid: str, file: str, test: str) -> bool:
    """Whether ``nodeid`` is a run of ``test`` (any of its parameters) in ``file``."""
    path, _, rest = nodeid.partition("::")
    return path.endswith(file) and rest.split("[", 1)[0] == test
