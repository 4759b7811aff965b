"""The commands, run as users run them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from codegrpo.data.files import load_problems
from codegrpo.resources import PROJECT_ROOT
from tests.helpers.commands import command, imported_modules


@pytest.mark.parametrize("name", ["score", "validate", "limits"])
def test_companion_commands_never_import_torch_transformers_or_trl(tmp_path, name):
    path = tmp_path / "c.jsonl"
    path.write_text('{"problem_id": "is_prime", "completion": "def is_prime(n):\\n    return n > 1"}\n')
    args = {"score": [f"completions={path}"], "validate": [], "limits": []}[name]
    done = command(f"codegrpo.commands.{name}", "problems=seed", *args, flags=("-X", "importtime"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert {"score": '"status": "failed"', "validate": "seed: 4/4", "limits": "enforced by"}[name] in done.stdout
    modules = imported_modules(done.stderr)
    assert {"codegrpo.build", "codegrpo.sandbox.workers"} <= modules  # the report covers the sandbox too
    assert not {m.split(".")[0] for m in modules} & {"torch", "transformers", "trl"}


def test_score_writes_one_line_per_input_in_order(tmp_path):
    seed = {p.id: p for p in load_problems("problems/seed.jsonl")}
    rows = [
        {"problem_id": "is_prime", "completion": f"```python\n{seed['is_prime'].reference}```"},
        {"problem_id": "is_prime", "completion": "def is_prime(n):\n    return n > 1"},
        {"problem_id": "median", "completion": "no code here, sorry"},
        {"problem_id": "roman", "completion": f"```python\n{seed['roman'].reference}```"},
    ]
    path = tmp_path / "completions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = command("codegrpo.commands.score", f"completions={path}", "problems=seed", "reward=partial", "sandbox=local")
    assert done.returncode == 0, done.stderr
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert [o["problem_id"] for o in out] == ["is_prime", "is_prime", "median", "roman"]
    assert [o["status"] for o in out] == ["passed", "failed", "no_code", "passed"]  # prose is not code
    assert out[0]["reward"] == 1.0 and abs(out[1]["reward"] - 2 / 3) < 1e-9 and out[2]["reward"] == 0.0
    assert "scored 4/4" in done.stderr and "mean reward" in done.stderr


def test_score_rejects_unknown_problem_ids_naming_the_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"problem_id": "is_prime", "completion": "x"}\n{"problem_id": "nope", "completion": "x"}\n')
    done = command("codegrpo.commands.score", f"completions={path}", "problems=seed")
    assert done.returncode == 2
    assert f"{path}:2: unknown problem_id 'nope'" in done.stderr


def test_validate_passes_for_the_shipped_sets():
    for name, count in (("seed", 4), ("basics", 67), ("humaneval", 164)):
        done = command("codegrpo.commands.validate", f"problems={name}")
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"{name}: {count}/{count} references pass" in done.stdout


def test_validate_lists_failing_references(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(
        '{"id": "ok", "prompt": "f().", "test": "f()", "expected": "1", "reference": "def f():\\n    return 1"}\n'
        '{"id": "bad", "prompt": "g().", "test": "g()", "expected": "1", "reference": "def g():\\n    return 2"}\n'
        '{"id": "none", "prompt": "h().", "test": "h()", "expected": "1"}\n'
    )
    done = command("codegrpo.commands.validate", "problems=jsonl", f"problems.path={path}")
    assert done.returncode == 1
    assert "FAIL     bad: failed" in done.stdout and "MISSING  none" in done.stdout
    assert "jsonl: 1/3 references pass" in done.stdout


def test_limits_prints_what_enforces_each_limit():
    done = command("codegrpo.commands.limits", "sandbox.use_cgroups=false", "sandbox.max_concurrency=3")
    assert done.returncode == 0, done.stderr
    rows = {line.split("  ")[0]: line for line in done.stdout.splitlines()}
    assert rows["limit"].split() == ["limit", "value", "enforced", "by"]
    uid = 65534 if os.geteuid() == 0 else os.geteuid()
    assert rows["processes"].endswith(f"RLIMIT_NPROC as uid {uid}") and rows["memory"].endswith("RLIMIT_AS")
    assert "3 programs" in rows["at once"] and f"uid {uid}" in rows["user"]
    # one clear line, no traceback
    assert command("codegrpo.commands.limits", "sandbox.max_concurrency=0").returncode == 2


def test_score_reasons_say_why_each_completion_scored_what_it_did(tmp_path):
    path = tmp_path / "c.jsonl"
    rows = [
        {"problem_id": "is_prime", "completion": "def is_prime(n):\n    return n > 1"},
        {"problem_id": "median", "completion": "sorry"},
        {"problem_id": "median", "completion": "```js\nx\n```"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = command("codegrpo.commands.score", f"completions={path}", "problems=seed", "--reasons")
    assert done.returncode == 0, done.stderr
    wrong, crash, empty = (json.loads(line) for line in done.stdout.splitlines())
    # got vs expected is computed on the host, from the value the sandbox returned
    assert wrong["reason"] == "got [true, false, true], expected [true, false, false]"
    assert wrong["code"] == "def is_prime(n):\n    return n > 1" and wrong["status"] == "failed"
    assert crash["reason"] == "NameError: name 'sorry' is not defined"
    assert empty["status"] == "no_code" and empty["reason"].startswith("no code")


def test_validate_says_what_a_failing_reference_got_and_warns_about_doubled_prompts(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(
        '{"id": "twice", "prompt": "Write a function f().", "test": "f()", "expected": "1", '
        '"reference": "def f():\\n    return 1"}\n'
        '{"id": "bad", "prompt": "g().", "test": "g()", "expected": "[1, 2]", '
        '"reference": "def g():\\n    return [2, 1]"}\n'
    )
    done = command("codegrpo.commands.validate", "problems=jsonl", f"problems.path={path}")
    assert done.returncode == 1
    assert "FAIL     bad: failed: got [2, 1], expected [1, 2]" in done.stdout
    assert "         | def g():" in done.stdout
    assert "WARNING  twice: the prompt starts with 'Write'" in done.stderr
    assert '"Write a Python function Write a function f()' in done.stderr


def test_validate_names_weak_tests_and_keeps_the_problems_whose_reference_passes(tmp_path):
    rows = [
        # A good stdin problem; one whose only test a program printing nothing passes; one that echoing the
        # input passes; a call-form one that returning the first argument passes; one whose reference fails.
        {
            "id": "sum",
            "prompt": "Sum.",
            "reference": "a, b = map(int, input().split())\nprint(a + b)",
            "tests": [{"input": "1 2\n", "output": "3\n"}, {"input": "2 2\n", "output": "4\n"}],
        },
        {"id": "empty", "prompt": "Nothing.", "tests": [{"input": "5\n", "output": ""}], "reference": "pass"},
        {"id": "echo", "prompt": "Echo.", "tests": [{"input": "7\n", "output": "7\n"}], "reference": "print(input())"},
        {
            "id": "ident",
            "prompt": "Identity.",
            "fn_name": "same",
            "tests": [{"input": [3], "output": 3}],
            "reference": "def same(x):\n    return x",
        },
        {
            "id": "wrong",
            "prompt": "Double.",
            "reference": "print(int(input()) + 2)",
            "tests": [{"input": "2\n", "output": "4\n"}, {"input": "3\n", "output": "6\n"}],
        },
    ]
    path, kept = tmp_path / "io.jsonl", tmp_path / "kept.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    done = command("codegrpo.commands.validate", "problems=jsonl", f"problems.path={path}", f"keep_passing={kept}")
    assert done.returncode == 1, done.stderr
    assert 'FAIL     wrong: failed: test 2 of 2: got "5", expected "6"' in done.stdout
    assert "WEAK     empty: a program that prints nothing passes" in done.stdout
    assert "WEAK     echo: a program that echoes its input passes" in done.stdout
    assert "WEAK     ident: a program that returns its first argument passes" in done.stdout
    assert "WEAK     sum" not in done.stdout and "wrote 1/5 problems" in done.stdout
    assert [p.id for p in load_problems(str(kept))] == ["sum"]


def test_validate_names_the_tests_that_count_as_public_because_they_repeat_a_public_one(tmp_path):
    """A judge's copy of the example at another precision is not hidden: rollout=feedback showed its answer."""
    half = {"input": "1 2\n", "output": "0.5\n"}
    rows = [
        {
            "id": "ratio",
            "prompt": "Print a / b.",
            "reference": "a, b = map(int, input().split())\nprint(a / b)",
            "public_tests": [half],
            "tests": [half, {"input": "1 2", "output": "0.500000"}, {"input": "3 4\n", "output": "0.75\n"}],
        }
    ]
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    done = command("codegrpo.commands.validate", "problems=jsonl", f"problems.path={path}")
    assert done.returncode == 0, done.stderr
    assert (
        "MOVED    ratio: test 2 (as public test 1) of 3 count as public: reward.checker=tokens cannot tell them "
        "from the public test they repeat"
    ) in done.stdout
    exact = command("codegrpo.commands.validate", "problems=jsonl", f"problems.path={path}", "reward.checker=exact")
    assert "MOVED" not in exact.stdout and 'expected "0.500000"' in exact.stdout  # exact tells them apart


