"""livecodebench/code_generation_lite rows (codegrpo.data.public_datasets.livecodebench): stdin and functional
tests, the public ones shown, private tests read out of their compressed pickle without unpickling it, the
release date and difficulty."""

from __future__ import annotations

import base64
import json
import pickle
import subprocess
import zlib

import pytest

from codegrpo.data.public_datasets import read_dataset
from codegrpo.data.public_datasets.livecodebench import decode_private_tests, map_livecodebench
from codegrpo.data.public_datasets.rows import Skip
from codegrpo.errors import ProblemError
from tests.helpers.public_datasets import DATA, by_id, dataset_cfg, jsonl_file

# Moved unchanged from tests/data/test_public_datasets.py.


def test_livecodebench_private_tests_functional_tests_and_starter_code():
    problems = by_id("livecodebench")
    total = problems["livecodebench/abc001_a"]
    assert len(total.tests) == 5 and total.tests[4].output == "0\n"  # 1 public + 4 compressed private
    assert len(problems["livecodebench/abc003_a"].tests) == 6  # private tests as plain JSON
    two_sum = problems["livecodebench/two-sum"]
    assert (two_sum.form, two_sum.fn_name) == ("call", "twoSum")
    assert two_sum.starter_code.startswith("class Solution:")
    assert json.loads(two_sum.tests[0].input) == [[2, 7, 11, 15], 9] and json.loads(two_sum.tests[0].output) == [0, 1]
    assert all(not p.reference for p in problems.values())


def _packed(data: bytes) -> str:
    return base64.b64encode(zlib.compress(data)).decode()


def test_compressed_tests_are_read_as_data_and_a_pickle_that_runs_code_is_refused(tmp_path):
    cases = [{"input": "1\n", "output": "2\n", "testtype": "stdin"}]
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        assert decode_private_tests(_packed(pickle.dumps(json.dumps(cases), protocol)), "t") == cases
    assert decode_private_tests(_packed(pickle.dumps(json.dumps(cases).encode())), "t") == cases
    marker = tmp_path / "ran"

    class Exploit:
        def __reduce__(self):
            return (subprocess.call, (["touch", str(marker)],))

    hostile = _packed(pickle.dumps(Exploit()))
    with pytest.raises(ProblemError, match=r"row 3: private_test_cases is neither .* \(refused pickle opcode "):
        decode_private_tests(hostile, "row 3: private_test_cases")
    assert not marker.exists()
    with pytest.raises(ProblemError, match="neither JSON nor base64-zlib-pickle"):
        decode_private_tests("not base64 at all!", "t")


def test_a_pickle_that_builds_more_than_one_string_is_refused_before_it_builds_anything():
    text = pickle.dumps(json.dumps([{"input": "1", "output": "1", "testtype": "stdin"}]), 4)
    # The string, then a memo bomb: each 2-byte BINGET would push one more reference, 1 GiB of them a few MB
    # compressed; and a list of the string a million times over. Neither is built.
    memo_bomb = text[:-1] + b"h\x00" * 1_000_000 + b"."
    repeated = pickle.dumps([json.dumps([])] * 1_000_000, 4)
    for bomb, opcode in ((memo_bomb, "BINGET"), (repeated, "EMPTY_LIST")):
        with pytest.raises(ProblemError, match=f"refused pickle opcode {opcode}: a pickled string has no other"):
            decode_private_tests(_packed(bomb), "t")


def test_private_tests_that_decompress_past_the_cap_skip_the_row(tmp_path, monkeypatch):
    from codegrpo.data.public_datasets import livecodebench

    assert livecodebench.MAX_DECOMPRESSED == 256 << 20
    monkeypatch.setattr(livecodebench, "MAX_DECOMPRESSED", 1 << 20)
    row = json.loads((DATA / "livecodebench.jsonl").read_text().splitlines()[0])
    big = [{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}] * 30_000  # 1.6 MB of JSON
    rows = [row, row | {"question_id": "big", "private_test_cases": _packed(pickle.dumps(json.dumps(big)))}]
    loaded = read_dataset(dataset_cfg("livecodebench", jsonl_file(tmp_path, rows)))
    assert [p.id for p in loaded.problems] == ["livecodebench/abc001_a"]
    assert dict(loaded.skipped) == {"private tests over 1 MiB": 1}


# map_livecodebench, its tests and its private tests, on rows of their own.

STDIN = [
    {"input": "1 2\n", "output": "3\n", "testtype": "stdin"},
    {"input": "2 2\n", "output": "4\n", "testtype": "stdin"},
]
FUNCTIONAL = [
    {"input": "[2, 7]\n9", "output": "[0, 1]", "testtype": "functional"},
    {"input": "[3, 3]\n6", "output": "[0, 1]", "testtype": "functional"},
]


def _row(public, private, func_name=None, **fields) -> dict:
    return {
        "question_id": "abc100_a",
        "question_content": "Print A + B.",
        "public_test_cases": json.dumps(public),
        "private_test_cases": json.dumps(private),
        "contest_date": "2024-05-06T00:00:00",
        "starter_code": "",
        "metadata": json.dumps({"func_name": func_name} if func_name else {}),
    } | fields


