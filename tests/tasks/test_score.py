"""The score task (codegrpo.tasks.score): a JSONL file of completions checked line by line before anything
runs, then scored in the real sandbox, one JSON line a completion in input order and a summary on stderr."""

from __future__ import annotations

import json

import pytest

from codegrpo.data.files import load_problems
from codegrpo.errors import ProblemError
from codegrpo.tasks.score import read_completions, score, score_pairs
from tests.helpers.commands import command

WRONG = "def is_prime(n):\n    return n > 1"


def _completions(tmp_path, *rows) -> str:
    path = tmp_path / "c.jsonl"
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
    return str(path)


def test_read_completions_keeps_the_pairs_in_input_order(tmp_path):
    path = _completions(tmp_path, {"problem_id": "b", "completion": "x"}, {"problem_id": "a", "completion": "y"})
    assert read_completions(path, {"a", "b"}) == [("b", "x"), ("a", "y")]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('["a list"]', ":2: expected an object with a string 'completion'"),
        ('{"problem_id": "a", "completion": 3}', ":2: expected an object with a string 'completion'"),
        ('{"problem_id": "a"}', ":2: expected an object with a string 'completion'"),
        ('{"problem_id": "nope", "completion": "x"}', ":2: unknown problem_id 'nope'"),
        ('{"completion": "x"}', ":2: unknown problem_id None"),
    ],
)
def test_read_completions_refuses_a_bad_line_naming_it(tmp_path, line, message):
    path = _completions(tmp_path, {"problem_id": "a", "completion": "x"}, line)
    with pytest.raises(ProblemError) as refused:
        read_completions(path, {"a"})
    assert str(refused.value) == f"{path}{message}"


def test_read_completions_names_a_missing_file(tmp_path):
    with pytest.raises(ProblemError, match=f"completions file {tmp_path / 'no.jsonl'} does not exist"):
        read_completions(str(tmp_path / "no.jsonl"), {"a"})


def test_score_without_completions_says_to_set_them(compose_cfg):
    with pytest.raises(ProblemError, match=r"set completions=PATH"):
        score(compose_cfg(config_name="score"))


def test_score_prints_reward_status_and_flags_per_line_and_a_summary(compose_cfg, tmp_path, capsys):
    reference = {p.id: p for p in load_problems("problems/seed.jsonl")}["is_prime"].reference
    path = _completions(
        tmp_path,
        {"problem_id": "is_prime", "completion": WRONG},
        {"problem_id": "is_prime", "completion": f"```python\n{reference}```"},
    )
    score(compose_cfg(f"completions={path}", "problems=seed", config_name="score"))
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines == [
        {"problem_id": "is_prime", "reward": 0.0, "status": "failed", "flags": []},
        {"problem_id": "is_prime", "reward": 1.0, "status": "passed", "flags": []},
    ]
    assert err.strip().endswith("2 completions: mean reward 0.500; failed 1, passed 1")


def test_score_with_reasons_says_why_and_shows_the_code(compose_cfg, tmp_path, capsys):
    path = _completions(tmp_path, {"problem_id": "is_prime", "completion": WRONG})
    score(compose_cfg(f"completions={path}", "problems=seed", "reasons=true", config_name="score"))
    [line] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert line["reason"] == "got [true, false, true], expected [true, false, false]"
    assert line["code"] == WRONG and line["status"] == "failed" and line["flags"] == []


def test_score_pairs_scores_in_order_under_the_configured_reward(compose_cfg):
    from codegrpo import build

    cfg = compose_cfg("problems=seed", "reward=partial", config_name="score")
    problems = build.problems(cfg.problems)
    scored = score_pairs(cfg, problems, [("is_prime", WRONG), ("median", "no code here")])
    assert [s.problem_id for s in scored] == ["is_prime", "median"]
    assert [s.verdict.status.value for s in scored] == ["failed", "no_code"]
    assert scored[0].verdict.reward == pytest.approx(2 / 3) and scored[0].code == WRONG


# Moved from tests/test_commands.py.


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
