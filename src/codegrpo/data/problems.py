"""Problem sets: load, validate, filter and write back (the TRL dataset is built in build.py)."""

from __future__ import annotations

import ast
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any

from codegrpo.config.choices import Form, LanguageName
from codegrpo.config.values import MAX_TIMEOUT_S
from codegrpo.errors import ProblemError

EXPRESSION_FIELDS = ("id", "prompt", "test", "expected")
HUMANEVAL_FIELDS = ("task_id", "prompt", "test", "entry_point")
OPTIONAL_FIELDS: dict[str, type | tuple[type, ...]] = {
    "reference": str,
    "canonical_solution": str,
    "timeout_s": (int, float),
    "language": str,
    "starter_code": str,
    "preamble": str,
    "difficulty": str,
    "released": str,
}
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
    "string",
    "re",
    "datetime",
    "collections",
    "heapq",
    "bisect",
    "copy",
    "math",
    "random",
    "statistics",
    "itertools",
    "functools",
    "operator",
    "io",
    "sys",
    "json",
)
_LIVECODEBENCH = (  # lcb_runner's import_string, line for line
    "".join(f"from {name} import *\n" for name in [*_LCB_MODULES, "builtins", "typing"])
    + "".join(f"import {name}\n" for name in _LCB_MODULES)
    + "sys.setrecursionlimit(50000)\n"
)
# What LeetCode's judge imports for a solution: LeetCodeDataset's prompt field (its v0.3 files; v1/v2 import a
# subset), without the ListNode and TreeNode helpers that only the rows its loader skips need.
_LEETCODE = (
    "".join(f"import {name}\n" for name in ("random", "functools", "collections", "string", "math", "datetime"))
    + "".join(
        f"from {name} import *\n"
        for name in ("typing", "functools", "collections", "itertools", "heapq", "bisect", "string", "operator", "math")
    )
    + "inf = float('inf')\n"
)
PREAMBLES = {
    "apps": {Form.stdio: _APPS + "stdin = sys.stdin\nstdout = sys.stdout\n", Form.call: _APPS},
    "livecodebench": {Form.stdio: _LIVECODEBENCH, Form.call: _LIVECODEBENCH},
    "leetcode": {Form.stdio: _LEETCODE, Form.call: _LEETCODE},
}


@dataclass(frozen=True)
class IOTest:
    """One test of an input/output problem. stdio: the text fed to stdin and the text to print. call: the
    arguments (a JSON list) and the return value, as JSON text."""

    input: str
    output: str


@dataclass(frozen=True)
class Problem:
    """One problem: its prompt and its tests, in one of the forms (``Form``); read from a problem file or a
    dataset by ``parse_problem``."""

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
    # stdio and call forms: the tests the model may see (rollout=feedback; codegrpo.data.public_tests), a subset
    # of ``tests`` or tests of their own; the reward scores the others.
    public_tests: tuple[IOTest, ...] = ()
    # What a benchmark's protocol reads (LiveCodeBench's): its difficulty (easy, medium, hard) and release date.
    difficulty: str = ""
    released: str = ""  # ISO date, YYYY-MM-DD

    def __post_init__(self) -> None:
        object.__setattr__(self, "form", Form(self.form))  # a problem file's "stdio" is Form.stdio


