"""codegrpo-score (codegrpo.commands.score) as a user runs it: its own --help, ``--reasons`` read as
``reasons=true``, and no completions file or a misspelt key each one line with status 2."""

from __future__ import annotations

import json

from tests.helpers.commands import command

SCORE = "codegrpo.commands.score"
WRONG = {"problem_id": "is_prime", "completion": "def is_prime(n):\n    return n > 1"}


def _completions(tmp_path) -> str:
    (tmp_path / "c.jsonl").write_text(json.dumps(WRONG) + "\n")
    return str(tmp_path / "c.jsonl")


def test_help_is_scores_own():
    done = command(SCORE, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("codegrpo-score: score a JSONL file of completions in the sandbox")


def test_the_reasons_flag_adds_the_reason_and_the_code_and_is_off_by_default(tmp_path):
    path = _completions(tmp_path)
    plain = command(SCORE, f"completions={path}", "problems=seed")
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert set(json.loads(plain.stdout)) == {"problem_id", "reward", "status", "flags"}
    flagged = command(SCORE, "--reasons", f"completions={path}", "problems=seed")
    assert flagged.returncode == 0, flagged.stderr[-3000:]
    assert set(json.loads(flagged.stdout)) == {"problem_id", "reward", "status", "flags", "reason", "code"}


def test_no_completions_file_is_one_line_with_status_2():
    done = command(SCORE, "problems=seed")
    assert done.returncode == 2 and not done.stdout
    [line] = done.stderr.strip().splitlines()
    assert line == "error: set completions=PATH (a JSONL file of {problem_id, completion} lines)"


def test_a_misspelt_key_is_one_line_with_status_2(tmp_path):
    done = command(SCORE, f"completions={_completions(tmp_path)}", "reason=true")
    assert done.returncode == 2, done.stderr[-3000:]
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: Could not override 'reason'")


# Moved from tests/test_commands.py.


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
