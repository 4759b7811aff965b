"""The public code-RL datasets' loaders, on sample files in each dataset's own schema (tests/data/code_datasets,
written by its make_samples.py), offline through the datasets library."""

from __future__ import annotations

import base64
import json
import pickle
import shutil
import subprocess
import sys
import zlib
from dataclasses import replace

import pytest

from codegrpo.config.schema import ProblemsConfig
from codegrpo.data.prompts import build_messages, messages_for
from codegrpo.data.public_datasets import read_dataset
from codegrpo.data.public_datasets.livecodebench import decode_private_tests
from codegrpo.data.public_datasets.rows import _SECONDS
from codegrpo.errors import ProblemError, UsageError
from codegrpo.resources import PROJECT_ROOT
from tests.helpers.run_if import run_if
from tests.helpers.sandbox import run

DATA = PROJECT_ROOT / "tests" / "data" / "code_datasets"
SAMPLES = json.loads((DATA / "samples.json").read_text())  # each loader's builder and sample file


def _cfg(loader: str, data_files: str | None = None, **fields) -> ProblemsConfig:
    builder, name = SAMPLES[loader]
    return ProblemsConfig(
        name=loader,
        path="",
        loader=loader,
        hub_path=fields.pop("hub_path", builder),
        data_files=data_files or str(DATA / name),
        **fields,
    )


def _by_id(loader: str, **fields):
    return {p.id: p for p in read_dataset(_cfg(loader, **fields)).problems}


def _jsonl(tmp_path, rows: list[dict], name: str = "rows.jsonl") -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.mark.parametrize(
    ("loader", "problems", "skipped"),
    [
        ("apps", 11, {"no tests": 2}),
        ("taco", 11, {"no tests": 1}),
        ("code_contests", 10, {"no tests": 1, "reads a file, not stdin": 1}),
        ("livecodebench", 12, {}),
        ("deepcoder", 11, {"no tests": 1}),
        (
            "verifiable_coding",
            10,
            {"no tests": 1, "not Python": 1, "function-call tests (their argument encoding is not documented)": 1},
        ),
        ("humaneval_plus", 6, {}),
        (
            "leetcode",
            6,
            {
                "checks other than candidate(...) == value on JSON values (linked lists, trees, ...)": 1,
                "the entry point is not a method of class Solution": 1,
            },
        ),
    ],
)
def test_each_sample_loads_with_its_skips_counted(loader, problems, skipped):
    loaded = read_dataset(_cfg(loader))
    assert len(loaded.problems) == problems
    assert dict(loaded.skipped) == skipped
    assert loaded.rows == problems + sum(skipped.values())
    if loader == "humaneval_plus":  # HumanEval's form: one check over every input
        assert all(p.form == "humaneval" and "def check(candidate)" in p.test for p in loaded.problems)
    else:
        assert all(p.form in ("stdio", "call") and p.tests for p in loaded.problems)


def test_apps_rows_map_stdio_and_call_forms_with_their_references():
    problems = _by_id("apps")
    first = problems["apps/0"]
    assert first.form == "stdio" and first.prompt.startswith("Read two integers")
    assert (first.tests[0].input, first.tests[0].output) == ("1 2\n", "3\n")
    assert "raw_input" not in first.reference and "print(a + b)" in first.reference  # the Python 2 one is passed over
    wrapped = problems["apps/8"]  # every output a one-element list: unwrapped to the returned list
    assert (wrapped.form, wrapped.fn_name) == ("call", "reverse_list")
    assert wrapped.starter_code == "def reverse_list(items):\n"
    assert [json.loads(t.output) for t in wrapped.tests] == [[3, 2, 1], [], ["b", "a"], [5], [2, 1, 1]]
    assert json.loads(wrapped.tests[0].input) == [[1, 2, 3]]
    kept = problems["apps/9"]  # some outputs are not one-element lists: left as they are
    assert [json.loads(t.output) for t in kept.tests][:2] == [[1, 3], [5, 5]]
    assert [json.loads(t.output) for t in problems["apps/7"].tests] == [True, False, True, True, False]


