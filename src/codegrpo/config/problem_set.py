"""The problems group: the problem set (a file, a Hub or a public dataset), its filters, split and prompts."""

from __future__ import annotations

from dataclasses import dataclass, field

from codegrpo.config.choices import LanguageName, Loader, Split, TestSelection
from codegrpo.config.values import MISSING, check_at_least, check_count
from codegrpo.errors import UsageError


@dataclass
class ProblemsConfig:
    name: str = MISSING
    path: str = MISSING  # a JSONL file; relative paths are taken from the project root
    language: LanguageName = LanguageName.python
    system_prompt: str | None = None
    # "{task}" is the problem's task text (expression form).
    prompt_template: str = "Write a Python function {task} Reply with only the code in one ```python block."
    # HumanEval-form problems: "{prompt}" is the signature and docstring to complete.
    humaneval_template: str = (
        "Complete the following Python function. Reply with the whole function in one ```python block.\n\n"
        "```python\n{prompt}```"
    )
    limit: int | None = None  # use only the first N problems (after the split)
    # A stable train/eval split by problem id: all | train | eval (eval_fraction of the ids go to eval).
    split: Split = Split.all
    eval_fraction: float = 0.2
    # problems=hub: rows of datasets.load_dataset(hub_path, hub_name, split=hub_split, data_files=data_files).
    hub_path: str | None = None
    hub_name: str | None = None
    # Several configs of hub_path read one after another, in place of hub_name (DeepCoder's mix: primeintellect,
    # taco, lcbv5); each problem's id then starts with its config's name.
    hub_names: list[str] = field(default_factory=list)
    hub_split: str = "train"
    data_files: str | None = None
    columns: dict[str, str] = field(default_factory=dict)  # problem field -> dataset column
    assert_list_column: str | None = None  # MBPP style: a column of assert statements becomes check()
    # A public code-RL dataset's own schema (codegrpo.data.public_datasets: apps, taco, code_contests,
    # livecodebench, deepcoder, verifiable_coding), read from hub_path or a local file via data_files.
    loader: Loader | None = None
    # Input/output problems (stdin and call-based): how many tests to keep and which; fewer than
    # min_tests drops the problem (DeepCoder keeps >= 5); a window on the release date (livecodebench).
    max_tests: int | None = None
    test_selection: TestSelection = TestSelection.first
    min_tests: int = 1
    dedupe_prompts: bool = True
    after: str | None = None  # ISO date: keep problems released on or after it
    before: str | None = None  # ISO date: keep problems released before it
    # stdin/stdout problems: "{prompt}" is the statement; call-based ones also fill "{fn_name}" and "{starter_code}".
    stdio_template: str = (
        "Solve this problem in Python. Read the input from standard input and print the answer to standard "
        "output. Reply with only the code in one ```python block.\n\n{prompt}"
    )
    call_template: str = (
        "Solve this problem in Python by writing the function `{fn_name}`; it is called with the arguments "
        "of each test and its return value is checked. Reply with only the code in one ```python block."
        "\n\n{prompt}\n\n{starter_code}"
    )

    def __post_init__(self) -> None:
        # A slice would take -1 as "all but the last": a count of problems or tests is at least 1.
        check_count("problems.limit", self.limit, "the first N problems; null: all")
        check_count("problems.max_tests", self.max_tests, "the tests kept of each problem; null: all")
        check_at_least("problems.min_tests", self.min_tests, 1, "a problem needs a test to be scored")
        if self.hub_names and self.hub_name:
            raise UsageError(
                f"problems.hub_name={self.hub_name!r} and problems.hub_names={list(self.hub_names)}: set one "
                "(hub_names reads several configs of the dataset, hub_name one)"
            )
        if self.hub_names and self.data_files:
            raise UsageError(
                f"problems.hub_names={list(self.hub_names)} reads configs of a Hub dataset; a local copy of "
                "several is one problems.data_files glob (e.g. '/data/DeepCoder-Preview-Dataset/*/train-*.parquet')"
            )
        if isinstance(self.eval_fraction, bool) or not 0 < self.eval_fraction < 1:
            raise UsageError(
                f"problems.eval_fraction={self.eval_fraction} must be a fraction between 0 and 1 "
                "(the share of problem ids held out for evaluation)"
            )