def test_a_stdin_row_shows_its_public_tests_and_hides_its_private_ones():
    mapped = map_livecodebench(_row(STDIN[:1], STDIN[1:], difficulty="medium"), 0, "w")
    record = mapped.record
    assert record["id"] == "livecodebench/abc100_a" and record["prompt"] == "Print A + B."
    assert record["tests"] == [{"input": "1 2\n", "output": "3\n"}, {"input": "2 2\n", "output": "4\n"}]
    assert record["public_tests"] == record["tests"][:1]
    assert (record["preamble"], record["difficulty"], record["released"]) == ("livecodebench", "medium", "2024-05-06")
    assert "fn_name" not in record and "reference" not in record
    assert mapped.released.isoformat() == "2024-05-06T00:00:00"


def test_a_row_without_public_tests_shows_none_and_one_without_private_tests_has_its_public_ones():
    assert "public_tests" not in map_livecodebench(_row([], STDIN), 0, "w").record
    record = map_livecodebench(_row(STDIN, [], private_test_cases=""), 0, "w").record
    assert record["tests"] == record["public_tests"] and len(record["tests"]) == 2


def test_a_functional_row_calls_the_metadatas_function_with_one_json_argument_a_line():
    record = map_livecodebench(_row(FUNCTIONAL[:1], FUNCTIONAL[1:], "twoSum", starter_code="class Solution:\n"), 0, "w")
    assert record.record["fn_name"] == "twoSum" and record.record["starter_code"] == "class Solution:\n"
    assert record.record["tests"] == [
        {"input": [[2, 7], 9], "output": [0, 1]},
        {"input": [[3, 3], 6], "output": [0, 1]},
    ]


def test_a_difficulty_that_is_not_text_is_left_out_and_a_zoned_date_is_read_in_utc():
    record = map_livecodebench(_row(STDIN, [], difficulty=2, contest_date="2024-05-06T01:00:00+03:00"), 0, "w").record
    assert "difficulty" not in record and record["released"] == "2024-05-05"


def test_a_row_without_any_test_is_skipped():
    with pytest.raises(Skip, match="no tests"):
        map_livecodebench(_row([], []), 0, "w")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"public_test_cases": '{"input": "1"}'}, "row 3: public_test_cases and private_test_cases must be JSON lists"),
        ({"contest_date": "someday"}, "row 3: contest_date is not an ISO date: 'someday'"),
        ({"public_test_cases": json.dumps([{"input": "1"}])}, "row 3: test cases must be a list of objects with"),
        ({"private_test_cases": json.dumps(FUNCTIONAL)}, "row 3: test cases mixes stdin and functional tests"),
        ({"metadata": "{"}, "row 3: metadata is not valid JSON"),
    ],
)
def test_a_malformed_row_names_the_row_and_what_is_wrong(fields, message):
    with pytest.raises(ProblemError, match=message):
        map_livecodebench(_row(STDIN[:1], STDIN[1:]) | fields, 3, "row 3")


@pytest.mark.parametrize(
    ("case", "func_name", "message"),
    [
        ({"input": "[1]", "output": "1"}, None, r"row 3: test cases: functional tests need metadata\.func_name"),
        ({"input": "[1]", "output": "[1"}, "f", r"row 3: test cases\[1\]: the output is not JSON"),
        ({"input": "[1]\n{", "output": "1"}, "f", r"row 3: test cases\[1\]: a functional test's input is not JSON"),
        ({"input": [1], "output": "1"}, "f", r"row 3: test cases\[1\]: a functional test's input must be JSON lines"),
    ],
)
def test_a_functional_test_that_cannot_be_called_names_its_place(case, func_name, message):
    private = [case | {"testtype": "functional"}]  # the second test
    with pytest.raises(ProblemError, match=message):
        map_livecodebench(_row(FUNCTIONAL[:1], private, func_name), 3, "row 3")


def test_private_tests_already_decoded_or_given_as_json_text_are_read_as_they_are():
    assert decode_private_tests(STDIN, "t") is STDIN
    assert decode_private_tests(json.dumps(STDIN), "t") == STDIN


def test_a_pickle_of_no_string_or_of_framing_past_the_string_is_refused():
    with pytest.raises(ProblemError, match="the pickle holds no string"):
        decode_private_tests(_packed(b"\x80\x04."), "t")
    with pytest.raises(ProblemError, match="refused pickle opcode NONE"):
        decode_private_tests(_packed(pickle.dumps(None)), "t")
    text = pickle.dumps(json.dumps(STDIN), 4)
    assert decode_private_tests(_packed(text[:-1] + b"\x94."), "t") == STDIN  # one more memo entry: still framing
    with pytest.raises(ProblemError, match="refused pickle opcode MEMOIZE"):
        decode_private_tests(_packed(text[:-1] + b"\x94" * 4 + b"."), "t")
    with pytest.raises(ProblemError, match="refused pickle opcode SHORT_BINUNICODE"):  # a second string
        decode_private_tests(_packed(pickle.dumps(["a", "b"], 4)[:2] + b"\x8c\x01a\x8c\x01b."), "t")
