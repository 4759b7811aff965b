"""The hidden tests' verdict on real bwrap: every shipped task's reference passes, its wrong solution and the
untouched workspace fail, and a workspace cannot talk the judge into a pass."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from benchmarks.fakes import FAKE_API_KEY, FakeSuperserve

from codegrpo.agents.judge import NO_PYTEST, JudgeStatus, Judgment, collected_tests, judge
from codegrpo.agents.workspace import ToolStatus, Workspace, sandbox_config
from codegrpo.config.rollout import Budgets
from codegrpo.config.sandbox import SuperserveSandboxConfig
from codegrpo.sandbox.base import Outcome, RunResult
from codegrpo.sandbox.memory import MemoryBackend
from tests.helpers.sandbox import FAKE_KEY_ENV, FreshSuperserve


def solved(box, task, site, script: str | None) -> dict[str, bytes]:
    """The task's workspace after ``script`` (a solution) ran in it, in the sandbox."""
    workspace = Workspace(dict(task.files), Budgets(), site)
    if script is not None:
        asyncio.run(workspace.shell(box, script))
        assert workspace.calls[-1].status == "ok", workspace.calls[-1].observation
    return workspace.files


@pytest.mark.parametrize("task_id", ["fix-median", "add-triangle-area", "slugify-test"])
def test_each_shipped_reference_passes_and_its_wrong_solution_and_the_untouched_workspace_fail(
    agent_box, repo_tasks, site, task_id
):
    task = repo_tasks[task_id]
    right = asyncio.run(judge(agent_box, task, solved(agent_box, task, site, task.solution), site))
    assert right.status is JudgeStatus.passed and right.passed == right.total > 0 and right.reward() == 1.0
    for script in (task.wrong_solution, None):
        wrong = asyncio.run(judge(agent_box, task, solved(agent_box, task, site, script), site))
        assert wrong.status is JudgeStatus.failed and wrong.reward() == 0.0 and wrong.failing
        assert wrong.reward(partial=True) == wrong.passed / wrong.total < 1.0