def test_taco_lines_joined_and_time_limits_per_test():
    problems = _by_id("taco")
    squares = problems["taco/2"]  # inputs and outputs given as lists of lines
    assert [(t.input, t.output) for t in squares.tests][1] == ("3", "1\n4\n9")
    assert [problems[f"taco/{n}"].timeout_s for n in range(3)] == [2.0, 1.5, None]
    assert problems["taco/3"].reference.startswith("import sys")  # the Python 2 solution comes first in the row


def test_code_contests_tests_references_and_time_limit():
    problems = _by_id("code_contests")
    total = problems["code_contests/1_A. Sum"]
    # public, then private, then generated
    assert [t.input for t in total.tests] == ["1 2\n", "-5 5\n", "100 23\n", "7 8\n", "0 0\n"]
    assert total.reference.startswith("a, b = map(int, input()")  # C++ and Python 2 solutions passed over
    assert total.timeout_s == 2.0 and problems["code_contests/2_A. Reverse"].timeout_s == 1.5
    assert problems["code_contests/5_A. Factorial"].reference.startswith("import math")  # after a Java one


def test_livecodebench_private_tests_functional_tests_and_starter_code():
    problems = _by_id("livecodebench")
    total = problems["livecodebench/abc001_a"]
    assert len(total.tests) == 5 and total.tests[4].output == "0\n"  # 1 public + 4 compressed private
    assert len(problems["livecodebench/abc003_a"].tests) == 6  # private tests as plain JSON
    two_sum = problems["livecodebench/two-sum"]
    assert (two_sum.form, two_sum.fn_name) == ("call", "twoSum")
    assert two_sum.starter_code.startswith("class Solution:")
    assert json.loads(two_sum.tests[0].input) == [[2, 7, 11, 15], 9] and json.loads(two_sum.tests[0].output) == [0, 1]
    assert all(not p.reference for p in problems.values())


def test_leetcode_asserts_become_call_tests_in_the_signatures_order():
    problems = _by_id("leetcode")
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
    later = read_dataset(_cfg("leetcode", after="2024-07-01"))
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
    loaded = read_dataset(_cfg("leetcode", _jsonl(tmp_path, [row])))
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
    loaded = read_dataset(_cfg("leetcode", _jsonl(tmp_path, [_leetcode_row("f", check)])))
    [(reason, count)] = loaded.skipped.items()
    assert why in reason and count == 1 and not loaded.problems


def test_a_local_file_with_a_hub_dataset_named_is_one_line_before_the_hub(tmp_path):
    """It went to the Hub five times (26 s) before an error that never named problems.hub_path=json."""
    cfg = _cfg("humaneval_plus", hub_path="evalplus/humanevalplus")
    with pytest.raises(UsageError, match=r"is a local file, and problems\.hub_path=evalplus/humanevalplus names"):
        read_dataset(cfg)


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
    loaded = read_dataset(_cfg("leetcode", _jsonl(tmp_path, rows))).problems
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

    loaded = read_dataset(_cfg("leetcode")).problems
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


def test_livecodebench_date_window():
    later = read_dataset(_cfg("livecodebench", after="2024-08-01"))
    assert [p.id for p in later.problems] == [
        "livecodebench/abc360_a",
        "livecodebench/1990A",
        "livecodebench/abc370_a",
        "livecodebench/abc380_a",
    ]
    assert later.skipped["outside the release-date window"] == 8
    window = read_dataset(_cfg("livecodebench", after="2024-01-01", before="2024-06-08"))
    assert [p.id for p in window.problems] == [
        "livecodebench/1910A",
        "livecodebench/two-sum",
        "livecodebench/climbing-stairs",
    ]  # before is exclusive
    with pytest.raises(UsageError, match=r"problems\.after='last year' is not an ISO date"):
        read_dataset(_cfg("livecodebench", after="last year"))
    with pytest.raises(UsageError, match="apps rows have no release date"):
        read_dataset(_cfg("apps", after="2024-01-01"))


