"""The workspace as TRL's environment: ``GRPOTrainer(environment_factory=RepoEnvironment.factory(tasks))``.

TRL makes one environment per rollout and reuses it: ``reset(**row)`` starts an episode on the row's task
(its ``task_id`` column) with a fresh workspace and returns the task's instruction; every public method but
``reset`` and ``get_reward`` is a tool the model may call. ``RepoEnvironment.get_reward`` judges the final
workspace against the hidden tests: the first call of a batch judges every episode that has ended since, in
one sandbox batch. ``WorkspaceEnvironment`` is the same without ``get_reward``, for a run whose reward
functions judge the environments themselves (``python train.py rollout=tools``: codegrpo.agents.rewards).

The environments of one factory share a Session: the tasks, one sandbox backend and the event loop it runs
on (a thread of its own: TRL calls tools from its training thread).
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable, Coroutine, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from codegrpo.agents.judge import Judgment, judge_many
from codegrpo.agents.workspace import Budgets, ToolCall, Workspace, sandbox_config
from codegrpo.config.sandbox import LocalSandboxConfig, SandboxConfig
from codegrpo.data.repo_tasks import RepoTask, load_repo_tasks
from codegrpo.errors import UsageError
from codegrpo.sandbox.base import Runtime, SandboxBackend, make_backend
from codegrpo.sandbox.pytest_site import pytest_site

T = TypeVar("T")


class Session:
    """What the environments of one factory share: the tasks by id, the sandbox and its loop thread."""

    def __init__(
        self, tasks: Sequence[RepoTask], sandbox: SandboxConfig | SandboxBackend, budgets: Budgets, partial: bool
    ) -> None:
        self.tasks = {task.id: task for task in tasks}
        self.budgets, self.partial = budgets, partial
        self.site = str(pytest_site())
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="codegrpo-agents", daemon=True)
        self.thread.start()
        if isinstance(sandbox, SandboxBackend):
            self.backend, self.owned = sandbox, False
        else:
            cfg = sandbox_config(sandbox, budgets, self.site)
            self.backend, self.owned = make_backend(cfg, Runtime.python), True
            self.run(self.backend.__aenter__())
        self.environments: weakref.WeakSet[WorkspaceEnvironment] = weakref.WeakSet()
        self._finalizer = weakref.finalize(self, _close, self.loop, self.thread, self.backend if self.owned else None)

    def close(self) -> None:
        """Close the sandbox this session opened, and its loop thread (also done when the session is collected)."""
        self._finalizer()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def judge(self, environments: Iterable[WorkspaceEnvironment]) -> None:
        """Judge each of ``environments`` whose episode is not judged yet, all in one sandbox batch."""
        pending = [env for env in environments if env._task and env._workspace and env._judgment is None]
        if not pending:
            return
        workspaces = [(env._task, env._workspace.files) for env in pending if env._task and env._workspace]
        judged = self.run(judge_many(self.backend, workspaces, self.site))
        for env, judgment in zip(pending, judged, strict=True):
            env._judgment = judgment


def _close(loop: asyncio.AbstractEventLoop, thread: threading.Thread, backend: SandboxBackend | None) -> None:
    if backend is not None and loop.is_running():
        asyncio.run_coroutine_threadsafe(backend.aclose(), loop).result(timeout=30)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=10)


class WorkspaceEnvironment:
    """One episode at a time on a repository task, its tools run in codegrpo's sandbox."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._task: RepoTask | None = None
        self._workspace: Workspace | None = None
        self._judgment: Judgment | None = None
        session.environments.add(self)

    @classmethod
    def factory(
        cls,
        tasks: str | Path | Sequence[RepoTask],
        sandbox: SandboxConfig | SandboxBackend | None = None,
        budgets: Budgets | None = None,
        partial: bool = False,
    ) -> Callable[[], WorkspaceEnvironment]:
        """TRL's ``environment_factory``: environments on ``tasks`` (a task folder, or loaded tasks) through
        ``sandbox`` (the local sandbox's defaults when None); ``partial`` rewards the fraction of tests passed."""
        loaded = load_repo_tasks(tasks)[0] if isinstance(tasks, (str, Path)) else list(tasks)
        session = Session(loaded, sandbox or LocalSandboxConfig(), budgets or Budgets(), partial)

        def make() -> WorkspaceEnvironment:
            return cls(session)

        make.session = session  # type: ignore[attr-defined]
        return make

    def reset(self, task_id: str | None = None, **row: Any) -> str:
        """Start an episode on the row's task: a fresh workspace; the instruction is the first observation."""
        if task_id not in self._session.tasks:
            raise UsageError(f"RepoEnvironment: the row's task_id {task_id!r} is not among its tasks")
        self._task = self._session.tasks[task_id]
        self._workspace = Workspace(dict(self._task.files), self._session.budgets, self._session.site)
        self._judgment = None
        return self._task.instruction

    def _current(self) -> Workspace:
        if self._workspace is None:
            raise UsageError("RepoEnvironment: a tool was called before reset")
        return self._workspace

    def bash(self, command: str) -> str:
        """Run a shell command in the repository's folder (bash, no network, a few seconds at most).

        Args:
            command: The command line to run, e.g. "ls" or "python -m pytest -q tests".

        Returns:
            The exit code and the command's output (stdout and stderr), cut when long.
        """
        return self._session.run(self._current().shell(self._session.backend, command))

    def read_file(self, path: str) -> str:
        """Read a file of the repository.

        Args:
            path: The file's path, relative to the repository's folder.

        Returns:
            The file's text.
        """
        return self._current().read(path)

    def write_file(self, path: str, content: str) -> str:
        """Write a file of the repository, replacing it if it exists.

        Args:
            path: The file's path, relative to the repository's folder.
            content: The file's whole new text.

        Returns:
            What was written.
        """
        return self._current().write(path, content)

    def run_tests(self) -> str:
        """Run the repository's own tests with pytest.

        Returns:
            pytest's report: which tests pass and which fail, and why.
        """
        task = self._task
        assert task is not None
        targets = " ".join(task.public_tests) or "."
        return self.bash(f"python -m pytest -q {targets}")

    @property
    def task(self) -> RepoTask | None:
        """The task of the current (or last) episode."""
        return self._task

    @property
    def files(self) -> dict[str, bytes]:
        """The episode's workspace as it stands."""
        return {} if self._workspace is None else self._workspace.files

    @property
    def calls(self) -> list[ToolCall]:
        return [] if self._workspace is None else self._workspace.calls

    @property
    def judgment(self) -> Judgment | None:
        return self._judgment


class RepoEnvironment(WorkspaceEnvironment):
    """A WorkspaceEnvironment that owns its reward, as TRL's environments may (``get_reward``)."""

    def get_reward(self) -> float | None:
        """The final workspace against the task's hidden tests: 1.0 when they all pass (or the fraction passed,
        with ``partial``), 0.0 otherwise, None where the sandbox failed."""
        if self._workspace is None:
            return None
        if self._judgment is None:
            self._session.judge(self._session.environments)
        assert self._judgment is not None
        return self._judgment.reward(self._session.partial)


def task_dataset_rows(tasks: Sequence[RepoTask], system_prompt: str | None = None) -> list[dict[str, Any]]:
    """Rows for TRL's dataset: a chat prompt the instruction is appended to by ``reset``, and the task id."""
    system = [{"role": "system", "content": system_prompt}] if system_prompt else []
    prompt = [*system, {"role": "user", "content": ""}]
    return [{"prompt": prompt, "task_id": task.id} for task in tasks]
