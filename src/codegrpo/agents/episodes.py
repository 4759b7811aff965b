"""An agent's episodes outside TRL's trainer (codegrpo-evaluate rollout=tools), played as TRL's tool loop plays
them: the task's instruction, then turn by turn the model's reply, its tool calls parsed by TRL's parser and run
on the episode's workspace, their results as tool messages. An episode ends at a reply without a call, at
``max_turns`` (whose calls, as TRL's, are not run), or where the next turn would not fit the model's context.
Every final workspace is then judged in one sandbox batch."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from codegrpo.agents.environment import Session, WorkspaceEnvironment
from codegrpo.data.repo_tasks import RepoTask

# Token-id prompts -> (each one's reply ids, cut after its end of turn; logprobs or None): rollout.engine's Generate.
Turn = Callable[[list[list[int]]], tuple[list[list[int]], Any]]


@dataclass
class Episode:
    environment: WorkspaceEnvironment
    messages: list[dict[str, Any]]
    turns: int = 0
    done: bool = False
    cut: bool = False  # ended because the next turn would not fit the context
    tokens: list[int] = field(default_factory=list)  # the conversation as last rendered


def tool_methods(environment: WorkspaceEnvironment) -> list[Callable[..., Any]]:
    """The environment's tools as TRL finds them: its public functions but ``reset`` and ``get_reward``."""
    return [
        getattr(environment, name)
        for name, _ in inspect.getmembers(type(environment), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


def valid_text(value: Any) -> Any:
    """``value`` (a parsed reply: dicts, lists, strings) with each lone surrogate replaced by "?": a call's JSON may
    write ``"\\ud800"``, which no tokenizer or UTF-8 writer takes (the next turn's prompt could not be rendered)."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {valid_text(key): valid_text(item) for key, item in value.items()}
    if isinstance(value, list):
        return [valid_text(item) for item in value]
    return value


def run_calls(tools: Sequence[Callable[..., Any]], calls: Sequence[Any]) -> list[dict[str, Any]]:
    """Each call's tool message, as TRL makes them: an unknown tool, bad arguments or an exception become an
    ``{"error": ...}`` result the model sees."""
    by_name = {tool.__name__: tool for tool in tools}
    messages = []
    for call in calls:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        name = str(function.get("name", "unknown"))
        try:
            if not isinstance(call, dict) or call.get("type") != "function":
                raise ValueError(f"Unsupported tool call type: {call.get('type') if isinstance(call, dict) else call}")
            if name not in by_name:
                raise ValueError(f"Tool {name} not found.")
            result: Any = by_name[name](**function.get("arguments", {}))
        except Exception as error:  # the model's mistake, shown to it as TRL shows it
            result = {"error": str(error)}
        messages.append({"role": "tool", "name": name, "content": str(result)})
    return messages


def play(
    session: Session,
    tasks: Sequence[RepoTask],
    samples: int,
    tokenizer: Any,
    turn: Turn,
    max_turns: int,
    context: int | None = None,
    reply_tokens: int = 0,
    system_prompt: str | None = None,
) -> list[Episode]:
    """``samples`` episodes of each task (in order: a task's samples together), played to their end and judged.
    ``context``: the model's, which a prompt and a reply of ``reply_tokens`` must fit (None: unbounded)."""
    from trl.chat_template_utils import add_response_schema, parse_response

    if getattr(tokenizer, "response_template", None) is None and getattr(tokenizer, "response_schema", None) is None:
        tokenizer = add_response_schema(tokenizer)  # a known template's parser (Qwen's), as TRL sets one
    system = [{"role": "system", "content": system_prompt}] if system_prompt else []
    episodes = []
    for task in tasks:
        for _ in range(samples):
            environment = WorkspaceEnvironment(session)
            instruction = environment.reset(task_id=task.id)
            episodes.append(Episode(environment, [*system, {"role": "user", "content": instruction}]))
    for number in range(max_turns):
        active = []
        for episode in (e for e in episodes if not e.done):
            episode.tokens = tokenizer.apply_chat_template(
                episode.messages,
                tools=tool_methods(episode.environment),
                add_generation_prompt=True,
                tokenize=True,
                return_dict=False,
            )
            if context is not None and len(episode.tokens) + reply_tokens > context:
                episode.done = episode.cut = True
            else:
                active.append(episode)
        if not active:
            break
        print(f"turn {number + 1}/{max_turns}: {len(active)} of {len(episodes)} episodes going", file=sys.stderr)
        replies, _ = turn([e.tokens for e in active])
        for episode, reply in zip(active, replies, strict=True):
            tools = tool_methods(episode.environment)
            message = valid_text(parse_response(tokenizer, list(reply), prefix=episode.tokens, tools=list[Any](tools)))
            episode.messages.append(message)
            episode.turns += 1
            calls = message.get("tool_calls") or []
            if calls and number < max_turns - 1:  # as TRL: the last turn's calls are not run
                episode.messages += run_calls(tools, calls)
            episode.done = not calls
    session.judge([e.environment for e in episodes])
    return episodes
