"""The validate task (codegrpo.tasks.validate): every reference run in the real sandbox, and the problem set's
warnings: missing and failing references, weak tests, outputs over the cap, doubled prompts, tests that count
as public; its status 0 only when every reference passes."""

from __future__ import annotations

import json
import subprocess

from codegrpo.data.files import load_problems
from codegrpo.data.problems import parse_problem
from codegrpo.reward.checker import same_test
from codegrpo.tasks.validate import MOVED_SHOWN, report_moved_tests, validate, warn_doubled_prompts
from tests.helpers.commands import command

TEMPLATE = "Write a Python function {task}"


def _problem_file(tmp_path, *rows) -> str:
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def _validate(compose_cfg, path: str, *overrides: str) -> int:
    return validate(compose_cfg("problems=jsonl", f"problems.path={path}", *overrides, config_name="validate"))


def test_validate_returns_0_when_every_reference_passes(compose_cfg, capsys):
    assert validate(compose_cfg("problems=seed", "weak_tests=false", config_name="validate")) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[-1] == "seed: 4/4 references pass"
    assert "4 completions: mean reward 1.000; passed 4" in err


def test_validate_returns_1_for_a_failing_or_a_missing_reference(compose_cfg, tmp_path, capsys):
    good = {"id": "ok", "prompt": "f().", "test": "f()", "expected": "1", "reference": "def f():\n    return 1"}
    bad = {"id": "bad", "prompt": "g().", "test": "g()", "expected": "1", "reference": "def g():\n    return 2"}
    missing = {"id": "none", "prompt": "h().", "test": "h()", "expected": "1"}
    assert _validate(compose_cfg, _problem_file(tmp_path, good, bad), "weak_tests=false") == 1
    assert "FAIL     bad: failed: got 2, expected 1" in capsys.readouterr().out
    assert _validate(compose_cfg, _problem_file(tmp_path, good, missing), "weak_tests=false") == 1
    out = capsys.readouterr().out
    assert "MISSING  none: no reference solution" in out and "jsonl: 1/2 references pass" in out


def test_a_set_without_references_has_only_its_tests_checked_and_passes(compose_cfg, tmp_path, capsys):
    weak = {"id": "echo", "prompt": "Echo.", "tests": [{"input": "7\n", "output": "7\n"}]}
    tests = [{"input": "1 2\n", "output": "3\n"}, {"input": "2 2\n", "output": "4\n"}]
    sound = {"id": "sum", "prompt": "Sum.", "tests": tests}
    assert _validate(compose_cfg, _problem_file(tmp_path, weak, sound)) == 0
    out = capsys.readouterr().out
    assert "NOTE     none of the 2 problems has a reference solution: only the tests are checked" in out
    assert "MISSING" not in out and "WEAK     echo: a program that echoes its input passes" in out
    assert out.splitlines()[-1] == "jsonl: no references to run; 1/2 problems have weak tests"


def test_weak_tests_false_runs_no_trivial_program(compose_cfg, tmp_path, capsys):
    echo = {
        "id": "echo",
        "prompt": "Echo.",
        "tests": [{"input": "7\n", "output": "7\n"}],
        "reference": "print(input())",
    }
    assert _validate(compose_cfg, _problem_file(tmp_path, echo), "weak_tests=false") == 0
    out, err = capsys.readouterr()
    assert "WEAK" not in out and "1 completions: mean reward 1.000; passed 1" in err


def test_keep_passing_writes_the_problems_whose_reference_passes_and_whose_tests_are_not_weak(
    compose_cfg, tmp_path, capsys
):
    rows = [
        {"id": "sum", "prompt": "Sum.", "reference": "print(sum(map(int, input().split())))", "tests": [
            {"input": "1 2\n", "output": "3\n"}, {"input": "2 2\n", "output": "4\n"}]},
        {"id": "echo", "prompt": "Echo.", "tests": [{"input": "7\n", "output": "7\n"}], "reference": "print(input())"},
        {"id": "wrong", "prompt": "Two.", "tests": [{"input": "", "output": "2\n"}], "reference": "print(3)"},
    ]  # fmt: skip
    kept = tmp_path / "kept.jsonl"
    assert _validate(compose_cfg, _problem_file(tmp_path, *rows), f"keep_passing={kept}") == 1
    assert [p.id for p in load_problems(str(kept))] == ["sum"]
    assert f"wrote 1/3 problems (reference passes, tests not weak) to {kept}" in capsys.readouterr().out


def test_doubled_prompts_are_warned_about_and_counted(capsys):
    twice = parse_problem({"id": "twice", "prompt": "Write a function f().", "test": "f()", "expected": "1"}, "1")
    once = parse_problem({"id": "once", "prompt": "f() returns 1.", "test": "f()", "expected": "1"}, "2")
    assert warn_doubled_prompts([twice, once], TEMPLATE) == 1
    out, err = capsys.readouterr()
    assert not out and err.count("WARNING") == 1
    assert err.startswith("WARNING  twice: the prompt starts with 'Write', which the template already says")


def _ratio(spellings: list[str]):
    half = {"input": "1 2\n", "output": "0.5\n"}
    tests = [half, *({"input": "1 2\n", "output": text} for text in spellings), {"input": "3 4\n", "output": "0.75\n"}]
    return parse_problem({"id": "ratio", "prompt": "a / b.", "public_tests": [half], "tests": tests}, "1")


def test_moved_tests_are_named_up_to_five_then_counted(capsys):
    same = same_test()
    spellings = ["0.50", "0.500", "0.5000", "0.50000", "0.500000", "0.5000000"]
    assert report_moved_tests([_ratio(spellings[:MOVED_SHOWN])], same, "reward.checker=tokens") == 1
    shown = capsys.readouterr().out
    assert shown.startswith("MOVED    ratio: test 2 (as public test 1), test 3 (as public test 1)")
    assert "test 6 (as public test 1) of 7 count as public: reward.checker=tokens cannot tell" in shown
    assert "more" not in shown
    assert report_moved_tests([_ratio(spellings)], same, "reward.checker=tokens") == 1
    more = capsys.readouterr().out
    assert "test 6 (as public test 1) and 1 more of 8 count as public" in more and "test 7 " not in more


def test_a_problem_without_moved_tests_is_not_named(capsys):
    assert report_moved_tests([_ratio([])], same_test(), "reward.checker=tokens") == 0
    assert capsys.readouterr().out == ""


# Moved from tests/test_commands.py.


def _one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stdout + done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    return line


def test_validate_passes_for_the_shipped_sets(compose_cfg, capsys):
    for name, count in (("seed", 4), ("basics", 67), ("humaneval", 164)):
        status = validate(compose_cfg(f"problems={name}", config_name="validate"))
        out, err = capsys.readouterr()
        assert status == 0, out + err
        assert f"{name}: {count}/{count} references pass" in out


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