def _require_str(record: dict[str, Any], key: str, where: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or (key != "prompt" and not value.strip()):
        raise ProblemError(f"{where}: field {key!r} must be a non-empty string")
    return value


def parse_problem(record: Any, where: str, language: str | None = None) -> Problem:
    """Validate one decoded JSONL record. Raises ProblemError naming ``where`` and the field.

    A Python problem's ``test`` is compiled here (``compile_error``), so a test that cannot run fails when the
    set loads, not hours later in a batch; ``language`` (problems.language) is the scoring language of a
    record without its own ``language``: a JavaScript test expression is left to node."""
    if not isinstance(record, dict):
        raise ProblemError(f"{where}: expected a JSON object")
    for key, kinds in OPTIONAL_FIELDS.items():
        if key in record and record[key] is not None and not isinstance(record[key], kinds):
            raise ProblemError(f"{where}: field {key!r} has the wrong type")
    timeout = record.get("timeout_s")
    # NaN, infinity, 0 or -1 would stop the sandbox's worker or fail every completion as infra.
    if timeout is not None and (isinstance(timeout, bool) or not 0 < timeout <= MAX_TIMEOUT_S):
        raise ProblemError(
            f"{where}: field 'timeout_s' must be a number of seconds above 0 and at most "
            f"{MAX_TIMEOUT_S:g}, not {timeout!r}"
        )
    preamble = record.get("preamble") or ""
    if preamble and (preamble not in PREAMBLES or "tests" not in record):
        raise ProblemError(
            f"{where}: field 'preamble' must be one of {', '.join(PREAMBLES)}, on a stdin/stdout or call-form problem"
        )
    extras: dict[str, Any] = {
        "reference": record.get("reference") or record.get("canonical_solution") or "",
        "timeout_s": timeout,
        "language": record.get("language"),
        "preamble": preamble,
        "difficulty": (record.get("difficulty") or "").strip().lower(),
        "released": _iso_date(record.get("released"), where),
    }
    if "tests" in record:
        return _parse_io_problem(record, where, extras)
    if record.get("public_tests"):
        raise ProblemError(f"{where}: field 'public_tests' is for stdin/stdout and call-form problems (with 'tests')")
    if "task_id" in record or "entry_point" in record:
        fields = {key: _require_str(record, key, where) for key in HUMANEVAL_FIELDS}
        _check_test(fields["task_id"], fields["test"], Form.humaneval, record.get("language") or language, where)
        return Problem(
            id=fields["task_id"],
            prompt=fields["prompt"],
            test=fields["test"],
            form=Form.humaneval,
            entry_point=fields["entry_point"],
            **extras,
        )
    fields = {key: _require_str(record, key, where) for key in EXPRESSION_FIELDS}
    _check_test(fields["id"], fields["test"], Form.expression, record.get("language") or language, where)
    try:
        json_value(fields["expected"])
    except ValueError as error:
        raise ProblemError(f"{where}: field 'expected' is not valid JSON text ({error})") from None
    return Problem(
        id=fields["id"],
        prompt=fields["prompt"],
        test=fields["test"],
        form=Form.expression,
        expected=fields["expected"],
        **extras,
    )


def _iso_date(value: str | None, where: str) -> str:
    """A record's release date as YYYY-MM-DD ("" for none); anything else is a ProblemError naming the field."""
    if not value:
        return ""
    try:
        return date.fromisoformat(value[:10]).isoformat()
    except ValueError:
        raise ProblemError(f"{where}: field 'released' must be an ISO date (YYYY-MM-DD), not {value!r}") from None


def _check_test(problem_id: str, test: str, form: Form, language: str | None, where: str) -> None:
    if (language or LanguageName.python) == LanguageName.python and (why := compile_error(test, form)) is not None:
        raise ProblemError(f"{where}: problem {problem_id!r}: field 'test' {why}")


def compile_error(test: str, form: Form) -> str | None:
    """Why a Python problem's ``test`` cannot run, or None: it is compiled as the harness compiles it (the
    HumanEval form's check code with ``exec``, the expression form's expression with ``eval``), and the
    check code must define check(candidate). Compiling runs nothing; each test is compiled once, at load."""
    try:
        tree = ast.parse(test, "test", "exec") if form is Form.humaneval else ast.parse(test, "test", "eval")
        compile(tree, "test", "exec" if form is Form.humaneval else "eval", dont_inherit=True)  # 'return' outside
    except SyntaxError as error:
        line = f"line {error.lineno}: " if error.lineno else ""
        return f"does not parse as Python ({line}{error.msg})"
    except (RecursionError, MemoryError):
        return "does not parse as Python (nested too deep)"
    except ValueError as error:  # a NUL character, on some Pythons
        return f"does not parse as Python ({error})"
    if isinstance(tree, ast.Module):
        check = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None)
        if check is None or not check.args.args:
            return "does not define check(candidate)"
    return None


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
                parsed.append(IOTest(json_text(given), json_text(wanted)))
            except ValueError as error:
                raise ProblemError(f"{where}: field {field_name!r} is not JSON data ({error})") from None
            continue
        for key, value in (("input", given), ("output", wanted)):
            if not isinstance(value, str):
                raise ProblemError(f"{where}: field '{field_name}.{key}' must be a string (stdin/stdout form)")
        parsed.append(IOTest(given, wanted))
    return Problem(
        id=problem_id,
        prompt=prompt,
        test="",
        form=Form.call if call else Form.stdio,
        tests=tuple(parsed),
        fn_name=record.get("fn_name", ""),
        starter_code=record.get("starter_code") or "",
        public_tests=_public_tests(record, where, extras),
        **extras,
    )