# -- hostile input files and settings: one line and exit status 2, before anything runs ---------------------


def _one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stdout + done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    return line


def test_problem_and_completions_files_that_are_not_utf8_json_name_their_line(tmp_path):
    problems = tmp_path / "p.jsonl"
    problems.write_bytes(b'{"id": "a", "prompt": "f().", "test": "f()", "expected": "1"}\n{"id": "\xff"}\n')
    done = command("codegrpo.commands.validate", "problems=jsonl", f"problems.path={problems}")
    assert _one_error_line(done) == f"error: {problems}:2: not UTF-8 text (byte 9 of the line)"
    completions = tmp_path / "c.jsonl"
    for line, why in (
        (b"[" * 50_000, "not valid JSON (nested too deep)"),
        (b'{"problem_id": "is_prime", "completion": "\xfe"}', "not UTF-8 text (byte 43 of the line)"),
    ):
        completions.write_bytes(b'{"problem_id": "is_prime", "completion": "x"}\n' + line + b"\n")
        done = command("codegrpo.commands.score", f"completions={completions}", "problems=seed")
        assert _one_error_line(done) == f"error: {completions}:2: {why}"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "sandbox.timeout_s=1e10",
            "sandbox.timeout_s=10000000000.0 must be a number of seconds above 0 and at most 60",
        ),
        ("sandbox.timeout_s=nan", "sandbox.timeout_s=nan must be"),
        ("reward.time_budget_s=nan", "reward.time_budget_s=nan must be a number of seconds above 0 and at most 3600"),
    ],
)
def test_timeouts_that_are_not_seconds_stop_the_command_before_it_runs(override, message):
    assert message in _one_error_line(command("codegrpo.commands.validate", "problems=seed", override))


