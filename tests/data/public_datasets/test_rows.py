"""What every source's mapper shares (codegrpo.data.public_datasets.rows): JSON columns, lines joined, the first
Python 3 solution, time limits read from text and cut to 60 seconds, APPS's input_output as tests, dates, a
fenced solution, the record parse_problem takes and the first test shown."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from codegrpo.config.values import MAX_TIMEOUT_S
from codegrpo.data.public_datasets import read_dataset
from codegrpo.data.public_datasets.rows import (
    _SECONDS,
    _SECONDS_TEXT,
    Skip,
    _date,
    _decode_json,
    _fenced_code,
    _first_public,
    _first_python3,
    _input_output_tests,
    _io_record,
    _is_python3,
    _naive_utc,
    _seconds,
    _text,
    _timeout,
)
from codegrpo.errors import ProblemError
from tests.helpers.public_datasets import dataset_cfg, jsonl_file, one_line, taco_row

# Moved unchanged from tests/data/test_public_datasets.py.


def test_a_malformed_input_output_names_the_row(tmp_path):
    row = {"problem_id": 7, "question": "q", "solutions": "[]", "input_output": '{"inputs": ["1"', "starter_code": ""}
    with pytest.raises(ProblemError) as error:
        read_dataset(dataset_cfg("apps", jsonl_file(tmp_path, [row])))
    assert "row 0: input_output is not valid JSON" in one_line(error)
    unpaired = row | {"input_output": json.dumps({"inputs": ["1\n", "2\n"], "outputs": ["1\n"]})}
    with pytest.raises(ProblemError, match="row 0: input_output must hold two lists 'inputs' and 'outputs'"):
        read_dataset(dataset_cfg("apps", jsonl_file(tmp_path, [unpaired])))


def test_a_row_without_a_python3_solution_has_no_reference(tmp_path):
    row = {
        "problem_id": 1,
        "question": "q",
        "starter_code": "",
        "solutions": json.dumps(["print 'x'\n"]),
        "input_output": json.dumps({"inputs": ["\n"], "outputs": ["x\n"]}),
    }
    [problem] = read_dataset(dataset_cfg("apps", jsonl_file(tmp_path, [row]))).problems
    assert problem.reference == ""


def test_a_time_limit_is_read_in_linear_time_and_cut_to_60_seconds(tmp_path):
    import time

    rows = [
        taco_row(time_limit=text)
        for text in ("1" * 30_000, "1." * 30_000, "1" + " " * 30_000 + "x", "10000000000 seconds", "2.5 s", "0 seconds")
    ]
    started = time.monotonic()
    problems = read_dataset(dataset_cfg("taco", jsonl_file(tmp_path, rows), hub_path="json")).problems
    assert time.monotonic() - started < 5  # 30,000 digits took 31 s
    assert [p.timeout_s for p in problems] == [None, None, None, 60.0, 2.5, None]
    started = time.monotonic()
    assert _SECONDS.search("1" * 30_000) is None and _SECONDS.search("1" + " " * 30_000) is None  # past the cap too
    assert time.monotonic() - started < 1


# Each shared piece on values of its own.


@pytest.mark.parametrize(("value", "decoded"), [(None, None), ("", None), ("  \n", None), ("[1]", [1]), (b"{}", {})])
def test_a_json_column_is_decoded_and_an_empty_one_is_none(value, decoded):
    assert _decode_json(value, "c") == decoded


def test_a_column_the_datasets_library_decoded_is_taken_as_it_is():
    value = {"inputs": ["1"]}
    assert _decode_json(value, "c") is value and _decode_json([], "c") == []


def test_a_json_column_that_is_not_json_names_itself_in_one_line():
    with pytest.raises(ProblemError, match=r"^row 1: solutions is not valid JSON \(Expecting"):
        _decode_json("[1,", "row 1: solutions")


def test_a_list_of_lines_is_joined_and_anything_else_kept():
    assert _text(["1 2", "3"]) == "1 2\n3"
    assert _text([]) == ""
    assert _text(["1", 2]) == ["1", 2] and _text("1 2\n") == "1 2\n" and _text(5) == 5


@pytest.mark.parametrize(
    ("source", "python3"),
    [("print(1)\n", True), ("print 1\n", False), ("x = '\0'\n", False), ("(" * 1000 + ")" * 1000, False), ("", True)],
)
def test_python3_is_what_compiles_as_python3(source, python3):
    assert _is_python3(source) is python3


def test_the_first_python3_solution_skips_python2_blanks_and_non_text():
    assert _first_python3([None, 3, "   \n", "print 'x'\n", "print('y')\n", "print('z')\n"]) == "print('y')\n"
    assert _first_python3(["print 'x'\n"]) == "" and _first_python3([]) == ""


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2 seconds", 2.0),
        ("1.5 s", 1.5),
        ("3sec", 3.0),
        ("4 SECONDS", 4.0),
        ("time limit per test: 2 seconds", 2.0),
        ("0 seconds", None),
        ("0.0 s", None),
        ("2 minutes", None),
        ("2", None),
        ("2 slices", None),
        (2, None),
        (None, None),
    ],
)
def test_a_time_limit_is_read_from_its_text(text, seconds):
    assert _seconds(text) == seconds


def test_a_time_limit_of_up_to_100_characters_is_read_and_a_longer_one_is_not():
    assert _SECONDS_TEXT == 100
    assert _seconds(" " * 97 + "2 s") == 2.0
    assert _seconds(" " * 98 + "2 s") is None
    assert _SECONDS.search("x1.5 s").group(1) == "1.5" and _SECONDS.search("v1.2.5 s") is None


@pytest.mark.parametrize(
    ("seconds", "timeout"), [(2.5, {"timeout_s": 2.5}), (60.0, {"timeout_s": 60.0}), (61, {"timeout_s": 60.0})]
)
def test_a_timeout_is_cut_to_the_most_a_problem_may_have(seconds, timeout):
    assert MAX_TIMEOUT_S == 60.0 and _timeout(seconds) == timeout


@pytest.mark.parametrize("seconds", [None, 0, 0.0])
def test_no_time_limit_gives_no_timeout(seconds):
    assert _timeout(seconds) == {}


def test_stdio_input_output_pairs_each_input_with_its_output_lines_joined():
    tests, fn_name = _input_output_tests({"inputs": ["1\n", ["2", "3"]], "outputs": ["1\n", ["2", "3"]]}, None, "io")
    assert fn_name is None and tests == [{"input": "1\n", "output": "1\n"}, {"input": "2\n3", "output": "2\n3"}]


def test_call_outputs_are_unwrapped_only_when_every_one_is_a_one_element_list():
    given = {"inputs": [[1], [2]], "outputs": [[1], [[2, 3]]]}
    assert _input_output_tests(given, "f", "io") == (
        [{"input": [1], "output": 1}, {"input": [2], "output": [2, 3]}],
        "f",
    )
    given = {"inputs": [[1], [2]], "outputs": [[1], [2, 3]]}
    assert _input_output_tests(given, "f", "io")[0] == [{"input": [1], "output": [1]}, {"input": [2], "output": [2, 3]}]
    given = {"inputs": [[1]], "outputs": [[]]}
    assert _input_output_tests(given, "f", "io")[0] == [{"input": [1], "output": []}]


def test_a_function_name_given_wins_over_the_one_in_input_output():
    given = {"inputs": [[1]], "outputs": [1], "fn_name": "theirs"}
    assert _input_output_tests(given, "mine", "io")[1] == "mine"
    assert _input_output_tests(given, None, "io")[1] == "theirs"
    assert _input_output_tests(given, None, "io")[0] == [{"input": [1], "output": 1}]  # a call: lines not joined


@pytest.mark.parametrize(
    ("in_outs", "message"),
    [
        ([["1"], ["1"]], "io must be a JSON object with 'inputs' and 'outputs'"),
        ({"inputs": ["1"]}, "io must hold two lists 'inputs' and 'outputs' of the same length"),
        ({"inputs": "1", "outputs": "1"}, "io must hold two lists"),
        ({"inputs": ["1", "2"], "outputs": ["1"]}, "io must hold two lists"),
    ],
)
def test_input_output_that_does_not_pair_up_is_an_error(in_outs, message):
    with pytest.raises(ProblemError, match=message):
        _input_output_tests(in_outs, None, "io")


def test_input_output_without_inputs_is_skipped():
    with pytest.raises(Skip, match="no tests"):
        _input_output_tests({"inputs": [], "outputs": [], "fn_name": "f"}, None, "io")


def test_a_zoned_moment_becomes_utc_without_its_zone_and_a_naive_one_is_kept():
    naive = datetime(2024, 5, 6, 1, 0)
    assert _naive_utc(naive) is naive
    zoned = datetime(2024, 5, 6, 1, 0, tzinfo=timezone(timedelta(hours=3)))
    assert _naive_utc(zoned) == datetime(2024, 5, 5, 22, 0) and _naive_utc(zoned).tzinfo is None


def test_a_date_is_read_from_iso_text_or_a_datetime_and_anything_else_names_the_field():
    assert _date("2024-05-06", "d") == datetime(2024, 5, 6)
    assert _date(datetime(2024, 5, 6, 12, tzinfo=UTC), "d") == datetime(2024, 5, 6, 12)
    with pytest.raises(ProblemError, match=r"^row 2: contest_date is not an ISO date: 'May 6'$"):
        _date("May 6", "row 2: contest_date")


def test_a_fenced_solution_is_the_code_in_its_first_fence_and_unfenced_text_is_kept():
    assert _fenced_code("Here:\n```python\nprint(1)\n```\nand ```python\nprint(2)\n```") == "print(1)\n"
    assert _fenced_code("```\nprint(3)\n```") == "print(3)\n" and _fenced_code("```c++\nint x;\n```") == "int x;\n"
    assert _fenced_code("print(4)\n") == "print(4)\n"


def test_a_record_has_its_function_reference_and_preamble_only_when_given():
    tests = [{"input": "1", "output": "1"}]
    assert _io_record("s/1", "p", tests, None, "ignored", "", "") == {
        "id": "s/1",
        "prompt": "p",
        "tests": tests,
        "language": "python",
    }
    record = _io_record("s/2", "p", tests, "f", None, "def f(): pass", "apps")
    assert (record["fn_name"], record["starter_code"], record["reference"], record["preamble"]) == (
        "f",
        "",
        "def f(): pass",
        "apps",
    )


@pytest.mark.parametrize(("count", "shown"), [(0, []), (1, []), (2, ["t0"]), (5, ["t0"])])
def test_the_first_test_is_public_when_another_is_left_hidden(count, shown):
    tests = [f"t{n}" for n in range(count)]
    assert _first_public(tests) == ({"public_tests": shown} if shown else {})
