"""Episodes played outside TRL (codegrpo-evaluate rollout=tools) on real bwrap: a scripted model's tool calls,
parsed by TRL's parser from the tokens it "generated", run on each episode's own workspace and judged."""

from __future__ import annotations

import json

import pytest

from codegrpo.agents.environment import Session, WorkspaceEnvironment
from codegrpo.agents.episodes import play, run_calls, tool_methods
from codegrpo.config.choices import ChatTemplate
from codegrpo.config.rollout import Budgets
from codegrpo.models.chat_templates import apply_chat_template_choice


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from codegrpo.models.conversion import offline_model

    return apply_chat_template_choice(AutoTokenizer.from_pretrained(offline_model()), ChatTemplate.tool_chatml)


@pytest.fixture(scope="module")
def session(agent_box, repo_tasks):
    made = Session(list(repo_tasks.values()), agent_box, Budgets(), partial=False)
    yield made
    made.close()


def _call(command: str) -> str:
    return "<tool_call>\n" + json.dumps({"name": "bash", "arguments": {"command": command}}) + "\n</tool_call>"


def scripted(tokenizer, repo_tasks, first: dict[str, str], then: str = "Done."):
    """A model that answers each task's instruction with ``first[task id]`` and anything after with ``then``;
    it records the prompts it saw."""
    seen: list[str] = []

    def turn(prompts: list[list[int]]):
        replies = []
        for ids in prompts:
            text = tokenizer.decode(ids)
            seen.append(text)
            task = next(t for t in repo_tasks.values() if t.instruction.splitlines()[0] in text)
            reply = then if "<tool_response>" in text else first[task.id]
            replies.append(tokenizer(reply + "<|im_end|>", add_special_tokens=False)["input_ids"])
        return replies, None

    return turn, seen


def test_an_episodes_tool_call_runs_on_its_own_workspace_and_the_solved_ones_pass(tokenizer, session, repo_tasks):
    tasks = [repo_tasks["fix-median"], repo_tasks["slugify-test"]]
    turn, seen = scripted(
        tokenizer, repo_tasks, {"fix-median": _call(repo_tasks["fix-median"].solution), "slugify-test": _call("ls")}
    )
    episodes = play(session, tasks, 2, tokenizer, turn, max_turns=3)
    assert [e.environment.task.id for e in episodes] == ["fix-median"] * 2 + ["slugify-test"] * 2
    assert [e.turns for e in episodes] == [2] * 4 and all(e.done and not e.cut for e in episodes)
    assert [e.environment.judgment.status.value for e in episodes] == ["passed", "passed", "failed", "failed"]
    listing = episodes[2].messages[2]
    assert (
        listing["role"] == "tool"
        and listing["name"] == "bash"
        and listing["content"] == "exit code 0\ntests\ntext.py\n"
    )
    assert episodes[2].messages[1]["tool_calls"][0]["function"] == {"name": "bash", "arguments": {"command": "ls"}}
    assert len(seen) == 8 and all('"name": "write_file"' in text for text in seen)  # the tools, rendered


def test_the_last_turns_calls_are_not_run_and_a_context_too_small_ends_an_episode(tokenizer, session, repo_tasks):
    task = repo_tasks["fix-median"]
    turn, _ = scripted(tokenizer, repo_tasks, {"fix-median": _call(task.solution)})
    [last] = play(session, [task], 1, tokenizer, turn, max_turns=1)
    assert last.turns == 1 and last.environment.calls == [] and last.environment.judgment.status.value == "failed"
    [cut] = play(session, [task], 1, tokenizer, turn, max_turns=3, context=100, reply_tokens=10)
    assert cut.cut and cut.turns == 0 and cut.environment.judgment is not None


def test_a_call_of_no_such_tool_or_with_bad_arguments_is_an_error_the_model_sees(session):
    env = WorkspaceEnvironment(session)
    env.reset(task_id="fix-median")
    tools = tool_methods(env)
    assert sorted(t.__name__ for t in tools) == ["bash", "read_file", "run_tests", "write_file"]
    calls = [
        {"type": "function", "function": {"name": "rm_rf", "arguments": {}}},
        {"type": "function", "function": {"name": "read_file", "arguments": {"nope": 1}}},
        {"type": "other"},
        {"type": "function", "function": {"name": "read_file", "arguments": {"path": "stats.py"}}},
    ]
    replies = run_calls(tools, calls)
    assert replies[0] == {"role": "tool", "name": "rm_rf", "content": "{'error': 'Tool rm_rf not found.'}"}
    assert "unexpected keyword argument 'nope'" in replies[1]["content"]
    assert "Unsupported tool call type" in replies[2]["content"]
    assert replies[3]["content"].startswith('"""Small statistics helpers."""')