def test_deepcoder_maps_each_source_shape():
    problems = _by_id("deepcoder")
    assert problems["deepcoder/0"].form == "stdio" and len(problems["deepcoder/0"].tests) == 5  # taco's dict
    assert [json.loads(t.output) for t in problems["deepcoder/1"].tests] == [3, 0, 30, 0, 4]  # taco call, unwrapped
    assert problems["deepcoder/4"].fn_name == "is_even"  # primeintellect's fn_name on the tests
    assert json.loads(problems["deepcoder/4"].tests[1].output) is False
    assert problems["deepcoder/7"].fn_name == "climbStairs"  # lcbv5: metadata.func_name
    assert json.loads(problems["deepcoder/7"].tests[4].input) == [10]
    # No public/hidden split in its rows: the first test is public, the rest hidden (as APPS's).
    assert all(p.public_tests == p.tests[:1] for p in problems.values() if len(p.tests) > 1)


def test_deepcoder_mix_reads_each_config_under_ids_of_its_own(tmp_path):
    """problems.hub_names: DeepCoder's three configs, as the Hub serves them (a dataset repo whose README
    names each config's files), read one after another; row numbers restart in each, ids do not clash."""
    for config in ("primeintellect", "taco"):
        (tmp_path / config).mkdir()
        shutil.copy(DATA / SAMPLES["deepcoder"][1], tmp_path / config / "train-00000.parquet")
    configs = "".join(
        f"- config_name: {c}\n  data_files:\n  - split: train\n    path: {c}/train-*.parquet\n"
        for c in ("primeintellect", "taco")
    )
    (tmp_path / "README.md").write_text(f"---\nconfigs:\n{configs}---\n")
    cfg = ProblemsConfig(name="deepcoder", path="", loader="deepcoder", hub_path=str(tmp_path))
    single = read_dataset(replace(cfg, hub_name="taco"))
    assert sorted(p.id for p in single.problems) == sorted(_by_id("deepcoder"))
    mix = read_dataset(replace(cfg, hub_names=["primeintellect", "taco"]))
    assert mix.rows == 2 * single.rows and mix.skipped == {"no tests": 2}
    assert sorted(p.id for p in mix.problems) == sorted(
        f"{config}/{id}" for config in ("primeintellect", "taco") for id in _by_id("deepcoder")
    )
    with pytest.raises(UsageError, match="set one"):
        replace(cfg, hub_name="taco", hub_names=["taco"])
    with pytest.raises(UsageError, match=r"one problems\.data_files glob"):
        replace(cfg, hub_names=["taco"], data_files="x.parquet")


def test_verifiable_coding_reference_out_of_its_fence_and_time_limit():
    problem = _by_id("verifiable_coding")["verifiable_coding/vfc_1"]
    assert problem.reference == "a, b = map(int, input().split())\nprint(a + b)\n"
    assert problem.timeout_s == 2.0 and problem.prompt.endswith("Print a + b.")
    assert problem.public_tests == problem.tests[:1] and len(problem.tests) > 1


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
    loaded = read_dataset(_cfg("livecodebench", _jsonl(tmp_path, rows)))
    assert [p.id for p in loaded.problems] == ["livecodebench/abc001_a"]
    assert dict(loaded.skipped) == {"private tests over 1 MiB": 1}


# -- bad input: one line, before anything loads ----------------------------------------------------


def _one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert "\n" not in message
    return message


def test_a_malformed_input_output_names_the_row(tmp_path):
    row = {"problem_id": 7, "question": "q", "solutions": "[]", "input_output": '{"inputs": ["1"', "starter_code": ""}
    with pytest.raises(ProblemError) as error:
        read_dataset(_cfg("apps", _jsonl(tmp_path, [row])))
    assert "row 0: input_output is not valid JSON" in _one_line(error)
    unpaired = row | {"input_output": json.dumps({"inputs": ["1\n", "2\n"], "outputs": ["1\n"]})}
    with pytest.raises(ProblemError, match="row 0: input_output must hold two lists 'inputs' and 'outputs'"):
        read_dataset(_cfg("apps", _jsonl(tmp_path, [unpaired])))


