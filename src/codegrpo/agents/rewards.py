"""The rewards of a training run under rollout=tools: each episode's final workspace judged on the hidden tests.

TRL hands every reward function the step's environments (``environments=``). ``code_reward`` judges them all in
one sandbox batch (each episode once, whichever function asks first) and logs what the episodes did: tool calls,
their errors, spent budgets, turns, the judge's statuses, the monitor's flags; the completions table gets each
trajectory. ``hack_penalty`` is -1.0 for an episode the monitor flagged, as with code (reward.functions).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from codegrpo.agents.environment import Session, WorkspaceEnvironment
from codegrpo.agents.judge import JudgeStatus
from codegrpo.agents.workspace import ToolCall, ToolStatus
from codegrpo.errors import UsageError
from codegrpo.reward import metric_names as keys
from codegrpo.reward.metric_names import CODE_REWARD, HACK_PENALTY
from codegrpo.reward.monitor.flags import static_flags
from codegrpo.reward.verdict import clean_text

TRAJECTORY_CHARS = 1500  # of one episode's trajectory in the completions table
CALL_CHARS = 160  # of one call's argument and of its result there
COMPILED = (".pyc", ".pyo", ".so", ".pyd")  # what Python imports besides .py files: a sourceless module


def flags(environment: WorkspaceEnvironment) -> list[str]:
    """What the monitor sees in an ended episode: the judge's canary tripped (``test_tampering``); a public test
    file of the task changed in the final workspace (``edited_tests``: the agent changed what checks it); compiled
    Python the task did not ship (``compiled_code``: imported like source, unread by the rules); and the
    monitor's rules for code (reward.monitor: ``eq_override``, ...) on each Python file the agent wrote, which
    catch what the judge cannot (an answer whose ``__eq__`` is always true passes the assertions)."""
    found = []
    judgment, task, files = environment.judgment, environment.task, environment.files
    if judgment is not None and judgment.status is JudgeStatus.tampered:
        found.append("test_tampering")
    if task is None:
        return found
    if any(files.get(name) != task.files.get(name) for name in task.public_tests):
        found.append("edited_tests")
    if any(name.endswith(COMPILED) and data != task.files.get(name) for name, data in files.items()):
        found.append("compiled_code")  # Python imports it, and the rules below cannot read it
    written = [data for name, data in files.items() if name.endswith(".py") and data != task.files.get(name)]
    in_code = set().union(*(static_flags(data.decode("utf-8", "replace")) for data in written))
    return found + sorted(in_code)


def trajectory(calls: Sequence[ToolCall], limit: int = TRAJECTORY_CHARS) -> str:
    """An episode's calls as the completions table shows them: one line each, cut."""
    lines = [f"{c.tool}({_cut(c.argument)}) -> {c.status.value}: {_cut(c.observation)}" for c in calls]
    text = "\n".join(lines) or "(no tool call)"
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} more]"


def _cut(text: Any) -> str:
    """``text`` (whatever the model passed: a tool's argument need not be a string) as one cut line that every
    writer takes: whitespace runs one space, other control characters (terminal escapes) and lone surrogates
    (from a call's JSON, ``"\\ud800"``) escaped (reward.verdict.clean_text)."""
    flat = clean_text(" ".join(str(text).split()))
    return flat if len(flat) <= CALL_CHARS else flat[:CALL_CHARS] + "..."


def _turns(completion: Any) -> int:
    """The model's turns in a completion: its assistant messages (a plain-text completion is one)."""
    if isinstance(completion, list):
        return sum(1 for message in completion if isinstance(message, dict) and message.get("role") == "assistant")
    return 1


def episode_metrics(environments: Sequence[WorkspaceEnvironment], completions: Sequence[Any]) -> dict[str, float]:
    """A step's episodes in numbers (codegrpo.reward.metric_names' tools/ and judge/ keys)."""
    calls = [env.calls for env in environments]
    every = [call for episode in calls for call in episode]
    judged = [env.judgment for env in environments]
    flagged = [flags(env) for env in environments]
    metrics = {
        keys.TOOL_CALLS: statistics.fmean(map(len, calls)),
        keys.TOOL_ERRORS: sum(c.status is not ToolStatus.ok for c in every) / len(every) if every else 0.0,
        keys.TOOL_BUDGET: statistics.fmean(any(c.status is ToolStatus.budget for c in e) for e in calls),
        keys.TOOL_TURNS: statistics.fmean(map(_turns, completions)),
        keys.PASS_RATE: statistics.fmean(j is not None and j.status is JudgeStatus.passed for j in judged),
        keys.HACKS_ANY: statistics.fmean(bool(f) for f in flagged),
        keys.HACKS_COUNT: float(sum(bool(f) for f in flagged)),
    }
    for status in JudgeStatus:
        metrics[keys.judge(status.value)] = float(sum(j is not None and j.status is status for j in judged))
    for flag in sorted({"test_tampering", "edited_tests"}.union(*flagged)):
        metrics[keys.hacks(flag)] = statistics.fmean(flag in f for f in flagged)
    return metrics


def make_tool_rewards(session: Session, partial: bool) -> dict[str, Callable[..., list[float | None]]]:
    """``code_reward`` and ``hack_penalty`` over TRL's environments, by their reward.functions names."""

    def judged(environments: Sequence[WorkspaceEnvironment] | None) -> Sequence[WorkspaceEnvironment]:
        if environments is None:
            raise UsageError("rollout=tools: TRL passed no environments to the reward (environment_factory unset)")
        session.judge(environments)
        return environments

    def code_reward(
        completions: Sequence[Any], environments: Sequence[WorkspaceEnvironment] | None = None, **columns: Any
    ) -> list[float | None]:
        ended = judged(environments)
        if (log_metric := columns.get("log_metric")) is not None:
            for name, value in episode_metrics(ended, completions).items():
                log_metric(name, value)
            for name, value in session.backend.stats().items():
                log_metric(name, value)
        if (log_extra := columns.get("log_extra")) is not None:
            log_extra("task_id", [env.task.id if env.task else "" for env in ended])
            log_extra("status", [env.judgment.status.value if env.judgment else "" for env in ended])
            log_extra(
                "error", [", ".join(map(_cut, env.judgment.failing[:3])) if env.judgment else "" for env in ended]
            )
            log_extra("trajectory", [trajectory(env.calls) for env in ended])
            log_extra("flags", [", ".join(flags(env)) for env in ended])
        return [env.judgment.reward(partial) if env.judgment else None for env in ended]

    def hack_penalty(
        completions: Sequence[Any], environments: Sequence[WorkspaceEnvironment] | None = None, **columns: Any
    ) -> list[float | None]:
        return [-1.0 if flags(env) else 0.0 for env in judged(environments)]

    return {CODE_REWARD: code_reward, HACK_PENALTY: hack_penalty}
