"""Workspaces and the judge on every backend (the ``backend`` fixture): each local mode (warm or cold, cgroups or
rlimits), sandbox=ray (the local sandbox on the actors of a Ray instance started here) and sandbox=superserve (the
real SDK on the fake API, whose VMs have pytest as an image bringing it would). On each shipped task a shell
command sees the task's files, the reference solution is judged passed and the wrong one failed."""

from __future__ import annotations

import asyncio

from codegrpo.agents.judge import JudgeStatus, judge_many
from codegrpo.agents.workspace import ToolStatus, Workspace
from codegrpo.config.rollout import Budgets
from tests.helpers.run_if import run_if

pytestmark = run_if(bwrap=True)

TASKS = ("fix-median", "add-triangle-area", "slugify-test")


def test_each_shipped_task_is_seen_solved_and_judged_on_every_backend(backend, repo_tasks):
    box, site = backend
    workspaces = []
    for task_id in TASKS:
        task = repo_tasks[task_id]
        assert task.solution is not None and task.wrong_solution is not None
        seen = Workspace(dict(task.files), Budgets(), site)
        observation = asyncio.run(seen.shell(box, "find . -type f | sort; python -c 'import pytest'"))
        assert seen.calls[-1].status is ToolStatus.ok, observation
        assert observation.split("\n")[1:] == [*sorted(f"./{name}" for name in task.files), ""], observation
        for script in (task.solution, task.wrong_solution):
            workspace = Workspace(dict(task.files), Budgets(), site)
            observation = asyncio.run(workspace.shell(box, script))
            assert workspace.calls[-1].status is ToolStatus.ok, observation
            workspaces.append((task, workspace.files))
    verdicts = asyncio.run(judge_many(box, workspaces, site))  # one batch: every program at once
    for (task, _), verdict, right in zip(workspaces, verdicts, [True, False] * len(TASKS), strict=True):
        if right:
            assert verdict.status is JudgeStatus.passed and verdict.passed == verdict.total > 0, (task.id, verdict)
        else:
            assert verdict.status is JudgeStatus.failed and verdict.reward() == 0.0, (task.id, verdict)
            assert verdict.failing, (task.id, verdict)
