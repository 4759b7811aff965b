"""Problem sets: load, validate, filter and write back (the TRL dataset is built in build.py)."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import importlib.util
import json
import re
import sys
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codegrpo import resources
from codegrpo.config.choices import Form, TestSelection
from codegrpo.config.schema import MAX_TIMEOUT_S, ProblemsConfig, SandboxConfig
from codegrpo.errors import ProblemError

EXPRESSION_FIELDS = ("id", "prompt", "test", "expected")
HUMANEVAL_FIELDS = ("task_id", "prompt", "test", "entry_point")
OPTIONAL_FIELDS = {
    "reference": str, "canonical_solution": str, "timeout_s": (int, float), "language": str, "starter_code": str,
    "preamble": str,
}  # fmt: skip
# A sandbox request carries each test's input size: 10,000 of them (sizes up to 100 MB) fit the local
# sandbox's socket, whose messages stop at 208 KiB by default, with the call form's harness beside them.
MAX_TESTS = 10_000

# The imports each dataset's own grader runs before a completion, by name, for the stdio and call forms:
# the names a completion may use there without importing them (docs/reward-design.md). APPS's testing_util
# (which TACO's and rLLM's copy) also has `import numpy as np`, left out: the sandbox hides third-party packages.
_APPS = (
    "import sys\nimport time\nimport itertools\nfrom itertools import accumulate, product, permutations, combinations\n"
    "import collections\nfrom collections import Counter, OrderedDict, deque, defaultdict, ChainMap\n"
    "from functools import lru_cache\nimport math\n"
    "from math import sqrt, sin, cos, tan, ceil, fabs, floor, gcd, exp, log, log2\nimport fractions\n"
    "from typing import List, Tuple\nimport random\nimport heapq\nfrom heapq import *\n"
)
_LCB_MODULES = (
    "string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random", "statistics", "itertools",
    "functools", "operator", "io", "sys", "json",
)
_LIVECODEBENCH = (  # lcb_runner's import_string, line for line
    "".join(f"from {name} import *\n" for name in [*_LCB_MODULES, "builtins", "typing"])
    + "".join(f"import {name}\n" for name in _LCB_MODULES) + "sys.setrecursionlimit(50000)\n"
)
PREAMBLES = {
    "apps": {Form.stdio: _APPS + "stdin = sys.stdin\nstdout = sys.stdout\n", Form.call: _APPS},
    "livecodebench": {Form.stdio: _LIVECODEBENCH, Form.call: _LIVECODEBENCH},
}


@dataclass(frozen=True)
class IOTest:
    """One test of an input/output problem. stdio: the text fed to stdin and the text to print. call: the
    arguments (a JSON list) and the return value, as JSON text."""

    input: str
    output: str


@dataclass(frozen=True)
class Problem:
    id: str
    prompt: str
    test: str
    form: Form
    expected: str = ""  # JSON text of the test's value (expression form)
    entry_point: str = ""  # the function under test (HumanEval form)
    reference: str = ""
    timeout_s: float | None = None  # per program; per test for the stdio and call forms
    language: str | None = None
    tests: tuple[IOTest, ...] = ()  # stdio and call forms
    fn_name: str = ""  # call form: the function (or a method of class Solution) each test calls
    starter_code: str = ""  # call form: the signature the prompt shows (LeetCode's class Solution)
    preamble: str = ""  # stdio and call forms: a key of PREAMBLES, the imports run before the completion

    def __post_init__(self) -> None:
        object.__setattr__(self, "form", Form(self.form))  # a problem file's "stdio" is Form.stdio


def resolve_path(path: str) -> Path:
    """A problem file: ``pkg://package/relative/path`` inside an installed package, or a file path
    (relative paths are taken from the project root, so any working directory works)."""
    if path.startswith("pkg://"):
        package, _, relative = path[len("pkg://") :].partition("/")
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise ProblemError(f"problem file {path}: package {package!r} is not installed (pip install it)")
        return Path(next(iter(spec.submodule_search_locations))) / relative
    candidate = Path(path).expanduser()
    return candidate if candidate.is_absolute() else resources.project_path(candidate)


def _read_lines(path: Path) -> Iterable[bytes]:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle:
            yield from handle
    except (OSError, EOFError, zlib.error) as error:  # a truncated or corrupt .gz among them
        raise ProblemError(f"{path}: cannot be read ({error})") from None


def json_value(text: str | bytes) -> Any:
    """json.loads, where nesting too deep is a ValueError like any other malformed text (json raises
    RecursionError: file contents are hostile input)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deep") from None


def read_jsonl(file: Path) -> Iterator[tuple[str, Any]]:
    """(``file:line``, decoded record) for each non-blank line; a line that is not UTF-8 JSON is a ProblemError."""
    for number, raw in enumerate(_read_lines(file), start=1):
        where = f"{file}:{number}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ProblemError(f"{where}: not UTF-8 text (byte {error.start + 1} of the line)") from None
        if not line.strip():
            continue
        try:
            record = json_value(line)
        except ValueError as error:
            raise ProblemError(f"{where}: not valid JSON ({error})") from None
        yield where, record