def _public_tests(record: dict[str, Any], where: str, extras: dict[str, Any]) -> tuple[IOTest, ...]:
    """A record's ``public_tests``, shaped and checked like its ``tests`` (none: ())."""
    if not record.get("public_tests"):
        return ()
    shown = {key: value for key, value in record.items() if key != "public_tests"} | {"tests": record["public_tests"]}
    try:
        return _parse_io_problem(shown, where, extras).tests
    except ProblemError as error:
        raise ProblemError(str(error).replace("field 'tests", "field 'public_tests")) from None


def to_record(problem: Problem) -> dict[str, Any]:
    """The JSONL record ``parse_problem`` reads back as ``problem`` (a filtered set written by validate)."""
    extras = {
        "reference": problem.reference,
        "timeout_s": problem.timeout_s,
        "language": problem.language,
        "preamble": problem.preamble,
        "difficulty": problem.difficulty,
        "released": problem.released,
    }
    if problem.form.per_test:
        call = problem.form is Form.call
        value = json.loads if call else str
        tests = [{"input": value(t.input), "output": value(t.output)} for t in problem.tests]
        record = {"id": problem.id, "prompt": problem.prompt, "tests": tests}
        if problem.public_tests:
            record["public_tests"] = [
                {"input": value(t.input), "output": value(t.output)} for t in problem.public_tests
            ]
        if call:
            record |= {"fn_name": problem.fn_name, "starter_code": problem.starter_code}
    elif problem.form is Form.humaneval:
        record = {"task_id": problem.id, "prompt": problem.prompt, "test": problem.test}
        record["entry_point"] = problem.entry_point
    else:
        record = {"id": problem.id, "prompt": problem.prompt, "test": problem.test, "expected": problem.expected}
    return record | {key: value for key, value in extras.items() if value}


def json_value(text: str | bytes) -> Any:
    """json.loads, where nesting too deep is a ValueError like any other malformed text (json raises
    RecursionError: file contents are hostile input)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deep") from None


def json_text(value: Any, *, sort_keys: bool = False, default: Callable[[Any], Any] | None = None) -> str:
    """``value`` as the JSON text a problem holds for an expected value or a call's arguments (the scorer
    decodes it with json.loads); what JSON cannot encode is a ValueError saying why, in one line: bytes or
    another type JSON has no form for, an int too long to write (over sys.get_int_max_str_digits() digits),
    nesting too deep (json raises TypeError, ValueError and RecursionError for these)."""
    try:
        return json.dumps(value, sort_keys=sort_keys, default=default)
    except RecursionError:
        raise ValueError("nested too deep") from None
    except TypeError as error:
        raise ValueError(str(error)) from None
    except ValueError as error:
        if "integer string conversion" in str(error):
            raise ValueError(f"an integer of more than {sys.get_int_max_str_digits()} digits") from None
        raise ValueError(str(error).splitlines()[0]) from None