def test_a_stdin_test_whose_input_is_not_a_string_is_an_error(tmp_path):
    row = {
        "problem_id": 1,
        "question": "q",
        "solutions": "[]",
        "starter_code": "",
        "input_output": json.dumps({"inputs": [5], "outputs": ["5\n"]}),
    }
    with pytest.raises(ProblemError) as error:
        read_dataset(_cfg("apps", _jsonl(tmp_path, [row])))
    assert "field 'tests[0].input' must be a string (stdin/stdout form)" in _one_line(error)


def test_a_data_file_that_does_not_exist(tmp_path):
    with pytest.raises(ProblemError) as error:
        read_dataset(_cfg("taco", str(tmp_path / "TACO" / "train" / "*.arrow")))
    assert _one_line(error).startswith("problems.data_files: ") and "does not exist" in str(error.value)


def test_a_dataset_whose_columns_are_not_the_groups():
    with pytest.raises(ProblemError) as error:
        read_dataset(_cfg("apps", str(DATA / "livecodebench.jsonl")))
    assert "has no column question, solutions, input_output that problems.loader=apps reads" in _one_line(error)


def test_an_unknown_loader_names_the_choices():
    with pytest.raises(UsageError, match="not one of apps, taco, code_contests, livecodebench, deepcoder"):
        read_dataset(ProblemsConfig(name="x", path="", loader="mbpp", hub_path="json"))


def test_a_row_without_a_python3_solution_has_no_reference(tmp_path):
    row = {
        "problem_id": 1,
        "question": "q",
        "starter_code": "",
        "solutions": json.dumps(["print 'x'\n"]),
        "input_output": json.dumps({"inputs": ["\n"], "outputs": ["x\n"]}),
    }
    [problem] = read_dataset(_cfg("apps", _jsonl(tmp_path, [row]))).problems
    assert problem.reference == ""


# -- through the problem set: the paper filters, the groups, the prompts -------------------------------


def test_the_groups_load_their_samples_with_the_filters(compose_cfg, capsys):
    from codegrpo.data.sets import load_problem_set

    cfg = compose_cfg("problems=apps", f"problems.data_files={DATA / 'apps.jsonl'}")
    assert len(load_problem_set(cfg.problems)) == 10  # 13 rows, 2 without tests, 1 duplicate prompt
    assert "skipped 2 of 13 rows (no tests)" in capsys.readouterr().err
    cfg = compose_cfg(
        "problems=apps",
        f"problems.data_files={DATA / 'apps.jsonl'}",
        "problems.max_tests=2",
        "problems.test_selection=shortest",
        "problems.min_tests=5",
    )
    problems = {p.id: p for p in load_problem_set(cfg.problems)}
    assert "apps/1" not in problems and "apps/5" not in problems  # 3 tests each: fewer than 5
    # Its public test (APPS: the first), and the two shortest of the hidden ones, in the dataset's order.
    assert [t.input for t in problems["apps/4"].tests] == ["0\n", "5\n", "3\n"]
    assert problems["apps/4"].public_tests == problems["apps/4"].tests[:1]
    cfg = compose_cfg(
        "problems=livecodebench", f"problems.data_files={DATA / 'livecodebench.jsonl'}", "problems.after=2024-08-01"
    )
    assert len(load_problem_set(cfg.problems)) == 4