def _require_str(record: dict[str, Any], key: str, where: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or (key != "prompt" and not value.strip()):
        raise ProblemError(f"{where}: field {key!r} must be a non-empty string")
    return value


def parse_problem(record: Any, where: str) -> Problem:
    """Validate one decoded JSONL record. Raises ProblemError naming ``where`` and the field."""
    if not isinstance(record, dict):
        raise ProblemError(f"{where}: expected a JSON object")
    for key, kinds in OPTIONAL_FIELDS.items():
        if key in record and record[key] is not None and not isinstance(record[key], kinds):
            raise ProblemError(f"{where}: field {key!r} has the wrong type")
    timeout = record.get("timeout_s")
    # NaN, infinity, 0 or -1 would stop the sandbox's worker or fail every completion as infra.
    if timeout is not None and (isinstance(timeout, bool) or not 0 < timeout <= MAX_TIMEOUT_S):
        raise ProblemError(f"{where}: field 'timeout_s' must be a number of seconds above 0 and at most "
                           f"{MAX_TIMEOUT_S:g}, not {timeout!r}")
    preamble = record.get("preamble") or ""
    if preamble and (preamble not in PREAMBLES or "tests" not in record):
        raise ProblemError(f"{where}: field 'preamble' must be one of {', '.join(PREAMBLES)}, on a stdin/stdout "
                           "or call-form problem")
    extras = {
        "reference": record.get("reference") or record.get("canonical_solution") or "",
        "timeout_s": timeout,
        "language": record.get("language"),
        "preamble": preamble,
    }
    if "tests" in record:
        return _parse_io_problem(record, where, extras)
    if "task_id" in record or "entry_point" in record:
        fields = {key: _require_str(record, key, where) for key in HUMANEVAL_FIELDS}
        return Problem(
            id=fields["task_id"], prompt=fields["prompt"], test=fields["test"], form=Form.humaneval,
            entry_point=fields["entry_point"], **extras,
        )
    fields = {key: _require_str(record, key, where) for key in EXPRESSION_FIELDS}
    try:
        json_value(fields["expected"])
    except ValueError as error:
        raise ProblemError(f"{where}: field 'expected' is not valid JSON text ({error})") from None
    return Problem(
        id=fields["id"], prompt=fields["prompt"], test=fields["test"], form=Form.expression,
        expected=fields["expected"], **extras,
    )


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _parse_io_problem(record: dict[str, Any], where: str, extras: dict[str, Any]) -> Problem:
    """The stdio form ({"tests": [{"input": str, "output": str}]}) or, with "fn_name", the call form
    (each input a list of arguments, each output a JSON value)."""
    problem_id, prompt = _require_str(record, "id", where), _require_str(record, "prompt", where)
    tests = record["tests"]
    if not isinstance(tests, list) or not tests:
        raise ProblemError(f"{where}: field 'tests' must be a non-empty list")
    call = "fn_name" in record
    if call and not (isinstance(record["fn_name"], str) and _IDENTIFIER.fullmatch(record["fn_name"])):
        raise ProblemError(f"{where}: field 'fn_name' must be a Python identifier")
    parsed = []
    for number, test in enumerate(tests):
        field_name = f"tests[{number}]"
        if not isinstance(test, dict) or not {"input", "output"} <= test.keys():
            raise ProblemError(f"{where}: field {field_name!r} must be an object with 'input' and 'output'")
        given, wanted = test["input"], test["output"]
        if call:
            if not isinstance(given, list):
                raise ProblemError(f"{where}: field '{field_name}.input' must be a list of arguments")
            try:
                parsed.append(IOTest(json.dumps(given), json.dumps(wanted)))
            except (TypeError, ValueError, RecursionError) as error:
                raise ProblemError(f"{where}: field {field_name!r} is not JSON data ({error})") from None
            continue
        for key, value in (("input", given), ("output", wanted)):
            if not isinstance(value, str):
                raise ProblemError(f"{where}: field '{field_name}.{key}' must be a string (stdin/stdout form)")
        parsed.append(IOTest(given, wanted))
    return Problem(
        id=problem_id, prompt=prompt, test="", form=Form.call if call else Form.stdio, tests=tuple(parsed),
        fn_name=record.get("fn_name", ""), starter_code=record.get("starter_code") or "", **extras,
    )


def to_record(problem: Problem) -> dict[str, Any]:
    """The JSONL record ``parse_problem`` reads back as ``problem`` (a filtered set written by validate)."""
    extras = {"reference": problem.reference, "timeout_s": problem.timeout_s, "language": problem.language,
              "preamble": problem.preamble}
    if problem.form.per_test:
        call = problem.form is Form.call
        value = json.loads if call else str
        tests = [{"input": value(t.input), "output": value(t.output)} for t in problem.tests]
        record = {"id": problem.id, "prompt": problem.prompt, "tests": tests}
        if call:
            record |= {"fn_name": problem.fn_name, "starter_code": problem.starter_code}
    elif problem.form is Form.humaneval:
        record = {"task_id": problem.id, "prompt": problem.prompt, "test": problem.test}
        record["entry_point"] = problem.entry_point
    else:
        record = {"id": problem.id, "prompt": problem.prompt, "test": problem.test, "expected": problem.expected}
    return record | {key: value for key, value in extras.items() if value}


def write_problems(problems: Iterable[Problem], path: Path) -> None:
    """A problem file of ``problems``, one JSON record a line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(to_record(p), ensure_ascii=False) + "\n" for p in problems), encoding="utf-8")


def load_problems(path: str, limit: int | None = None) -> list[Problem]:
    """Load and validate every line of a JSONL (or .jsonl.gz) problem file before anything trains."""
    file = resolve_path(path)
    if not file.is_file():
        raise ProblemError(f"problem file {file} does not exist (set problems.path)")
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for where, record in read_jsonl(file):
        problem = parse_problem(record, where)
        if problem.id in seen:
            raise ProblemError(f"{where}: duplicate id {problem.id!r} (first at {seen[problem.id]})")
        seen[problem.id] = where
        problems.append(problem)
    if not problems:
        raise ProblemError(f"problem file {file} holds no problems")
    return problems[:limit] if limit else problems


def select_split(problems: list[Problem], split: str, eval_fraction: float) -> list[Problem]:
    """A split that depends on each problem's id alone, so it never changes as a set grows."""
    if split == "all":
        return problems
    if split not in ("train", "eval"):
        raise ProblemError(f"problems.split must be all, train or eval, not {split!r}")

    def in_eval(problem: Problem) -> bool:
        return int(hashlib.sha256(problem.id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < eval_fraction

    chosen = [p for p in problems if in_eval(p) == (split == "eval")]
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
    for number, row in enumerate(rows):
        where = f"{cfg.hub_path}[{cfg.hub_split}] row {number}"
        record = {field: row[column] for field, column in cfg.columns.items() if column in row}
        if cfg.assert_list_column:
            record |= _checks_from_asserts(list(row[cfg.assert_list_column]), record.get("reference", ""), where)
        if "id" in record:
            record["task_id" if "entry_point" in record else "id"] = str(record.pop("id"))
        problems.append(parse_problem(record, where))
    return problems


def filter_problems(problems: list[Problem], cfg: ProblemsConfig) -> list[Problem]:
    """The filters papers apply, each counted on stderr: duplicate prompts dropped (``dedupe_prompts``),
    at most ``max_tests`` tests kept (``test_selection``), input/output problems with fewer than
    ``min_tests`` tests dropped (DeepCoder keeps >= 5)."""
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
                problem = dataclasses.replace(problem, tests=_keep_tests(problem.tests, cfg))
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
        raise ProblemError(f"problems: more than {MAX_TESTS} tests, which one sandbox request cannot carry, in "
                           f"{names}: set problems.max_tests to at most {MAX_TESTS}")
    cap = SandboxConfig.stdout_limit_bytes
    if oversize := oversize_outputs(kept, cap):
        print(f"problems: warning: {len(oversize)} of {len(kept)} problems expect more output in a test than the "
              f"default sandbox.stdout_limit_bytes ({cap}): no program passes it (codegrpo-validate names them)",
              file=sys.stderr)
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


def _keep_tests(tests: tuple[IOTest, ...], cfg: ProblemsConfig) -> tuple[IOTest, ...]:
    if cfg.test_selection in (TestSelection.shortest, TestSelection.longest):
        longest = cfg.test_selection == TestSelection.longest
        order = sorted(range(len(tests)), key=lambda i: len(tests[i].input), reverse=longest)[: cfg.max_tests]
        return tuple(tests[i] for i in sorted(order))  # the dataset's order among those kept
    return tests[: cfg.max_tests]


def load_problem_set(cfg: ProblemsConfig) -> list[Problem]:
    """The configured problems: a file or a dataset, then the filters, the split and the limit."""
    if cfg.loader:  # a public code-RL dataset in its own schema (apps, taco, ...)
        from codegrpo.data import public_datasets as code_datasets

        problems = code_datasets.load(cfg)
    else:
        problems = load_hub_problems(cfg) if cfg.hub_path else load_problems(cfg.path)
    problems = filter_problems(problems, cfg)
    chosen = select_split(problems, cfg.split, cfg.eval_fraction)
    return chosen[: cfg.limit] if cfg.limit else chosen


def problem_set_hash(problems: Iterable[Problem]) -> str:
    """A stable hash of a problem set's content, for the run's reproducibility record."""
    digest = hashlib.sha256()
    for problem in problems:
        fields = dataclasses.asdict(problem)
        if not problem.preamble:
            del fields["preamble"]  # added later: a set without one keeps its hash, so resume takes older checkpoints
        digest.update(json.dumps(fields, sort_keys=True).encode())
    return digest.hexdigest()
