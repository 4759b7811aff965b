"""newfacade/LeetCodeDataset rows (codegrpo.data.public_datasets.leetcode): each assert of check(candidate) a
call test with its arguments in the signature's order, the checks it cannot carry skipped and counted, both
layouts' prompt, starter code, difficulty and release date; and the sample's checks scored in the sandbox."""

from __future__ import annotations

import json

import pytest

from codegrpo.data.public_datasets import read_dataset
from codegrpo.data.public_datasets.leetcode import MAX_FIELD_CHARS, NOT_VALUES, map_leetcode
from codegrpo.data.public_datasets.rows import Skip
from codegrpo.errors import ProblemError
from tests.helpers.public_datasets import by_id, dataset_cfg, jsonl_file
from tests.helpers.run_if import run_if
from tests.helpers.sandbox import run

# Moved unchanged from tests/data/test_public_datasets.py.


def test_leetcode_asserts_become_call_tests_in_the_signatures_order():
    problems = by_id("leetcode")
    two_sum = problems["leetcode/two-sum"]
    assert (two_sum.form, two_sum.fn_name, two_sum.preamble) == ("call", "twoSum", "leetcode")
    # keywords in the signature's order, whatever order the assert names them in; the expected value on the host
    assert [json.loads(t.input) for t in two_sum.tests] == [[[2, 7, 11, 15], 9], [[3, 2, 4], 6], [[3, 3], 6]]
    assert [json.loads(t.output) for t in two_sum.tests] == [[0, 1], [1, 2], [0, 1]]
    assert two_sum.public_tests == two_sum.tests[:1] and two_sum.difficulty == "easy"
    assert two_sum.prompt.startswith("Given nums and target") and "class Solution" not in two_sum.prompt
    assert two_sum.starter_code.startswith("class Solution:\n    def twoSum(self, nums: List[int]")
    assert two_sum.released == "2015-08-07" and "seen[x] = i" in two_sum.reference
    assert json.loads(problems["leetcode/longest-common-prefix"].tests[0].input) == [["flower", "flow", "flight"]]
    assert (
        json.loads(problems["leetcode/average-salary-excluding-the-minimum-and-maximum-salary"].tests[0].output)
        == 2500.0
    )
    nested = problems["leetcode/valid-parentheses"]  # v1/v2: the query holds the starter code; meta the rest
    assert nested.prompt.startswith("Given a string s of brackets") and "def isValid(self, s: str)" in nested.prompt
    assert (nested.starter_code, nested.difficulty, nested.released) == ("", "easy", "")
    assert [json.loads(t.output) for t in nested.tests] == [True, False, True]
    later = read_dataset(dataset_cfg("leetcode", after="2024-07-01"))
    assert [p.id for p in later.problems] == ["leetcode/count-pairs-summing-to-k"]
    assert later.skipped["no release date, with a release-date window"] == 1


@pytest.mark.parametrize(
    ("check", "why"),
    [
        ("assert candidate(x = (1, 2)) == 3", "checks other than"),  # a tuple: JSON brings back a list
        ("assert candidate(x = 1) != 3", "checks other than"),
        ("assert candidate(x = {1: 2}) == 3", "checks other than"),
        ("assert candidate(y = 1) == 3", "names an argument the method does not take"),
        ("assert candidate(1, 2) == 3", "more arguments than the method takes"),
        ("assert candidate(1, x = 1) == 3", "names an argument the method does not take"),
        ("assert candidate() == 3", "leaves out an argument"),
        ("x = 1", "checks other than"),
    ],
)
def test_a_leetcode_check_that_is_not_a_call_and_a_value_skips_the_row(tmp_path, check, why):
    row = {
        "task_id": "t",
        "entry_point": "Solution().f",
        "completion": "class Solution:\n    def f(self, x):\n        return 3\n",
        "test": f"def check(candidate):\n    {check}\n",
    }
    loaded = read_dataset(dataset_cfg("leetcode", jsonl_file(tmp_path, [row])))
    [(reason, count)] = loaded.skipped.items()
    assert why in reason and count == 1 and not loaded.problems


def _leetcode_row(method: str, check: str, completion: str = "") -> dict:
    completion = completion or f"class Solution:\n    def {method}(self, x):\n        return x\n"
    return {"task_id": method, "entry_point": f"Solution().{method}", "completion": completion, "test": check}


@pytest.mark.parametrize(
    ("check", "why"),
    [
        ("def check(candidate):\n    assert candidate(x = " + "-" * 200000 + "1) == 1\n", "does not compile"),
        ("def check(candidate):\n    assert candidate(x = " + "1+" * 100000 + "1) == 1\n", "does not compile"),
        ("def check(candidate):\n    assert candidate(x = [" + "0," * 600000 + "]) == 1\n", "over 1 MiB"),
        ("def check(candidate):\n    assert candidate(x = 1) == None\n", "every expected value is None"),
    ],
)
def test_a_hostile_or_in_place_leetcode_row_is_skipped_not_a_crash(tmp_path, check, why):
    """Red team: a deep or huge field raised MemoryError or RecursionError out of the load (or took gigabytes
    to parse); a check of an in-place method (== None) paid any program."""
    loaded = read_dataset(dataset_cfg("leetcode", jsonl_file(tmp_path, [_leetcode_row("f", check)])))
    [(reason, count)] = loaded.skipped.items()
    assert why in reason and count == 1 and not loaded.problems