def test_prompts_say_how_input_and_output_work(compose_cfg):
    cfg = compose_cfg("problems=livecodebench").problems
    problems = _by_id("livecodebench")
    [stdio] = messages_for(problems["livecodebench/abc001_a"], cfg)
    assert "standard input" in stdio["content"] and "Sample Input 1" in stdio["content"]  # the public examples
    [call] = messages_for(problems["livecodebench/two-sum"], cfg)
    assert "`twoSum`" in call["content"] and "```python\nclass Solution:\n    def twoSum(" in call["content"]
    custom = build_messages(problems["livecodebench/abc001_a"], "{task}", "{prompt}", None, "STDIN: {prompt}")
    assert custom[0]["content"].startswith("STDIN: Print A + B.")


@pytest.mark.slow
def test_every_sample_solution_passes_its_mapped_tests_with_plain_python():
    done = subprocess.run(
        [sys.executable, str(DATA / "make_samples.py"), "--check"], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("loader", list(SAMPLES))
def test_validate_passes_every_reference_of_the_samples(loader):
    builder, name = SAMPLES[loader]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "codegrpo.commands.validate",
            f"problems={loader}",
            f"problems.hub_path={builder}",
            f"problems.data_files={DATA / name}",
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if loader in ("livecodebench", "deepcoder"):  # these datasets ship no references: their tests are checked
        assert done.returncode == 0, done.stdout + done.stderr
        assert "none of the" in done.stdout and "problems have weak tests" in done.stdout and "WEAK " not in done.stdout
    else:
        assert done.returncode == 0, done.stdout + done.stderr
        assert " references pass" in done.stdout


def test_the_transfer_experiment_trains_on_taco_and_evaluates_on_livecodebench_after_a_date(compose_cfg):
    from codegrpo import build

    train = compose_cfg("experiment=taco_to_livecodebench", f"problems.data_files={DATA / 'taco.arrow'}")
    assert {p.id.split("/")[0] for p in build.problems(train.problems)} == {"taco"}
    assert (train.problems.min_tests, train.problems.max_tests) == (5, 15)
    evaluation = compose_cfg(
        "+experiment=livecodebench_after", f"problems.data_files={DATA / 'livecodebench.jsonl'}", config_name="evaluate"
    )
    assert [p.id for p in build.eval_problems(evaluation)] == [
        "livecodebench/abc360_a",
        "livecodebench/1990A",
        "livecodebench/abc370_a",
        "livecodebench/abc380_a",
    ]


# -- hostile fields: loading neither hangs nor crashes ----------------------------------------------------


def _taco_row(**fields) -> dict:
    return {
        "question": "Print a + b.",
        "solutions": json.dumps(["print(sum(map(int, input().split())))"]),
        "starter_code": "",
        "input_output": json.dumps({"inputs": ["1 2\n"], "outputs": ["3\n"]}),
    } | fields


def test_a_time_limit_is_read_in_linear_time_and_cut_to_60_seconds(tmp_path):
    import time

    rows = [
        _taco_row(time_limit=text)
        for text in ("1" * 30_000, "1." * 30_000, "1" + " " * 30_000 + "x", "10000000000 seconds", "2.5 s", "0 seconds")
    ]
    started = time.monotonic()
    problems = read_dataset(_cfg("taco", _jsonl(tmp_path, rows), hub_path="json")).problems
    assert time.monotonic() - started < 5  # 30,000 digits took 31 s
    assert [p.timeout_s for p in problems] == [None, None, None, 60.0, 2.5, None]
    started = time.monotonic()
    assert _SECONDS.search("1" * 30_000) is None and _SECONDS.search("1" + " " * 30_000) is None  # past the cap too
    assert time.monotonic() - started < 1


def test_code_contests_time_limits_are_cut_to_60_seconds_and_bad_ones_name_the_row(tmp_path):
    row = {
        "name": "1_A",
        "description": "Sum.",
        "public_tests": {"input": ["1 2\n"], "output": ["3\n"]},
        "private_tests": None,
        "generated_tests": None,
        "solutions": None,
        "input_file": "",
        "output_file": "",
    }
    limits = [{"seconds": 10**10, "nanos": 0}, {"seconds": 1, "nanos": 500_000_000}, None]
    rows = [row | {"name": f"{n}_A", "time_limit": limit} for n, limit in enumerate(limits)]
    problems = read_dataset(_cfg("code_contests", _jsonl(tmp_path, rows), hub_path="json")).problems
    assert [p.timeout_s for p in problems] == [60.0, 1.5, None]
    with pytest.raises(ProblemError) as error:
        read_dataset(_cfg("code_contests", _jsonl(tmp_path, [row | {"time_limit": {"seconds": -3}}]), hub_path="json"))
    assert "row 0: field 'timeout_s' must be a number of seconds above 0 and at most 60, not -3" in _one_line(error)
    with pytest.raises(ProblemError) as error:
        read_dataset(_cfg("code_contests", _jsonl(tmp_path, [row | {"time_limit": {"seconds": "2"}}]), hub_path="json"))
    assert "row 0: a malformed row (TypeError: " in _one_line(error)


def test_json_nested_too_deep_names_the_row_and_field(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(ProblemError) as error:
        read_dataset(_cfg("taco", _jsonl(tmp_path, [_taco_row(input_output=deep)]), hub_path="json"))
    assert "row 0: input_output is not valid JSON (nested too deep)" in _one_line(error)
    row = json.loads((DATA / "livecodebench.jsonl").read_text().splitlines()[0])
    with pytest.raises(ProblemError) as error:
        read_dataset(_cfg("livecodebench", _jsonl(tmp_path, [row | {"private_test_cases": deep}])))
    assert "row 0: private_test_cases is neither JSON nor base64-zlib-pickle" in _one_line(error)
    with pytest.raises(ProblemError) as error:
        read_dataset(_cfg("livecodebench", _jsonl(tmp_path, [row | {"private_test_cases": "{}"}])))
    assert "row 0: public_test_cases and private_test_cases must be JSON lists" in _one_line(error)


# -- each dataset's own grader's imports -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("loader", "preambles"),
    [
        ("apps", {"apps"}),
        ("taco", {"apps"}),
        ("code_contests", {""}),
        ("livecodebench", {"livecodebench"}),
        ("verifiable_coding", {""}),
        ("leetcode", {"leetcode"}),
    ],
)
def test_each_dataset_gets_the_preamble_its_grader_runs(loader, preambles):
    assert {p.preamble for p in _by_id(loader).values()} == preambles


def test_deepcoder_rows_get_the_preamble_of_the_grader_their_source_is_scored_by():
    preambles = {number: _by_id("deepcoder")[f"deepcoder/{number}"].preamble for number in range(11)}
    # taco's dict (0, 1), primeintellect (2-4, 9, 10) and codeforces (8): TACO's grader; lcbv5 (5-7): LiveCodeBench's
    assert preambles == {n: "livecodebench" if n in (5, 6, 7) else "apps" for n in range(11)}


def test_a_second_row_of_one_id_is_skipped_and_counted_never_scored_on_the_firsts_prompt(tmp_path):
    # APPS's train and test splits both number their problems from 0: a file of both repeats ids. The first
    # row is the problem, its prompt with its own tests (problems=hub, which has no such rows, refuses a repeat).
    rows = [
        _taco_row(problem_id=0),
        _taco_row(
            problem_id=0, question="Print a * b.", input_output=json.dumps({"inputs": ["2 3\n"], "outputs": ["6\n"]})
        ),
    ]
    loaded = read_dataset(_cfg("apps", _jsonl(tmp_path, rows), hub_path="json"))
    [problem] = loaded.problems
    assert (problem.id, problem.prompt, problem.tests[0].output) == ("apps/0", "Print a + b.", "3\n")
    assert loaded.report() == ["problems: skipped 1 of 2 rows (duplicate id)"]


# -- HumanEval+: EvalPlus's assertion without numpy --------------------------------------------------------

# (answer, expected, atol) pairs around the tolerances EvalPlus's assertion uses, and values numpy refuses.
CLOSE_CASES = [
    (0.5, 0.5, 0),
    (0.1 + 0.2, 0.3, 0),
    (0.30001, 0.3, 0),
    (1.0 + 1e-7, 1.0, 0),
    (1e-9, 3e-9, 0),
    (2.0, 2, 0),
    (True, 1.0, 0),
    (3, 3.0000001, 1e-6),
    (3, 3.1, 1e-6),
    ([1.0, 2.0], [1.0, 2.0000001], 0),
    ([1.0, 2.0], [1.0, 2.1], 0),
    ([1.0, 2.0], [1.0, 2.0, 3.0], 0),
    ((0.5, 1.5), [0.5, 1.5 + 1e-12], 1e-9),
    ([], [], 1e-9),
    (float("nan"), float("nan"), 0),
    (float("nan"), 1.0, 0),
    (float("inf"), float("inf"), 0),
    (float("inf"), -float("inf"), 0),
    (float("inf"), 1e308, 0),
    (1e308, float("inf"), 0),
    ([[1.0, 2.0], [3.0]], [[1.0, 2.0], [3.0 + 1e-9]], 0),
    ([[0.5], [1.5]], [0.5, 1.5], 1e-9),
    ([0.5, 1.5], [[0.5], [1.5]], 1e-9),
    ([[[[0.5]]]], [0.5], 1e-9),
    ([[1.0, 2.0000001], [3.0]], [[1.0, 2.0], [3.0]], 1e-6),
    ([[], []], [[], []], 1e-6),
    ([[]], [], 1e-6),
    (1.5 + 1e-9j, 1.5, 1e-6),
    (1.5 + 1e-3j, 1.5, 1e-6),
    (2**53 + 1, 2**53, 0.5),
    (10**400, 10**400 + 1, 1e-6),
    (-0.0, 0.0, 1e-9),
    ("0.5", 0.5, 0),
    (None, 0.5, 0),
    ({"a": 1.0}, 0.5, 0),
    ({1.0}, 1.0, 1e-6),
]
# Where numpy stretches a scalar over a list (an empty one too), which would pay `return []` for any number:
# the plain-Python test wants one shape, and fails these.
STRETCHED = [(0.5, [0.5, 0.5000001], 0), ([0.5, 0.5000001], 0.5, 0), ([], 1.5, 1e-6), (0.0, [], 1e-9)]


def _verdict(assertion, out, exp, atol) -> bool:
    try:
        assertion(out, exp, atol)
    except Exception:  # numpy's refusals (a string, a ragged list) fail the check as the assertion's do
        return False
    return True


def test_numpy_free_assertion_agrees_with_numpys_on_every_case():
    import numpy as np

    from codegrpo.data.public_datasets.humaneval_plus import numpy_free

    sys.path.insert(0, str(DATA))
    from make_samples import PLUS_ASSERTION

    with_numpy: dict = {"np": np}
    exec(PLUS_ASSERTION, with_numpy)
    without: dict = {}
    mapped = numpy_free(PLUS_ASSERTION, "sample")
    assert "import numpy" not in mapped
    exec(mapped, without)
    assert without["np"] is not np
    for out, exp, atol in CLOSE_CASES:
        expected = _verdict(with_numpy["assertion"], out, exp, atol)
        assert _verdict(without["assertion"], out, exp, atol) == expected, (out, exp, atol, expected)
    for out, exp, atol in STRETCHED:
        assert _verdict(with_numpy["assertion"], out, exp, atol) and not _verdict(without["assertion"], out, exp, atol)
    # numpy's keywords are taken (a check may pass err_msg)
    without["np"].testing.assert_allclose(1.0, 1.0 + 1e-9, atol=1e-6, err_msg="x", verbose=False)
    # and the two verdicts differ somewhere, so the cases test something
    assert {_verdict(without["assertion"], *case) for case in CLOSE_CASES} == {True, False}


def test_a_value_whose_own_arithmetic_says_close_is_not_close():
    from codegrpo.data.public_datasets.humaneval_plus import NUMPY_FREE

    space: dict = {}
    exec(NUMPY_FREE, space)

    class Liar(float):
        def __sub__(self, other):
            return 0.0

        def __abs__(self):
            return 0.0

    with pytest.raises(AssertionError):
        space["np"].testing.assert_allclose(Liar(5.0), 1.0, atol=1e-6)


@pytest.mark.parametrize(
    "test",
    [
        "import numpy as np\ndef check(candidate):\n    assert np.isclose(candidate(1), 2)\n",
        "import numpy\ndef check(candidate):\n    assert candidate(1) == 2\n",
        "from numpy import testing\ndef check(candidate):\n    testing.assert_allclose(candidate(1), 2)\n",
        # found by the red team: each loaded, then judged every right answer wrong (no numpy in the sandbox)
        "import numpy as np\ndef check(candidate):\n    assert getattr(np, 'isclose')(candidate(1), 2)\n",
        "import numpy as np\nn = np\ndef check(candidate):\n    n.testing.assert_allclose(candidate(1), 2)\n",
        "import numpy as np\ndef check(candidate):\n    __import__('numpy').testing.assert_allclose(candidate(1), 2)\n",
        "import numpy as np\n_t = np.testing\ndef check(candidate):\n    np.testing.assert_allclose(candidate(1), 2)\n"
        "    _t.assert_array_almost_equal(candidate(1), 2)\n",
        "S = 'import numpy as np\\n'\nimport numpy as np  # real\ndef check(candidate):\n"
        "    np.testing.assert_allclose(candidate(1), 2)\n",
        "import numpy as np\nimport numpy.testing as np\ndef check(candidate):\n"
        "    np.testing.assert_allclose(candidate(1), 2)\n",
        "def check(candidate):\n    import numpy as np\n    np.testing.assert_allclose(candidate(1), 2)\n",
    ],
)
def test_a_check_reading_more_of_numpy_names_the_row(tmp_path, test):
    row = {"task_id": "HumanEval/9", "prompt": "def f(x):\n", "entry_point": "f", "test": test}
    with pytest.raises(ProblemError, match=r"rows.jsonl\[train\] row 0: the check reads numpy \(.+\) beyond"):
        read_dataset(_cfg("humaneval_plus", _jsonl(tmp_path, [row])))


@pytest.mark.slow
@run_if(bwrap=True)
def test_humaneval_plus_checks_score_in_the_sandbox(local_sandbox):
    """The sample's checks in the real sandbox (no numpy there): the references pass; an answer off by more
    than the tolerance, a wrong list and a wrong big answer fail; one within it passes. The red team's two wrong
    answers that were paid 1.0 (an extra nesting, an empty list for a number) fail."""
    from codegrpo.reward.programs import get_language
    from codegrpo.reward.scorer import Scorer

    loaded = read_dataset(_cfg("humaneval_plus")).problems
    problems = {p.id: p for p in loaded}
    scorer = Scorer(loaded, local_sandbox, get_language("python"), "binary")
    answers = {
        "HumanEval/1": [
            "    return sum(xs) / len(xs)\n",
            "    return sum(xs) / len(xs) + 1e-3\n",
            "    return sum(xs) / len(xs) + 1e-8\n",
            "    return []\n",
        ],
        "HumanEval/2": [
            "    return [x / 2 for x in xs]\n",
            "    return [x / 2 + 1e-6 for x in xs]\n",
            "    return [[x / 2] for x in xs]\n",
        ],
        "HumanEval/4": ["    return (c ** 0.5,)\n", "    return (c / 2,)\n"],
        "HumanEval/5": ["    return [i * (i + 1) // 2 for i in range(n + 1)]\n", "    return list(range(n + 1))\n"],
    }
    ids = [pid for pid, bodies in answers.items() for _ in bodies]
    completions = [f"```python\n{problems[pid].prompt}{body}```" for pid, bodies in answers.items() for body in bodies]
    rewards = [scored.verdict.reward for scored in run(scorer.score(ids, completions))]
    assert rewards == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0]