def test_validate_refuses_more_tests_than_a_request_carries_and_names_outputs_no_program_prints(tmp_path):
    rows = [
        {"id": "many", "prompt": "Many.", "reference": "print(1)", "tests": [{"input": "", "output": "1\n"}] * 10_001},
        {
            "id": "big",
            "prompt": "Big.",
            "reference": "print('x' * 2000)",
            "tests": [{"input": "", "output": "x" * 2000}],
        },
    ]
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    done = command("codegrpo.commands.validate", "problems=jsonl", f"problems.path={path}")
    assert _one_error_line(done) == (
        "error: problems: more than 10000 tests, which one sandbox request cannot carry, "
        "in many: set problems.max_tests to at most 10000"
    )
    done = command(
        "codegrpo.commands.validate",
        "problems=jsonl",
        f"problems.path={path}",
        "problems.max_tests=2",
        "sandbox.stdout_limit_bytes=1000",
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        "OUTPUT   big: test 1 expects 2000 bytes of output, more than sandbox.stdout_limit_bytes=1000: no program "
        "passes it"
    ) in done.stdout
    assert "FAIL     big: error: test 1 of 1: output_limit" in done.stdout and "OUTPUT   many" not in done.stdout
    assert "problems: warning: " not in done.stderr  # 2000 bytes fit the default cap: only validate's own cap says