@pytest.mark.slow
@run_if(bwrap=True)
def test_leetcode_scores_as_its_check_compares(local_sandbox, tmp_path):
    """Red team: a correct merge() scored 0 (heapq's merge, a star import of the judge's, was called), and a
    correct isValid returning 1 for True scored 0 (the check's == says equal)."""
    from codegrpo.reward.programs import get_language
    from codegrpo.reward.scorer import Scorer

    merge = (
        "class Solution:\n    def merge(self, intervals):\n        out = []\n"
        "        for a, b in sorted(intervals):\n            if out and a <= out[-1][1]:\n"
        "                out[-1][1] = max(out[-1][1], b)\n            else:\n                out.append([a, b])\n"
        "        return out\n"
    )
    rows = [
        _leetcode_row(
            "merge",
            "def check(candidate):\n    assert candidate(intervals = [[1,3],[2,6],[8,10]]) == [[1,6],[8,10]]\n",
            merge,
        ),
        _leetcode_row(
            "isValid",
            "def check(candidate):\n    assert candidate(s = '()') == True\n    assert candidate(s = '(') == False\n",
            "class Solution:\n    def isValid(self, s):\n        return s == '()'\n",
        ),
    ]
    loaded = read_dataset(dataset_cfg("leetcode", jsonl_file(tmp_path, rows))).problems
    scorer = Scorer(loaded, local_sandbox, get_language("python"), "binary")
    answers = [
        ("leetcode/merge", merge),
        ("leetcode/merge", merge.replace("return out", "return intervals")),
        ("leetcode/isValid", "class Solution:\n    def isValid(self, s):\n        return 1 if s == '()' else 0\n"),
        ("leetcode/isValid", "class Solution:\n    def isValid(self, s):\n        return 'yes' if s == '()' else ''\n"),
    ]
    scored = run(scorer.score([pid for pid, _ in answers], [f"```python\n{code}```" for _, code in answers]))
    assert [s.verdict.reward for s in scored] == [1.0, 0.0, 1.0, 0.0]


@pytest.mark.slow
@run_if(bwrap=True)
def test_leetcode_problems_score_in_the_sandbox_with_the_judges_imports(local_sandbox):
    """The references pass in the real sandbox, List and inf from the judge's imports; wrong answers fail."""
    from codegrpo.reward.programs import get_language
    from codegrpo.reward.scorer import Scorer

    loaded = read_dataset(dataset_cfg("leetcode")).problems
    scorer = Scorer(loaded, local_sandbox, get_language("python"), "binary")
    problems = {p.id: p for p in loaded}
    wrong_two_sum = problems["leetcode/two-sum"].reference.replace("[seen[target - x], i]", "[i, seen[target - x]]")
    answers = [
        ("leetcode/two-sum", problems["leetcode/two-sum"].reference),
        ("leetcode/two-sum", wrong_two_sum),
        ("leetcode/maximum-subarray", problems["leetcode/maximum-subarray"].reference),
        ("leetcode/maximum-subarray", "class Solution:\n    def maxSubArray(self, nums):\n        return max(nums)\n"),
        ("leetcode/valid-parentheses", problems["leetcode/valid-parentheses"].reference),
        ("leetcode/valid-parentheses", "class Solution:\n    def isValid(self, s):\n        return 'True'\n"),
    ]
    scored = run(scorer.score([pid for pid, _ in answers], [f"```python\n{code}```" for _, code in answers]))
    assert [s.verdict.reward for s in scored] == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]


# map_leetcode on rows of its own.

ADD = "class Solution:\n    def add(self, a: int, b: int) -> int:\n        return a + b\n"


def _row(*asserts: str, **fields) -> dict:
    test = "def check(candidate):\n" + "".join(f"    {a}\n" for a in asserts)
    return {"task_id": "add", "entry_point": "Solution().add", "completion": ADD, "test": test} | fields


def _skip(row: dict) -> str:
    with pytest.raises(Skip) as skipped:
        map_leetcode(row, 0, "w")
    return str(skipped.value)


def test_positional_and_keyword_arguments_are_passed_in_the_signatures_order():
    record = map_leetcode(_row("assert candidate(1, 2) == 3", "assert candidate(b = 5, a = 4) == 9"), 0, "w").record
    assert record["tests"] == [{"input": [1, 2], "output": 3}, {"input": [4, 5], "output": 9}]
    assert (record["id"], record["fn_name"], record["preamble"]) == ("leetcode/add", "add", "leetcode")
    assert record["reference"] == ADD and record["public_tests"] == record["tests"][:1]


def test_the_checks_parameter_may_have_any_name():
    row = _row(test="def check(f):\n    assert f(a = 1, b = 2) == 3\n")
    assert map_leetcode(row, 0, "w").record["tests"] == [{"input": [1, 2], "output": 3}]


