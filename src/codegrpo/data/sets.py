"""Problem sets: the configured set loaded (a file, the Hub, or a public dataset's loader), split, filtered and
hashed, so a run records exactly which problems it trained on."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import sys
from collections.abc import Iterable
from typing import Protocol, TypeVar

from codegrpo.config.choices import Loader, Split, TestSelection
from codegrpo.config.problem_set import ProblemsConfig
from codegrpo.config.sandbox import SandboxConfig
from codegrpo.data import public_datasets
from codegrpo.data.files import load_problems
from codegrpo.data.problems import MAX_TESTS, IOTest, Problem, parse_problem
from codegrpo.data.public_tests import is_shown
from codegrpo.errors import ProblemError, UsageError


class _Identified(Protocol):
    @property
    def id(self) -> str: ...


Item = TypeVar("Item", bound=_Identified)


def select_split(problems: list[Item], split: Split, eval_fraction: float) -> list[Item]:
    """A split that depends on each problem's (or task's) id alone, so it never changes as a set grows."""
    try:
        split = Split(split)  # a config built without OmegaConf may hold the name
    except ValueError:
        raise ProblemError(f"problems.split must be all, train or eval, not {split!r}") from None
    if split is Split.all:
        return problems

    def in_eval(problem: Item) -> bool:
        return int(hashlib.sha256(problem.id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < eval_fraction

    chosen = [p for p in problems if in_eval(p) == (split is Split.eval)]
    if not chosen:
        raise ProblemError(f"the {split} split is empty (problems.eval_fraction={eval_fraction})")
    return chosen


def _checks_from_asserts(asserts: list[str], reference: str, where: str) -> dict[str, str]:
    """MBPP-style rows: a list of asserts and a solution become a HumanEval-form check and entry point."""
    match = re.search(r"^def\s+(\w+)\s*\(", reference, re.MULTILINE)
    if match is None or not asserts:
        raise ProblemError(f"{where}: needs a reference with a def and a non-empty list of asserts")
    body = "".join(f"    {line}\n" for line in asserts)
    return {"test": f"def check(candidate):\n{body}", "entry_point": match.group(1)}


def load_hub_problems(cfg: ProblemsConfig) -> list[Problem]:
    """Problems from a Hugging Face dataset (or a local json/parquet through data_files), mapped by cfg.columns."""
    from datasets import load_dataset

    try:
        rows = load_dataset(cfg.hub_path, cfg.hub_name, split=cfg.hub_split, data_files=cfg.data_files)
    except Exception as error:  # the datasets library raises many kinds; all mean "cannot load"
        raise ProblemError(f"cannot load dataset {cfg.hub_path!r} (split {cfg.hub_split!r}): {error}") from None
    problems = []
    seen: dict[str, str] = {}
    for number, row in enumerate(rows):
        where = f"{cfg.hub_path}[{cfg.hub_split}] row {number}"
        record = {field: row[column] for field, column in cfg.columns.items() if column in row}
        if cfg.assert_list_column:
            record |= _checks_from_asserts(list(row[cfg.assert_list_column]), record.get("reference", ""), where)
        if "id" in record:
            record["task_id" if "entry_point" in record else "id"] = str(record.pop("id"))
        problem = parse_problem(record, where, cfg.language)
        # The Scorer knows a problem by its id: a second row of one id would score the first's prompt on its tests.
        if problem.id in seen:
            raise ProblemError(f"{where}: duplicate id {problem.id!r} (first at {seen[problem.id]})")
        seen[problem.id] = where
        problems.append(problem)
    return problems


def filter_problems(problems: list[Problem], cfg: ProblemsConfig) -> list[Problem]:
    """The filters papers apply, each counted on stderr: duplicate prompts dropped (``dedupe_prompts``),
    at most ``max_tests`` hidden tests kept (``test_selection``; the public ones besides), input/output
    problems with fewer than ``min_tests`` tests dropped (DeepCoder keeps >= 5)."""
    kept, seen, dropped = [], set(), {"duplicate prompt": 0, f"fewer than {cfg.min_tests} tests": 0}
    for problem in problems:
        if cfg.dedupe_prompts and problem.prompt in seen:
            dropped["duplicate prompt"] += 1
            continue
        seen.add(problem.prompt)
        if problem.form.per_test:
            if len(problem.tests) < cfg.min_tests:
                dropped[f"fewer than {cfg.min_tests} tests"] += 1
                continue
            if cfg.max_tests and len(problem.tests) > cfg.max_tests:
                problem = dataclasses.replace(problem, tests=_keep_tests(problem, cfg))
        kept.append(problem)
    for why, count in dropped.items():
        if count:
            print(f"problems: dropped {count} of {len(problems)} ({why})", file=sys.stderr)
    if not kept:
        counts = ", ".join(f"{count} {why}" for why, count in dropped.items())
        raise ProblemError(f"problems: none left after the filters ({counts})")
    too_many = [p.id for p in kept if len(p.tests) > MAX_TESTS]
    if too_many:
        names = ", ".join(too_many[:10]) + (f" and {len(too_many) - 10} more" if len(too_many) > 10 else "")
        raise ProblemError(
            f"problems: more than {MAX_TESTS} tests, which one sandbox request cannot carry, in "
            f"{names}: set problems.max_tests to at most {MAX_TESTS}"
        )
    cap = SandboxConfig.stdout_limit_bytes
    if oversize := oversize_outputs(kept, cap):
        print(
            f"problems: warning: {len(oversize)} of {len(kept)} problems expect more output in a test than the "
            f"default sandbox.stdout_limit_bytes ({cap}): no program passes it (codegrpo-validate names them)",
            file=sys.stderr,
        )
    return kept


def oversize_outputs(problems: Iterable[Problem], cap: int) -> list[tuple[Problem, int, int]]:
    """(problem, test number from 1, bytes) of each input/output problem's first test whose expected output
    is over ``cap`` bytes (sandbox.stdout_limit_bytes): the sandbox cuts any program that prints or returns
    that much, so no program passes the test."""
    found = []
    for problem in problems:
        for number, test in enumerate(problem.tests, start=1):
            size = len(test.output) if test.output.isascii() else len(test.output.encode("utf-8", "surrogatepass"))
            if size > cap:
                found.append((problem, number, size))
                break
    return found


def _keep_tests(problem: Problem, cfg: ProblemsConfig) -> tuple[IOTest, ...]:
    """``max_tests`` of the tests that score (the hidden ones: rollout=feedback shows the public ones and
    scores the rest), chosen by ``test_selection``, and the public tests among ``tests`` besides, so a cap
    never leaves a problem with nothing hidden; in the dataset's order."""
    tests, shown = problem.tests, is_shown(problem)
    scored = [i for i, test in enumerate(tests) if not shown(test)] or list(range(len(tests)))
    if cfg.test_selection in (TestSelection.shortest, TestSelection.longest):
        longest = cfg.test_selection == TestSelection.longest
        scored = sorted(scored, key=lambda i: len(tests[i].input), reverse=longest)
    keep = set(scored[: cfg.max_tests]) | {i for i, test in enumerate(tests) if shown(test)}
    return tuple(tests[i] for i in sorted(keep))