# Each attack is a set of files the agent leaves in the median task's workspace, beside the bug it did not fix.
FORCE_PASS_HOOK = """
import pytest
@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item, call):
    from _pytest.reports import TestReport
    return TestReport(item.nodeid, item.location, {}, "passed", None, call.when, [])
"""
PATCH_ON_IMPORT = """
import _pytest.runner, _pytest.reports
_real = _pytest.reports.TestReport.from_item_and_call
def _always(item, call):
    report = _real(item, call)
    report.outcome = "passed"
    report.longrepr = None
    return report
_pytest.reports.TestReport.from_item_and_call = staticmethod(_always)
"""
ATTACKS = {
    "conftest.py": {"conftest.py": FORCE_PASS_HOOK},
    "a conftest.py in tests/": {"tests/conftest.py": FORCE_PASS_HOOK},
    "pytest.ini addopts": {"pytest.ini": "[pytest]\naddopts = -p no:python --co\n"},
    "pyproject.toml": {"pyproject.toml": '[tool.pytest.ini_options]\naddopts = "--deselect test_median.py"\n'},
    "setup.cfg and tox.ini": {"setup.cfg": "[tool:pytest]\naddopts = -x -k nothing\n", "tox.ini": "[pytest]\n"},
    "a plugin module named by pytest_plugins": {
        "conftest.py": "pytest_plugins = ['evil']\n",
        "evil.py": FORCE_PASS_HOOK,
    },
    "sitecustomize and usercustomize": {"sitecustomize.py": PATCH_ON_IMPORT, "usercustomize.py": PATCH_ON_IMPORT},
    "a .pth file": {"evil.pth": "import os; os._exit(0)\n"},
    "an edited copy of the hidden test": {"test_median.py": "def test_median():\n    pass\n"},
    "a stale __pycache__": {"__pycache__/stats.cpython-311.pyc": "junk"},
    "exit 0 at import": {"stats.py": "import os\nos._exit(0)\n"},
    "sys.exit at import": {"stats.py": "raise SystemExit(0)\n"},
    "a forged report on stdout": {
        "stats.py": 'import sys, json\nprint(json.dumps({"nonce": "x", "status": 0, "outcomes": {}}))\n'
        "sys.stdout.flush()\ndef median(v): return 0\ndef mean(v): return 0\n"
    },
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_workspace_cannot_make_the_hidden_tests_pass(agent_box, repo_tasks, site, attack):
    task = repo_tasks["fix-median"]
    files = {**task.files, **{name: text.encode() for name, text in ATTACKS[attack].items()}}
    verdict = asyncio.run(judge(agent_box, task, files, site))
    assert verdict.status in (JudgeStatus.failed, JudgeStatus.tampered) and verdict.reward() == 0.0, verdict


def test_patching_pytests_reports_from_the_code_under_test_is_seen_as_tampering(agent_box, repo_tasks, site):
    task = repo_tasks["fix-median"]
    stats = PATCH_ON_IMPORT + "\ndef median(v):\n    return 0\n\ndef mean(v):\n    return 0\n"
    verdict = asyncio.run(judge(agent_box, task, {**task.files, "stats.py": stats.encode()}, site))
    assert verdict.status is JudgeStatus.tampered and "canary" in verdict.detail and verdict.reward(True) == 0.0


def test_the_host_finds_the_test_functions_pytest_collects():
    source = (
        b"def test_a(): pass\nasync def test_b(): pass\ndef helper(): pass\nclass TestC:\n    def test_d(self): pass\n"
    )
    assert collected_tests(source) == ("test_a", "test_b", "TestC::test_d")
    assert collected_tests(b"def (:") == ()


def test_a_test_the_run_never_reports_fails(agent_box, repo_tasks, site):
    """A hidden test the host finds but pytest never ran (deleted from its module at import) fails the file."""
    task = repo_tasks["fix-median"]
    fixed = solved(agent_box, task, site, task.solution)
    hide = (
        "\nimport sys\nfor m in list(sys.modules.values()):\n"
        "    getattr(m, '__dict__', {}).pop('test_mean_is_unchanged', None)\n"
    )
    files = {**fixed, "stats.py": fixed["stats.py"] + hide.encode()}
    verdict = asyncio.run(judge(agent_box, task, files, site))
    assert verdict.status is not JudgeStatus.passed


def test_a_sandbox_failure_is_no_verdict_and_no_reward(repo_tasks, site):
    broken = MemoryBackend(lambda program, stdin: RunResult(Outcome.SANDBOX_ERROR, error="the node went away"))
    verdict = asyncio.run(judge(broken, repo_tasks["fix-median"], {}, site))
    assert verdict.status is JudgeStatus.infra and verdict.reward() is None and verdict.reward(True) is None


def assert_no_pytest_is_infra(box, task, site: str) -> None:
    solved = Workspace(dict(task.files), Budgets(), site)
    asyncio.run(solved.shell(box, task.solution))
    assert solved.calls[-1].status is ToolStatus.ok, solved.calls[-1].observation
    verdict = asyncio.run(judge(box, task, solved.files, site))
    assert verdict.status is JudgeStatus.infra and verdict.reward() is None and verdict.detail == NO_PYTEST, verdict
    asyncio.run(solved.shell(box, "python -m pytest -q"))  # the agent sees why its tests cannot run
    assert solved.calls[-1].status is ToolStatus.failed and "No module named pytest" in solved.calls[-1].observation


def test_a_sandbox_without_pytest_is_the_sandboxs_fault_not_the_workspaces(agent_box, repo_tasks):
    """The local sandbox, given a pytest folder it does not bind: the judge's verdict is infra (no reward), as
    with a Superserve image that lacks pytest, not a failure that would read as the model's."""
    assert_no_pytest_is_infra(agent_box, repo_tasks["fix-median"], "/nonexistent/pytest-site")


@pytest.mark.slow
def test_a_superserve_image_without_pytest_is_infra(repo_tasks, site, monkeypatch):
    """The fake's VMs as an image without pytest (the fake's own default): what a real VM whose image lacks it
    would give, the host's pytest folder being nowhere in the VM."""
    monkeypatch.setenv(FAKE_KEY_ENV, FAKE_API_KEY)
    with FakeSuperserve() as fake:
        cfg = SuperserveSandboxConfig(api_key_env=FAKE_KEY_ENV, base_url=fake.base_url, max_concurrency=2)
        assert_no_pytest_is_infra(
            FreshSuperserve(fake, sandbox_config(cfg, Budgets(), site)), repo_tasks["fix-median"], site
        )


def test_rewards_from_a_judgment():
    assert Judgment(JudgeStatus.failed, 2, 4).reward(partial=True) == 0.5
    assert Judgment(JudgeStatus.tampered, 4, 4).reward(partial=True) == 0.0
    assert dataclasses.replace(Judgment(JudgeStatus.passed, 4, 4)).reward() == 1.0


def test_a_reports_error_names_reach_the_host_few_cut_and_without_control_characters():
    """The code under test runs in pytest's process and can make it report any collection errors it likes:
    the verdict keeps ten names, each cut at 200 characters, control characters escaped."""
    import json

    from codegrpo.agents.judge import MAX_ERRORS, NAME_CHARS, _File, _verdict

    plan = _File("test_x.py", ("test_a",), "n" * 32, "test_canary")
    names = {f"\x1b[2Jevil{i}" + "x" * 500: "error" for i in range(1000)}
    report = {"nonce": plan.nonce, "status": 1, "outcomes": names}
    result = RunResult(Outcome.EXITED, 0, json.dumps(report) + "\n")
    verdict = _verdict([plan], [result])
    assert verdict.status is JudgeStatus.failed and verdict.reward() == 0.0
    errors = [name for name in verdict.failing if "evil" in name]
    assert len(errors) == MAX_ERRORS and all(len(name) <= NAME_CHARS + 8 and "\x1b" not in name for name in errors)


def test_the_canaries_fail_for_every_reference_however_they_are_drawn(agent_box, repo_tasks, site):
    """Each canary copies one of the file's tests with one expectation changed (never another canary's copy,
    whose change changed back would pass): a correct workspace is passed every time, never tampered."""
    from codegrpo.agents.judge import judge_many, with_canaries

    source = repo_tasks["fix-median"].hidden_tests["test_median.py"]
    for _ in range(50):
        marked, canaries = with_canaries(source)
        assert 2 <= len(canaries) <= 3 and all(f"def {name}():".encode() in marked for name in canaries)
    solved = []
    for task in repo_tasks.values():
        workspace = Workspace(dict(task.files), Budgets(), site)
        assert asyncio.run(workspace.shell(agent_box, task.solution)).startswith("exit code 0")
        solved += [(task, workspace.files)] * 6
    verdicts = asyncio.run(judge_many(agent_box, solved, site))
    assert [v.status for v in verdicts] == [JudgeStatus.passed] * len(solved), verdicts
