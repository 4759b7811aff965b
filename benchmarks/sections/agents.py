"""m. agents: tool calls/s of agents' workspaces (codegrpo.agents) on the local sandbox at each --workers count:
short shell commands on the shipped fix-median task's files, through RepoEnvironment.bash one call at a time (as
TRL 1.16's tool loop calls them: rollout after rollout, from its training thread), and in many episodes' workspaces
at once (each episode's calls awaited in turn, and as one run_many batch); beside plain sandboxed programs
(`print(1)`, and `bash -c "echo 1"` from a Python program) as the ratio workspace / plain; and the solved
workspaces of the shipped tasks judged per second against their hidden tests (`--only agents`; not in the default
run)."""

from __future__ import annotations

import argparse
import asyncio
import functools
import sys
import time
from collections.abc import Awaitable, Callable

from benchmarks.common import Row, ints
from codegrpo.agents.environment import RepoEnvironment
from codegrpo.agents.judge import JudgeStatus, judge_many
from codegrpo.agents.workspace import ToolStatus, Workspace, sandbox_config
from codegrpo.config.rollout import Budgets
from codegrpo.config.sandbox import LocalSandboxConfig
from codegrpo.data.repo_tasks import RepoTask, load_repo_tasks
from codegrpo.resources import project_path
from codegrpo.sandbox.base import Outcome, Program, SandboxBackend
from codegrpo.sandbox.local import LocalSandbox
from codegrpo.sandbox.pytest_site import pytest_site

TITLE = "m. agents' workspaces: tool calls/s on the local sandbox"
TASK = "fix-median"  # the shipped task whose files the episodes' workspaces start from
COMMANDS = ("ls", "cat stats.py", "echo hi", 'python -c "print(1)"')  # short commands an agent runs, in turn
PLAIN = {  # the plain programs beside the workspace's `echo 1`, by what the row calls them
    "plain program print(1)": "print(1)\n",
    'plain program running bash -c "echo 1"': (
        "import subprocess\nsubprocess.run(['bash', '-c', 'echo 1'], check=True)\n"
    ),
}
TIMEOUT_S = 20.0


def _tasks() -> dict[str, RepoTask]:
    tasks, _ = load_repo_tasks(project_path("problems/repo_tasks"))
    return {task.id: task for task in tasks}


def _workspace(task: RepoTask, budgets: Budgets, site: str) -> Workspace:
    return Workspace(dict(task.files), budgets, site)


async def _episodes(box: SandboxBackend, workspaces: list[Workspace], calls: int) -> list[ToolStatus]:
    """Each workspace makes ``calls`` calls, one after another (an episode); the episodes run concurrently."""

    async def episode(workspace: Workspace, first: int) -> None:
        for i in range(calls):
            await workspace.shell(box, COMMANDS[(first + i) % len(COMMANDS)])

    await asyncio.gather(*(episode(w, i) for i, w in enumerate(workspaces)))
    return [call.status for w in workspaces for call in w.calls]


async def _batch(box: SandboxBackend, workspaces: list[Workspace], commands: list[str]) -> list[ToolStatus]:
    """One call in each workspace, all in one run_many batch."""
    results = await box.run_many([w.shell_program(c) for w, c in zip(workspaces, commands, strict=True)])
    for workspace, command, result in zip(workspaces, commands, results, strict=True):
        workspace.take(command, result)
    return [call.status for w in workspaces for call in w.calls]


async def _plain(box: SandboxBackend, source: str, count: int) -> list[ToolStatus]:
    results = await box.run_many([Program(source=source, timeout_s=TIMEOUT_S) for _ in range(count)])
    good = (ToolStatus.ok, ToolStatus.failed)
    return [good[not (r.outcome is Outcome.EXITED and r.exit_code == 0 and r.stdout.strip() == "1")] for r in results]


async def _plain_in_turn(box: SandboxBackend, count: int) -> list[ToolStatus]:
    """``count`` plain print(1) programs, each a batch of its own awaited before the next: the one-at-a-time floor."""
    return [status for _ in range(count) for status in await _plain(box, "print(1)\n", 1)]


async def _solved(box: SandboxBackend, tasks: list[RepoTask], budgets: Budgets, site: str) -> list[dict[str, bytes]]:
    """Each task's workspace after its reference solution (solution/solve.sh) ran in it."""
    workspaces = [_workspace(task, budgets, site) for task in tasks]
    await asyncio.gather(*(w.shell(box, task.solution or "true") for w, task in zip(workspaces, tasks, strict=True)))
    return [w.files for w in workspaces]


