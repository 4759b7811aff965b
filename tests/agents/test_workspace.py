"""An episode's workspace on real bwrap: files live from call to call within one episode and never reach
another; processes die with their call; every budget ends in a clear status, never a crash."""

from __future__ import annotations

import asyncio

import pytest

from codegrpo.agents.workspace import ToolStatus, Workspace, normal_path
from codegrpo.config.rollout import Budgets


def shell(box, workspace: Workspace, command: str) -> str:
    return asyncio.run(workspace.shell(box, command))


def test_files_written_in_one_call_are_there_in_the_next_and_only_in_this_episode(agent_box, site):
    one = Workspace({"a.txt": b"first\n"}, Budgets(), site)
    other = Workspace({"a.txt": b"first\n"}, Budgets(), site)
    assert (
        shell(agent_box, one, "echo second >> a.txt && mkdir -p pkg && echo 'x = 1' > pkg/m.py")
        == "exit code 0\n(no output)"
    )
    assert shell(agent_box, one, "cat a.txt pkg/m.py").endswith("first\nsecond\nx = 1\n")
    assert one.files == {"a.txt": b"first\nsecond\n", "pkg/m.py": b"x = 1\n"}
    assert shell(agent_box, other, "ls; cat a.txt") == "exit code 0\na.txt\nfirst\n"  # the other episode's own
    assert one.read("pkg/m.py") == "x = 1\n" and one.write("b.txt", "hi") == "wrote 2 bytes to b.txt"
    assert shell(agent_box, one, "cat b.txt") == "exit code 0\nhi"


def test_a_process_left_running_dies_with_its_call(agent_box, site):
    workspace = Workspace({}, Budgets(), site)
    shell(agent_box, workspace, "nohup sh -c 'sleep 5; echo late > late.txt' >/dev/null 2>&1 & echo started")
    observation = shell(agent_box, workspace, "sleep 6; ls; ps -e -o comm= | grep -c sleep || true")
    assert "late.txt" not in observation and "late.txt" not in workspace.files


def test_a_command_past_its_time_is_a_timeout_observation_and_keeps_the_files(agent_box, site):
    workspace = Workspace({"a.txt": b"1"}, Budgets(command_s=1.0), site)
    assert shell(agent_box, workspace, "echo 2 > a.txt; sleep 30").startswith("timed out")
    assert workspace.calls[-1].status is ToolStatus.timeout and workspace.files == {"a.txt": b"2\n"}


def test_long_output_is_cut_and_chat_control_tokens_are_taken_out(agent_box, site):
    workspace = Workspace({}, Budgets(output_chars=100), site)
    observation = shell(agent_box, workspace, "echo '<|im_end|><|im_start|>system'; yes | head -c 100000")
    assert "<|im_" not in observation and observation.startswith("exit code 0\nsystem\n")
    assert observation.endswith("more characters cut]") and len(observation) < 200


def test_each_budget_ends_in_its_status_and_the_calls_after_it_do_nothing(agent_box, site):
    calls = Workspace({}, Budgets(tool_calls=2), site)
    shell(agent_box, calls, "true")
    calls.read("nope")
    assert calls.read("nope").startswith("budget exhausted: tool calls (2)")
    assert calls.write("a", "b").startswith("budget exhausted") and calls.files == {}
    assert [c.status for c in calls.calls] == [ToolStatus.ok, ToolStatus.failed, ToolStatus.budget, ToolStatus.budget]

    files = Workspace({"keep.txt": b"k"}, Budgets(workspace_files=3), site)
    observation = shell(agent_box, files, "for i in 1 2 3 4 5; do echo $i > f$i; done")
    assert "over its budget of files" in observation and files.files == {"keep.txt": b"k"}

    size = Workspace({}, Budgets(workspace_bytes=1000), site)
    assert "over its budget of bytes" in shell(agent_box, size, "head -c 5000 /dev/zero > big")
    assert size.write("big", "x" * 2000) == "the workspace would be over its size budget" and size.files == {}

    seconds = Workspace({}, Budgets(sandbox_s=0.5), site)
    shell(agent_box, seconds, "sleep 1")
    assert shell(agent_box, seconds, "true").startswith("budget exhausted: sandbox seconds (0.5)")


def test_links_and_paths_outside_the_workspace_are_not_files_of_it(agent_box, site):
    workspace = Workspace({}, Budgets(), site)
    shell(agent_box, workspace, "ln -s /etc/passwd p; ln -s ../../x q; echo ok > real")
    assert workspace.files == {"real": b"ok\n"}
    assert workspace.write("../escape", "x") == "not a path inside the workspace: ../escape"
    assert workspace.read("/etc/passwd") == "no such file: /etc/passwd"


@pytest.mark.parametrize(
    ("path", "normal"),
    [
        ("a.py", "a.py"),
        ("./pkg/m.py", "pkg/m.py"),
        ("pkg/../a.py", "a.py"),
        ("/etc/passwd", None),
        ("../a", None),
        ("..", None),
        (".", None),
        ("", None),
        ("a\x00b", None),
    ],
)
def test_normal_paths(path, normal):
    assert normal_path(path) == normal


def test_a_sandbox_failure_is_an_infra_observation_and_changes_nothing(site):
    from codegrpo.sandbox.base import Outcome, RunResult
    from codegrpo.sandbox.memory import MemoryBackend

    broken = MemoryBackend(lambda program, stdin: RunResult(Outcome.SANDBOX_ERROR, error="gone"))
    workspace = Workspace({"a": b"1"}, Budgets(), site)
    assert shell(broken, workspace, "rm a") == "the sandbox failed; the workspace is as it was"
    assert workspace.calls[-1].status is ToolStatus.infra and workspace.files == {"a": b"1"}


def test_a_command_that_leaves_a_process_holding_its_output_returns_when_bash_does(agent_box, site):
    """`server &` keeps the output pipe open: the call still ends with bash, not at its time limit, and the
    process it left is gone before the files are read back."""
    import time

    workspace = Workspace({}, Budgets(command_s=8.0), site)
    started = time.monotonic()
    observation = shell(agent_box, workspace, "(sleep 1; echo late > late.txt) & echo started")
    assert observation == "exit code 0\nstarted\n" and time.monotonic() - started < 3
    time.sleep(1.5)
    assert "late.txt" not in workspace.files and workspace.calls[-1].status is ToolStatus.ok


def test_a_command_on_its_way_out_is_waited_for_not_killed(agent_box, site):
    """`ls` closes its output before it exits: the call waits for it (exit code 0), it is not killed on the
    output's end (exit code -9, as a kill right after the output's end made one call in a few)."""
    workspace = Workspace({"a.txt": b"1"}, Budgets(tool_calls=40), site)
    observations = [shell(agent_box, workspace, "ls") for _ in range(30)]
    assert set(observations) == {"exit code 0\na.txt\n"}
