"""Fixtures of the agents' tests: the shipped repository tasks and a real local sandbox set up for workspaces."""

from __future__ import annotations

import pytest

from codegrpo.agents.workspace import sandbox_config
from codegrpo.config.rollout import Budgets
from codegrpo.config.sandbox import LocalSandboxConfig
from codegrpo.data.repo_tasks import RepoTask, load_repo_tasks
from codegrpo.resources import project_path
from codegrpo.sandbox import pytest_site as sites


@pytest.fixture(scope="session")
def site() -> str:
    return str(sites.pytest_site())


@pytest.fixture(scope="session")
def repo_tasks() -> dict[str, RepoTask]:
    tasks, _ = load_repo_tasks(project_path("problems/repo_tasks"))
    return {task.id: task for task in tasks}


@pytest.fixture(scope="module")
def agent_box(site):
    """A local sandbox (warm, cgroups where the machine has them) holding pytest, as RepoEnvironment makes it."""
    from codegrpo.sandbox.local import LocalSandbox

    box = LocalSandbox(sandbox_config(LocalSandboxConfig(max_concurrency=2, timeout_s=20), Budgets(), site))
    yield box
    import asyncio

    asyncio.run(box.aclose())
