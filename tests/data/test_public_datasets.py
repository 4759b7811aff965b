"""Loading the public code-RL datasets (codegrpo.data.public_datasets): every sample file (tests/data/code_datasets,
written by its make_samples.py, each in its dataset's own schema) offline through the datasets library, the skip
counts, the release-date window, the data files, the errors naming the row; and the sets, prompts and
experiments built on them. Each dataset's own mapping is tested in tests/data/public_datasets/."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import replace

import pytest

from codegrpo.config.problem_set import ProblemsConfig
from codegrpo.data.prompts import build_messages, messages_for
from codegrpo.data.public_datasets import FILE_BUILDERS, SCHEMAS, Loaded, load, read_dataset
from codegrpo.errors import ProblemError, UsageError
from codegrpo.resources import PROJECT_ROOT
from tests.helpers.public_datasets import DATA, SAMPLES, by_id, dataset_cfg, jsonl_file, one_line, taco_row


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
    loaded = read_dataset(dataset_cfg(loader))
    assert len(loaded.problems) == problems
    assert dict(loaded.skipped) == skipped
    assert loaded.rows == problems + sum(skipped.values())
    if loader == "humaneval_plus":  # HumanEval's form: one check over every input
        assert all(p.form == "humaneval" and "def check(candidate)" in p.test for p in loaded.problems)
    else:
        assert all(p.form in ("stdio", "call") and p.tests for p in loaded.problems)


def test_a_local_file_with_a_hub_dataset_named_is_one_line_before_the_hub(tmp_path):
    """It went to the Hub five times (26 s) before an error that never named problems.hub_path=json."""
    cfg = dataset_cfg("humaneval_plus", hub_path="evalplus/humanevalplus")
    with pytest.raises(UsageError, match=r"is a local file, and problems\.hub_path=evalplus/humanevalplus names"):
        read_dataset(cfg)


def test_livecodebench_date_window():
    later = read_dataset(dataset_cfg("livecodebench", after="2024-08-01"))
    assert [p.id for p in later.problems] == [
        "livecodebench/abc360_a",
        "livecodebench/1990A",
        "livecodebench/abc370_a",
        "livecodebench/abc380_a",
    ]
    assert later.skipped["outside the release-date window"] == 8
    window = read_dataset(dataset_cfg("livecodebench", after="2024-01-01", before="2024-06-08"))
    assert [p.id for p in window.problems] == [
        "livecodebench/1910A",
        "livecodebench/two-sum",
        "livecodebench/climbing-stairs",
    ]  # before is exclusive
    with pytest.raises(UsageError, match=r"problems\.after='last year' is not an ISO date"):
        read_dataset(dataset_cfg("livecodebench", after="last year"))
    with pytest.raises(UsageError, match="apps rows have no release date"):
        read_dataset(dataset_cfg("apps", after="2024-01-01"))


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
    assert sorted(p.id for p in single.problems) == sorted(by_id("deepcoder"))
    mix = read_dataset(replace(cfg, hub_names=["primeintellect", "taco"]))
    assert mix.rows == 2 * single.rows and mix.skipped == {"no tests": 2}
    assert sorted(p.id for p in mix.problems) == sorted(
        f"{config}/{id}" for config in ("primeintellect", "taco") for id in by_id("deepcoder")
    )
    with pytest.raises(UsageError, match="set one"):
        replace(cfg, hub_name="taco", hub_names=["taco"])
    with pytest.raises(UsageError, match=r"one problems\.data_files glob"):
        replace(cfg, hub_names=["taco"], data_files="x.parquet")


# -- bad input: one line, before anything loads ----------------------------------------------------


def test_a_stdin_test_whose_input_is_not_a_string_is_an_error(tmp_path):
    row = {
        "problem_id": 1,
        "question": "q",
        "solutions": "[]",
        "starter_code": "",
        "input_output": json.dumps({"inputs": [5], "outputs": ["5\n"]}),
    }
    with pytest.raises(ProblemError) as error:
        read_dataset(dataset_cfg("apps", jsonl_file(tmp_path, [row])))
    assert "field 'tests[0].input' must be a string (stdin/stdout form)" in one_line(error)


def test_a_data_file_that_does_not_exist(tmp_path):
    with pytest.raises(ProblemError) as error:
        read_dataset(dataset_cfg("taco", str(tmp_path / "TACO" / "train" / "*.arrow")))
    assert one_line(error).startswith("problems.data_files: ") and "does not exist" in str(error.value)


def test_a_dataset_whose_columns_are_not_the_groups():
    with pytest.raises(ProblemError) as error:
        read_dataset(dataset_cfg("apps", str(DATA / "livecodebench.jsonl")))
    assert "has no column question, solutions, input_output that problems.loader=apps reads" in one_line(error)


def test_an_unknown_loader_names_the_choices():
    with pytest.raises(UsageError, match="not one of apps, taco, code_contests, livecodebench, deepcoder"):
        read_dataset(ProblemsConfig(name="x", path="", loader="mbpp", hub_path="json"))


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
    problems = by_id("livecodebench")
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


def test_json_nested_too_deep_names_the_row_and_field(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(ProblemError) as error:
        read_dataset(dataset_cfg("taco", jsonl_file(tmp_path, [taco_row(input_output=deep)]), hub_path="json"))
    assert "row 0: input_output is not valid JSON (nested too deep)" in one_line(error)
    row = json.loads((DATA / "livecodebench.jsonl").read_text().splitlines()[0])
    with pytest.raises(ProblemError) as error:
        read_dataset(dataset_cfg("livecodebench", jsonl_file(tmp_path, [row | {"private_test_cases": deep}])))
    assert "row 0: private_test_cases is neither JSON nor base64-zlib-pickle" in one_line(error)
    with pytest.raises(ProblemError) as error:
        read_dataset(dataset_cfg("livecodebench", jsonl_file(tmp_path, [row | {"private_test_cases": "{}"}])))
    assert "row 0: public_test_cases and private_test_cases must be JSON lists" in one_line(error)


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
    assert {p.preamble for p in by_id(loader).values()} == preambles


def test_a_second_row_of_one_id_is_skipped_and_counted_never_scored_on_the_firsts_prompt(tmp_path):
    # APPS's train and test splits both number their problems from 0: a file of both repeats ids. The first
    # row is the problem, its prompt with its own tests (problems=hub, which has no such rows, refuses a repeat).
    rows = [
        taco_row(problem_id=0),
        taco_row(
            problem_id=0, question="Print a * b.", input_output=json.dumps({"inputs": ["2 3\n"], "outputs": ["6\n"]})
        ),
    ]
    loaded = read_dataset(dataset_cfg("apps", jsonl_file(tmp_path, rows), hub_path="json"))
    [problem] = loaded.problems
    assert (problem.id, problem.prompt, problem.tests[0].output) == ("apps/0", "Print a + b.", "3\n")
    assert loaded.report() == ["problems: skipped 1 of 2 rows (duplicate id)"]


# -- the loading's own pieces --------------------------------------------------------------------------------


def _lcb_row(question_id: str, contest_date: str) -> dict:
    row = json.loads((DATA / "livecodebench.jsonl").read_text().splitlines()[0])
    return row | {"question_id": question_id, "contest_date": contest_date}


def test_the_report_says_each_reason_once_in_order_of_the_reason():
    loaded = Loaded([], rows=9, skipped=Counter({"not Python": 1, "duplicate id": 3}))
    assert loaded.report() == [
        "problems: skipped 3 of 9 rows (duplicate id)",
        "problems: skipped 1 of 9 rows (not Python)",
    ]
    assert Loaded([], rows=0).report() == []


def test_load_reports_the_skipped_rows_on_stderr_and_returns_the_problems(capsys):
    problems = load(dataset_cfg("apps"))
    assert len(problems) == 11 and capsys.readouterr().err == "problems: skipped 2 of 13 rows (no tests)\n"


def test_load_refuses_a_dataset_without_a_usable_row_saying_why_each_was_skipped(tmp_path):
    rows = [taco_row(input_output="", problem_id=n) for n in range(2)]
    with pytest.raises(ProblemError, match=r"has no usable rows \(2 no tests\)$"):
        load(dataset_cfg("apps", jsonl_file(tmp_path, rows), hub_path="json"))


def test_the_window_keeps_a_row_released_on_after_and_drops_one_released_on_before(tmp_path):
    rows = [_lcb_row(f"d{day}", f"2024-03-0{day}T00:00:00") for day in range(1, 5)]
    loaded = read_dataset(
        dataset_cfg("livecodebench", jsonl_file(tmp_path, rows), after="2024-03-02", before="2024-03-04")
    )
    assert [p.id for p in loaded.problems] == ["livecodebench/d2", "livecodebench/d3"]
    assert loaded.skipped == {"outside the release-date window": 2}
    only_before = read_dataset(dataset_cfg("livecodebench", jsonl_file(tmp_path, rows), before="2024-03-02"))
    assert [p.id for p in only_before.problems] == ["livecodebench/d1"]


def test_a_zoned_bound_is_read_in_utc(tmp_path):
    rows = [_lcb_row("early", "2024-03-01T22:30:00"), _lcb_row("late", "2024-03-01T23:30:00")]
    cfg = dataset_cfg("livecodebench", jsonl_file(tmp_path, rows), after="2024-03-02T01:00:00+02:00")  # 23:00 UTC
    assert [p.id for p in read_dataset(cfg).problems] == ["livecodebench/late"]


def test_a_row_without_a_release_date_is_skipped_under_a_window_and_kept_without_one(tmp_path):
    row = {
        "task_id": "t",
        "entry_point": "Solution().f",
        "completion": "class Solution:\n    def f(self, x):\n        return x\n",
        "test": "def check(candidate):\n    assert candidate(x = 1) == 1\n",
    }
    dated = row | {"task_id": "dated", "estimated_date": "2024-05-01T00:00:00"}
    path = jsonl_file(tmp_path, [row, dated])
    assert len(read_dataset(dataset_cfg("leetcode", path)).problems) == 2
    windowed = read_dataset(dataset_cfg("leetcode", path, before="2025-01-01"))
    assert [p.id for p in windowed.problems] == ["leetcode/dated"]
    assert windowed.skipped == {"no release date, with a release-date window": 1}


@pytest.mark.parametrize("key", ["after", "before"])
def test_a_bound_that_is_not_an_iso_date_names_its_key(key):
    with pytest.raises(UsageError, match=rf"^problems\.{key}='soon' is not an ISO date \(YYYY-MM-DD\)$"):
        read_dataset(dataset_cfg("livecodebench", **{key: "soon"}))


def test_only_livecodebench_and_leetcode_rows_are_dated():
    assert {str(loader) for loader, schema in SCHEMAS.items() if schema.dated} == {"livecodebench", "leetcode"}
    with pytest.raises(UsageError, match=r"^problems\.after/before: deepcoder rows have no release date"):
        read_dataset(dataset_cfg("deepcoder", before="2024-01-01"))


def test_a_glob_of_local_files_loads_under_the_configured_split(tmp_path):
    for part in ("a", "b"):
        shutil.copy(DATA / "apps.jsonl", tmp_path / f"apps-{part}.jsonl")
    loaded = read_dataset(dataset_cfg("apps", str(tmp_path / "apps-*.jsonl"), hub_split="test"))
    assert loaded.rows == 26 and loaded.skipped["duplicate id"] == 11  # the second file's ids repeat the first's
    with pytest.raises(ProblemError, match=r"^problems\.data_files: .*nothing-\*\.jsonl does not exist$"):
        read_dataset(dataset_cfg("apps", str(tmp_path / "nothing-*.jsonl")))


def test_a_local_file_is_read_by_any_file_builder_and_the_refusal_names_them():
    for builder in sorted(FILE_BUILDERS - {"json"}):  # handed to the datasets library, which finds other columns
        with pytest.raises(ProblemError):
            read_dataset(dataset_cfg("apps", hub_path=builder))
    with pytest.raises(UsageError, match=r"add problems\.hub_path=json \(or arrow, csv, parquet, text\) to read it$"):
        read_dataset(dataset_cfg("apps", hub_path="codeparrot/apps"))


def test_a_dataset_that_cannot_load_names_it_and_a_remote_one_suggests_a_local_copy(tmp_path):
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    with pytest.raises(ProblemError) as error:
        read_dataset(dataset_cfg("apps", str(tmp_path / "bad.jsonl"), hub_path="json"))
    assert one_line(error).startswith(f"cannot load dataset '{tmp_path / 'bad.jsonl'}' (split 'train'): ")
    assert "problems.data_files=FILE" not in str(error.value)
    remote = dataset_cfg("apps", f"file://{tmp_path / 'nothing.jsonl'}", hub_path="json")
    with pytest.raises(ProblemError) as error:
        read_dataset(remote)
    assert one_line(error).endswith("(or a local copy in its own schema: problems.data_files=FILE)")


def test_a_row_of_a_shape_the_mapper_did_not_expect_names_the_row_and_the_error(tmp_path):
    row = {
        "name": "1_A",
        "description": "Sum.",
        "public_tests": {"input": ["1\n"], "output": ["1\n"]},
        "private_tests": None,
        "generated_tests": None,
        "solutions": None,
    }
    for tests, kind in ((5, "AttributeError"), ({"input": 5, "output": 5}, "TypeError")):
        path = jsonl_file(tmp_path, [row, row | {"name": "2_A", "public_tests": tests}])
        with pytest.raises(ProblemError) as error:
            read_dataset(dataset_cfg("code_contests", path, hub_path="json"))
        assert f"rows.jsonl[train] row 1: a malformed row ({kind}: " in one_line(error)
