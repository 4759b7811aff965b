"""codegrpo-validate (codegrpo.commands.validate) as a user runs it: its own --help, status 0 when every
reference passes and 1 when one fails, and a problem file not named or a misspelt key one line with
status 2."""

from __future__ import annotations

import json

from tests.helpers.commands import command

VALIDATE = "codegrpo.commands.validate"


def _problems(tmp_path, returns: int) -> str:
    reference = f"def f():\n    return {returns}"
    row = {"id": "f", "prompt": "f().", "test": "f()", "expected": "1", "reference": reference}
    (tmp_path / "p.jsonl").write_text(json.dumps(row) + "\n")
    return f"problems.path={tmp_path / 'p.jsonl'}"


def test_help_is_validates_own():
    done = command(VALIDATE, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("codegrpo-validate: check a problem set")


def test_the_status_is_0_when_every_reference_passes_and_1_when_one_fails(tmp_path):
    good = command(VALIDATE, "problems=jsonl", _problems(tmp_path, 1))
    assert good.returncode == 0, good.stdout + good.stderr[-3000:]
    assert "jsonl: 1/1 references pass" in good.stdout
    bad = command(VALIDATE, "problems=jsonl", _problems(tmp_path, 2))
    assert bad.returncode == 1, bad.stdout + bad.stderr[-3000:]
    assert "FAIL     f: failed: got 2, expected 1" in bad.stdout and "Traceback" not in bad.stderr


def test_a_problem_file_not_named_is_one_line_with_status_2():
    done = command(VALIDATE, "problems=jsonl")
    assert done.returncode == 2 and not done.stdout
    [line] = done.stderr.strip().splitlines()
    assert (
        line
        == "error: problems.path is not set (problems=jsonl reads a file: add problems.path=/path/to/problems.jsonl)"
    )


def test_a_misspelt_key_is_one_line_with_status_2():
    done = command(VALIDATE, "weak_test=false")
    assert done.returncode == 2, done.stderr[-3000:]
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: Could not override 'weak_test'")