def test_livecodebench_completions_get_its_graders_imports_and_keep_their_line_numbers(tmp_path):
    starter = "class Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n"
    solution = (
        "        seen = {}\n        for i, x in enumerate(nums):\n            if target - x in seen:\n"
        "                return [seen[target - x], i]\n            seen[x] = i\n"
    )
    rows = [
        {"problem_id": "livecodebench/two-sum", "completion": f"```python\n{starter}{solution}```"},
        {"problem_id": "livecodebench/two-sum", "completion": f"```python\n{starter}        return [0, 1\n```"},
        {
            "problem_id": "livecodebench/abc001_a",
            "completion": "a, b = map(int, stdin.readline().split())\nprint(a + b)",
        },
        {"problem_id": "livecodebench/abc001_a", "completion": "if True:\nprint(1)"},
    ]
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    data = PROJECT_ROOT / "tests" / "data" / "code_datasets" / "livecodebench.jsonl"
    done = command(
        "codegrpo.commands.score",
        f"completions={path}",
        "problems=livecodebench",
        "problems.hub_path=json",
        f"problems.data_files={data}",
        "--reasons",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    kept, broken, stdio, indented = (json.loads(line) for line in done.stdout.splitlines())
    assert (kept["status"], kept["flags"], stdio["status"], stdio["flags"]) == ("passed", [], "passed", [])
    assert broken["reason"].endswith("SyntaxError: '[' was never closed (<completion>, line 3)")
    assert indented["reason"].endswith("IndentationError: expected an indented block after 'if' statement on line 1")


@pytest.mark.parametrize("name", ["evaluate", "score", "validate", "limits", "pass_rates"])
def test_each_companion_commands_help_is_its_own(name):
    """What it does, its input with an example, its main options and the groups it reads, as train.py's
    --help is written for it (Hydra's generic "is powered by Hydra" page before)."""
    done = command(f"codegrpo.commands.{name}", "--help")
    assert done.returncode == 0, done.stderr
    script = f"codegrpo-{name.replace('_', '-')}"
    assert done.stdout.startswith(f"{script}: ") and "powered by Hydra" not in done.stdout
    assert "\nInput: " in done.stdout and "\nMain options: " in done.stdout and f"    {script} " in done.stdout
    groups = done.stdout.split("== Groups it reads (group=option, the default first) ==\n")[1]
    assert "  sandbox    local, ray, superserve\n" in groups and f"{script} --cfg job" in groups
    assert ("  problems " in groups) is (name != "limits")  # limits composes problems for its schema, unread
    # The examples as they are typed: a JSON string's \n escapes and a shell line's continuation kept.
    kept = {
        "score": '"```python\\ndef is_prime(n): ...\\n```"}\n',
        "validate": '"def add(a, b):\\n    return a + b"',
        "evaluate": "evaluation.num_samples=8 \\\n",
    }
    assert kept.get(name, "") in done.stdout


def test_relative_paths_are_taken_from_where_the_user_stands_and_shipped_sets_still_load(tmp_path):
    """cd ~/data && codegrpo-validate problems=jsonl problems.path=mine.jsonl read <checkout>/mine.jsonl."""
    (tmp_path / "mine.jsonl").write_text(
        '{"id": "mine", "prompt": "add(a, b).", "test": "add(2, 3)", '
        '"expected": "5", "reference": "def add(a, b):\\n    return a + b"}\n'
    )
    env = os.environ | {"PYTHONPATH": str(PROJECT_ROOT / "src")}
    for overrides, says in (
        (["problems=jsonl", "problems.path=mine.jsonl"], "1/1 references pass"),
        (["problems=seed"], "seed: 4/4"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "codegrpo.commands.validate", *overrides, "weak_tests=false"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
        assert done.returncode == 0 and says in done.stdout, done.stdout + done.stderr[-2000:]


def test_an_experiment_of_the_users_own_project_is_found_from_where_they_stand(tmp_path):
    (tmp_path / "conf" / "experiment").mkdir(parents=True)
    (tmp_path / "conf" / "experiment" / "mine.yaml").write_text("# @package _global_\nseed: 1234\n")
    env = os.environ | {"PYTHONPATH": str(PROJECT_ROOT / "src"), "PWD": "/"}  # a stale PWD is not read
    done = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "train.py"), "experiment=mine", "--cfg", "job"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0 and "\nseed: 1234\n" in done.stdout, done.stderr[-2000:]
    elsewhere = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "train.py"), "--cfg", "job"],
        cwd=tmp_path.parent,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert elsewhere.returncode == 0 and "\nseed: 42\n" in elsewhere.stdout and not elsewhere.stderr.strip()