def load_problem_set(cfg: ProblemsConfig) -> list[Problem]:
    """The configured problems: a file or a dataset, then the filters, the split and the limit."""
    if cfg.loader is Loader.repo_tasks:
        raise UsageError(
            f"problems={cfg.name} is a folder of repository tasks, for agents: train on it with rollout=tools"
        )
    if cfg.loader:  # a public code-RL dataset in its own schema (apps, taco, ...)
        problems = public_datasets.load(cfg)
    else:
        problems = load_hub_problems(cfg) if cfg.hub_path else load_problems(cfg.path, language=cfg.language)
    problems = filter_problems(problems, cfg)
    chosen = select_split(problems, cfg.split, cfg.eval_fraction)
    return chosen[: cfg.limit] if cfg.limit else chosen


def problem_set_hash(problems: Iterable[Problem]) -> str:
    """A stable hash of a problem set's content, for the run's reproducibility record."""
    digest = hashlib.sha256()
    for problem in problems:
        fields = dataclasses.asdict(problem)
        for later in ("preamble", "public_tests", "difficulty", "released"):
            if not fields[later]:
                del fields[later]  # added later: a set without one keeps its hash, so resume takes older checkpoints
        digest.update(json.dumps(fields, sort_keys=True).encode())
    return digest.hexdigest()