@pytest.mark.parametrize("entry_point", ["add", "Solution.add", "Solution().add()", "Other().add", "Solution().1x"])
def test_an_entry_point_that_is_not_a_method_of_solution_is_skipped(entry_point):
    assert _skip(_row("assert candidate(1, 2) == 3", entry_point=entry_point)) == (
        "the entry point is not a method of class Solution"
    )


def test_the_signature_is_read_from_the_starter_code_when_the_completion_has_none():
    starter = "class Solution:\n    def add(self, a: int, b: int) -> int:\n        "
    record = map_leetcode(_row("assert candidate(b = 2, a = 1) == 3", completion="", starter_code=starter), 0, "w")
    assert record.record["tests"] == [{"input": [1, 2], "output": 3}] and "reference" not in record.record
    other = "class Solution:\n    def sub(self, a, b):\n        return a - b\n"
    assert _skip(_row("assert candidate(1, 2) == 3", completion=other)) == (
        "no signature of the method (in the completion or the starter code)"
    )


@pytest.mark.parametrize(
    ("test", "why"),
    [
        ("x = 1\n", "no check(candidate)"),
        ("def check(candidate, extra):\n    assert candidate(1, 2) == 3\n", "no check(candidate)"),
        ("def check(candidate):\n    pass\n", NOT_VALUES),
        ("def check(candidate):\n    assert candidate(1, 2) == 3 == 3\n", NOT_VALUES),
        ("def check(candidate):\n    assert other(1, 2) == 3\n", NOT_VALUES),
        ("def check(candidate):\n    assert candidate(1, 1e999) == 3\n", NOT_VALUES),  # infinity: not JSON
        ("def check(candidate):\n    assert candidate(1, b = 2, b = 3) == 3\n", "names an argument the method does"),
        ("def check(candidate):\n    assert candidate(1,\n", "its test does not compile"),
        ("def check(candidate):\n    assert candidate(1, a = 2) == 3\n", "names an argument the method does not take"),
    ],
)
def test_a_check_it_cannot_carry_is_skipped_saying_why(test, why):
    assert why in _skip(_row(test=test))


def test_a_field_of_1_mib_is_parsed_and_one_over_it_is_skipped():
    test = "def check(candidate):\n    assert candidate(1, 2) == 3\n"
    padded = test + "#" * (MAX_FIELD_CHARS - len(test))
    assert len(map_leetcode(_row(test=padded), 0, "w").record["tests"]) == 1
    for field in ("test", "completion", "starter_code"):
        row = _row("assert candidate(1, 2) == 3")
        row[field] = row.get(field, "") + "#" * (MAX_FIELD_CHARS + 1 - len(row.get(field, "")))
        assert _skip(row) == "a test, completion or starter code over 1 MiB"


def test_some_expected_values_may_be_none_but_not_every_one():
    record = map_leetcode(_row("assert candidate(1, 2) == None", "assert candidate(2, 2) == 4"), 0, "w").record
    assert [t["output"] for t in record["tests"]] == [None, 4]


def test_the_v03_layout_gives_the_description_starter_code_difficulty_and_release_date():
    starter = "class Solution:\n    def add(self, a: int, b: int) -> int:\n        "
    row = _row(
        "assert candidate(1, 2) == 3",
        problem_description="Add a and b.",
        starter_code=starter,
        query="Add a and b, with the starter code.",
        difficulty="Easy",
        estimated_date="2024-07-02T00:00:00",
    )
    mapped = map_leetcode(row, 0, "w")
    assert (mapped.record["prompt"], mapped.record["starter_code"]) == ("Add a and b.", starter)
    assert (mapped.record["difficulty"], mapped.record["released"]) == ("Easy", "2024-07-02")
    assert mapped.released.isoformat() == "2024-07-02T00:00:00"


def test_a_description_without_starter_code_gives_way_to_the_query_that_holds_the_signature():
    row = _row("assert candidate(1, 2) == 3", problem_description="Add a and b.", query="Add a and b.\nclass Solution:")
    record = map_leetcode(row, 0, "w").record
    assert (record["prompt"], record["starter_code"]) == ("Add a and b.\nclass Solution:", "")


def test_the_v1_layout_reads_the_query_and_difficulty_under_meta_and_has_no_release_date():
    meta = {"query": "Add a and b.\nclass Solution: ...", "difficulty": "Medium"}
    mapped = map_leetcode(_row("assert candidate(1, 2) == 3", meta=meta), 0, "w")
    assert (mapped.record["prompt"], mapped.record["starter_code"]) == (meta["query"], "")
    assert mapped.record["difficulty"] == "Medium" and "released" not in mapped.record and mapped.released is None


def test_a_release_date_that_is_not_iso_names_the_row():
    with pytest.raises(ProblemError, match=r"^row 4: estimated_date is not an ISO date: 'soon'$"):
        map_leetcode(_row("assert candidate(1, 2) == 3", estimated_date="soon"), 4, "row 4")
