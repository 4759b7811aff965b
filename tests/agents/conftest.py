"""Fixtures of the agents' tests: the shipped repository tasks, a real local sandbox set up for workspaces, and
every backend set up so (each local mode, sandbox=ray, sandbox=superserve on the fake)."""

from __future__ import annotations

import pytest

from codegrpo.agents.workspace import sandbox_config
from codegrpo.config.rollout import Budgets
from codegrpo.config.sandbox import LocalSandboxConfig
from codegrpo.data.repo_tasks import RepoTask, load_repo_tasks
from codegrpo.resources import project_path
from codegrpo.sandbox import pytest_site as sites
from tests.helpers.sandbox import LOCAL_MODES, workspace_backend_in

# sandbox=local's default mode runs in the fast suite; the other local modes, Ray's and Superserve's are slow.
BACKENDS = [
    LOCAL_MODES[0],
    *(pytest.param(mode, marks=pytest.mark.slow) for mode in (*LOCAL_MODES[1:], "ray", "superserve")),
]


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


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request, site):
    """(a backend, the pytest folder its programs are given): each mode set up as RepoEnvironment sets it up
    (tests.helpers.sandbox.workspace_backend_in), shared by a module's tests."""
    if request.param == "ray":
        pytest.importorskip("ray")
    with workspace_backend_in(request.param, site, timeout_s=20) as made:
        yield made