def _one_at_a_time(tasks: list[RepoTask], n: int, budgets: Budgets, episodes: int, calls: int) -> tuple:
    """(seconds, statuses): ``episodes`` episodes of ``calls`` bash calls through RepoEnvironment, one call at a
    time: TRL 1.16's tool loop calls each rollout's tools in turn from its training thread, and ``bash`` blocks."""
    make = RepoEnvironment.factory(tasks, LocalSandboxConfig(max_concurrency=n, timeout_s=TIMEOUT_S), budgets)
    try:
        environment = make()
        environment.reset(task_id=TASK)
        environment.bash("true")  # a warm worker started
        statuses: list[ToolStatus] = []
        started = time.perf_counter()
        for episode in range(episodes):
            environment.reset(task_id=TASK)
            for i in range(calls):
                environment.bash(COMMANDS[(episode + i) % len(COMMANDS)])
            statuses += [call.status for call in environment.calls]
        return time.perf_counter() - started, statuses
    finally:
        make.session.close()  # type: ignore[attr-defined]


def bench_agents(workers: list[int], episodes: int = 8, calls: int = 8, judged: int = 2) -> list[Row]:
    """``episodes`` workspaces of ``calls`` calls each per measure and worker count (``calls`` at most the
    Budgets' 16 tool calls), and ``judged`` copies of each shipped task's solved workspace judged (0: none)."""
    budgets, site = Budgets(), str(pytest_site())
    tasks = _tasks()
    task, count = tasks[TASK], episodes * calls
    rows: list[Row] = []
    best: dict[str, float] = {}

    def row(label: str, n: int, seconds: float, statuses: list[ToolStatus], ok_means: str = "calls ok") -> None:
        ok = sum(status is ToolStatus.ok for status in statuses)
        rate = len(statuses) / seconds
        print(f"[agents] {label} x{n}: {rate:.1f}/s, {ok}/{len(statuses)} {ok_means}", file=sys.stderr)
        rows.append((f"{label}, {n} workers", rate, f"{ok}/{len(statuses)} {ok_means}"))
        best[label] = max(best.get(label, 0.0), rate)

    async def measure(coroutine: Callable[[], Awaitable[list[ToolStatus]]]) -> tuple[float, list[ToolStatus]]:
        started = time.perf_counter()
        statuses = await coroutine()
        return time.perf_counter() - started, statuses

    mixed = "workspace shell, short commands"
    single = f"{mixed}, RepoEnvironment.bash one call at a time (TRL's tool loop)"
    concurrent, batched = f"{mixed}, {episodes} episodes, each call awaited", f"{mixed}, one batch"
    echo = "workspace shell echo 1, one batch"
    plain_single = "plain program print(1), one at a time"
    judge_label = "solved workspaces judged"

    async def at(n: int) -> None:
        cfg = sandbox_config(LocalSandboxConfig(max_concurrency=n, timeout_s=TIMEOUT_S), budgets, site)
        assert isinstance(cfg, LocalSandboxConfig)
        async with LocalSandbox(cfg) as box:
            await _plain(box, "print(1)\n", 2 * n)  # the warm workers started: each measure is steady state
            fresh = [_workspace(task, budgets, site) for _ in range(episodes)]
            row(concurrent, n, *await measure(lambda: _episodes(box, fresh, calls)))
            fresh = [_workspace(task, budgets, site) for _ in range(count)]
            commands = [COMMANDS[i % len(COMMANDS)] for i in range(count)]
            row(batched, n, *await measure(lambda: _batch(box, fresh, commands)))
            fresh = [_workspace(task, budgets, site) for _ in range(count)]
            row(echo, n, *await measure(lambda: _batch(box, fresh, ["echo 1"] * count)))
            for label, source in PLAIN.items():
                row(label, n, *await measure(functools.partial(_plain, box, source, count)))
            row(plain_single, n, *await measure(lambda: _plain_in_turn(box, count)))
            if judged:
                solved = await _solved(box, list(tasks.values()), budgets, site)
                pairs = [(t, files) for t, files in zip(tasks.values(), solved, strict=True)] * judged
                started = time.perf_counter()
                judgments = await judge_many(box, pairs, site)
                seconds = time.perf_counter() - started
                statuses = [(ToolStatus.failed, ToolStatus.ok)[j.status is JudgeStatus.passed] for j in judgments]
                row(judge_label, n, seconds, statuses, "passed")

    for n in workers:
        row(single, n, *_one_at_a_time(list(tasks.values()), n, budgets, episodes, calls))
        asyncio.run(at(n))
    top = max(best[concurrent], best[batched])
    rows += [
        ("tool calls/s one at a time, as TRL calls them (best)", best[single], "target >= 20 on two cores"),
        (f"ratio the above / {plain_single} (best of each)", best[single] / best[plain_single], "a call's latency"),
        ("tool calls/s, episodes at once (best of awaited and batch)", top, "what the sandbox allows"),
        (
            "ratio calls awaited / one batch (best of each)",
            best[concurrent] / best[batched],
            "1: awaiting costs nothing",
        ),
    ]
    for label in PLAIN:
        rows.append((f"ratio {echo} / {label} (best of each)", best[echo] / best[label], "the workspace's own cost"))
    return rows


def run(args: argparse.Namespace) -> list[Row]:
    return bench_agents(ints(args.workers), calls=args.agents_calls)
