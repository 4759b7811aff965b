"""The public code-RL datasets, read in their own schemas: apps, taco, code_contests, livecodebench,
deepcoder, verifiable_coding (``problems.loader``).

Each loader maps one row of its dataset into a record for ``problems.parse_problem`` (the stdio or call
form), or says why the row cannot be used; unusable rows are skipped and counted on stderr, never
silently. Rows load through ``datasets.load_dataset(hub_path, hub_name, split=hub_split,
data_files=...)``: from the Hub by default, or from a local copy with ``problems.hub_path=json`` (or
``parquet``, ``arrow``) and ``problems.data_files=FILE`` in the dataset's own schema. A row that is
malformed (an ``input_output`` that is not JSON, tests that do not pair up) stops loading with a
one-line ProblemError naming the row, as does a missing data file or a dataset whose columns are not
the group's. The filters papers apply afterwards (``max_tests``, ``min_tests``, duplicate prompts) are
``problems.filter_problems``; the release-date window (``problems.after`` / ``before``) is applied here,
where the dates are.
"""

from __future__ import annotations

import base64
import glob
import pickletools
import re
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from codegrpo.config.choices import Loader
from codegrpo.config.schema import MAX_TIMEOUT_S, ProblemsConfig
from codegrpo.data.problems import Problem, json_value, parse_problem, resolve_path
from codegrpo.errors import ProblemError, UsageError


class Skip(Exception):
    """A row that cannot be used (no tests, no Python, ...): counted, not an error."""


@dataclass
class Row:
    """One dataset row mapped for parse_problem, with its release date when the dataset has one."""

    record: dict[str, Any]
    released: datetime | None = None


@dataclass
class Loaded:
    """The problems of a dataset and how many of its rows were skipped, by reason."""

    problems: list[Problem]
    rows: int
    skipped: Counter[str] = field(default_factory=Counter)

    def report(self) -> list[str]:
        return [f"problems: skipped {n} of {self.rows} rows ({why})" for why, n in sorted(self.skipped.items())]


# -- shared pieces of the schemas ---------------------------------------------------------------------

def _decode_json(value: Any, name: str) -> Any:
    """A column holding JSON text (or already decoded by the datasets library); None when empty."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, (str, bytes)):
        return value
    try:
        return json_value(value)
    except ValueError as error:
        raise ProblemError(f"{name} is not valid JSON ({error})") from None


def _text(value: Any) -> Any:
    """APPS/TACO stdio tests: an input or output given as a list of lines is those lines joined."""
    if isinstance(value, list) and all(isinstance(line, str) for line in value):
        return "\n".join(value)
    return value


def _is_python3(source: str) -> bool:
    """Whether ``source`` compiles as Python 3 (a Python 2 ``print x`` does not). Compiling runs nothing."""
    try:
        compile(source, "<solution>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _first_python3(solutions: Iterable[Any]) -> str:
    return next((s for s in solutions if isinstance(s, str) and s.strip() and _is_python3(s)), "")


# A number starts only where no digit or dot precedes it, so the search is linear in the text's length.
_SECONDS = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*(?:s\b|sec|second)", re.IGNORECASE)
_SECONDS_TEXT = 100  # characters: a longer field is not a time limit ("2 seconds", "1.5 s")


def _seconds(text: Any) -> float | None:
    """A time limit written as text ("2 seconds", "1.5 s") in seconds, or None."""
    match = _SECONDS.search(text) if isinstance(text, str) and len(text) <= _SECONDS_TEXT else None
    return float(match.group(1)) if match and float(match.group(1)) > 0 else None


def _input_output_tests(in_outs: Any, fn_name: Any, name: str) -> tuple[list[dict[str, Any]], str | None]:
    """APPS/TACO's ``{"inputs": [...], "outputs": [...], "fn_name"?}`` as tests of the stdio form, or of the
    call form when there is a fn_name. Call-based outputs are wrapped in a one-element list in most rows
    (APPS's harness accepts ``output == expected`` or ``output == expected[0]``): a problem whose every
    output is a one-element list is unwrapped, any other keeps its outputs as they are."""
    if not isinstance(in_outs, dict):
        raise ProblemError(f"{name} must be a JSON object with 'inputs' and 'outputs'")
    inputs, outputs = in_outs.get("inputs"), in_outs.get("outputs")
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
        raise ProblemError(f"{name} must hold two lists 'inputs' and 'outputs' of the same length")
    fn_name = fn_name or in_outs.get("fn_name")
    if not inputs:
        raise Skip("no tests")
    if not fn_name:
        return [{"input": _text(i), "output": _text(o)} for i, o in zip(inputs, outputs, strict=True)], None
    if all(isinstance(o, list) and len(o) == 1 for o in outputs):
        outputs = [o[0] for o in outputs]
    return [{"input": i, "output": o} for i, o in zip(inputs, outputs, strict=True)], str(fn_name)


def _functional_arguments(text: Any, name: str) -> list[Any]:
    """LiveCodeBench's functional input: one JSON value per line, the arguments in order."""
    if not isinstance(text, str):
        raise ProblemError(f"{name}: a functional test's input must be JSON lines")
    try:
        return [json_value(line) for line in text.split("\n")]
    except ValueError as error:
        raise ProblemError(f"{name}: a functional test's input is not JSON lines ({error})") from None


def _lcb_tests(cases: Any, fn_name: Any, name: str) -> tuple[list[dict[str, Any]], str | None]:
    """LiveCodeBench's ``[{"input", "output", "testtype": "stdin" | "functional"}]`` as stdio or call tests."""
    if not isinstance(cases, list) or not all(isinstance(c, dict) and {"input", "output"} <= c.keys() for c in cases):
        raise ProblemError(f"{name} must be a list of objects with 'input' and 'output'")
    functional = [c.get("testtype") == "functional" for c in cases]
    if any(functional) and not all(functional):
        raise ProblemError(f"{name} mixes stdin and functional tests")
    if not cases:
        raise Skip("no tests")
    if not functional[0]:
        return [{"input": c["input"], "output": c["output"]} for c in cases], None
    if not fn_name:
        raise ProblemError(f"{name}: functional tests need metadata.func_name")
    tests = []
    for number, case in enumerate(cases):
        try:
            expected = json_value(case["output"])
        except (TypeError, ValueError) as error:
            raise ProblemError(f"{name}[{number}]: the output is not JSON ({error})") from None
        tests.append({"input": _functional_arguments(case["input"], f"{name}[{number}]"), "output": expected})
    return tests, str(fn_name)


# A row's private tests decompress to at most this; a larger set is skipped, not read. The host then holds
# about three times as much for a moment (the bytes, the string, the JSON's values).
MAX_DECOMPRESSED = 256 << 20
# What a pickled string is made of: its protocol and frame, one string or bytes opcode, perhaps the memo
# entry pickle.dumps adds, and STOP. Any other opcode (a class or function reference, the way a pickle runs
# code; a stack or memo opcode, the way a small pickle builds a huge object) is refused before it acts.
_PICKLED_STRING = frozenset({"UNICODE", "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8",
                             "SHORT_BINBYTES", "BINBYTES", "BINBYTES8"})
_PICKLE_FRAMING = frozenset({"PROTO", "FRAME", "MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT", "STOP"})


def decode_private_tests(value: Any, name: str) -> Any:
    """LiveCodeBench's private_test_cases: JSON text, or base64 of zlib of a pickled JSON string (how
    code_generation_lite ships most of them). The pickle is never unpickled: its one string is read by
    pickletools.genops, which builds nothing, after every opcode is checked; the JSON inside is then decoded."""
    if not isinstance(value, str):
        return value
    decoded = _decode_json_or_none(value)
    if decoded is not None:
        return decoded
    try:
        packed = base64.b64decode(value.encode("ascii"), validate=True)
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, MAX_DECOMPRESSED)
        if inflater.unconsumed_tail:
            raise Skip(f"private tests over {MAX_DECOMPRESSED >> 20} MiB")
        text = _pickled_string(raw)
    except (ValueError, UnicodeEncodeError, zlib.error) as error:
        raise ProblemError(f"{name} is neither JSON nor base64-zlib-pickle ({error})") from None
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return _decode_json(text, name)


def _pickled_string(raw: bytes) -> str | bytes:
    strings = []
    for number, (opcode, value, _) in enumerate(pickletools.genops(raw)):
        if opcode.name in _PICKLED_STRING and not strings:
            strings.append(value)
        elif opcode.name not in _PICKLE_FRAMING or number > 5:
            raise ValueError(f"refused pickle opcode {opcode.name}: a pickled string has no other")
    if not strings:
        raise ValueError("the pickle holds no string")
    return strings[0]


def _decode_json_or_none(value: str) -> Any:
    try:
        return json_value(value)
    except ValueError:
        return None


def _naive_utc(moment: datetime) -> datetime:
    """Dates with and without a zone compare: a zoned one becomes UTC without its zone."""
    return moment if moment.tzinfo is None else moment.astimezone(UTC).replace(tzinfo=None)


def _date(value: Any, name: str) -> datetime:
    try:
        return _naive_utc(value if isinstance(value, datetime) else datetime.fromisoformat(str(value)))
    except ValueError:
        raise ProblemError(f"{name} is not an ISO date: {value!r}") from None


def _fenced_code(text: str) -> str:
    """open-r1's gold_standard_solution is a ```python block; the code inside it."""
    match = re.search(r"```[A-Za-z0-9_+-]*\n(.*?)```", text, re.DOTALL)
    return match.group(1) if match else text


# -- one mapper per dataset -------------------------------------------------------------------------

def map_apps(row: Mapping[str, Any], number: int, where: str) -> Row:
    """codeparrot/apps: question, solutions (JSON list), input_output (JSON, fn_name for call-based
    rows), starter_code, problem_id."""
    in_outs = _decode_json(row["input_output"], f"{where}: input_output")
    if in_outs is None:
        raise Skip("no tests")
    tests, fn_name = _input_output_tests(in_outs, None, f"{where}: input_output")
    solutions = _decode_json(row["solutions"], f"{where}: solutions") or []
    problem_id = row.get("problem_id", row.get("id", number))
    return Row(_io_record(f"apps/{problem_id}", row["question"], tests, fn_name, row.get("starter_code"),
                          _first_python3(solutions), "apps"))


def map_taco(row: Mapping[str, Any], number: int, where: str) -> Row:
    """BAAI/TACO: the APPS schema (no id column) with a time_limit such as "2 seconds"."""
    in_outs = _decode_json(row["input_output"], f"{where}: input_output")
    if in_outs is None:
        raise Skip("no tests")
    tests, fn_name = _input_output_tests(in_outs, None, f"{where}: input_output")
    solutions = _decode_json(row["solutions"], f"{where}: solutions") or []
    record = _io_record(f"taco/{number}", row["question"], tests, fn_name, row.get("starter_code"),
                        _first_python3(solutions), "apps")  # TACO's testing_util runs APPS's imports
    return Row(record | _timeout(_seconds(row.get("time_limit"))))


_CODE_CONTESTS_PYTHON3 = 3  # solutions.language: UNKNOWN_LANGUAGE 0, PYTHON (2) 1, CPP 2, PYTHON3 3, JAVA 4


def map_code_contests(row: Mapping[str, Any], number: int, where: str) -> Row:
    """deepmind/code_contests: public, private and generated tests ({"input": [...], "output": [...]}),
    the first Python 3 solution as reference, the row's time_limit ({"seconds", "nanos"})."""
    if row.get("input_file") or row.get("output_file"):
        raise Skip("reads a file, not stdin")
    tests = []
    for column in ("public_tests", "private_tests", "generated_tests"):
        given = row.get(column) or {"input": [], "output": []}
        inputs, outputs = given.get("input") or [], given.get("output") or []
        if len(inputs) != len(outputs):
            raise ProblemError(f"{where}: {column} has {len(inputs)} inputs and {len(outputs)} outputs")
        tests += [{"input": i, "output": o} for i, o in zip(inputs, outputs, strict=True)]
    if not tests:
        raise Skip("no tests")
    solutions = row.get("solutions") or {}
    python3 = [s for lang, s in zip(solutions.get("language") or [], solutions.get("solution") or [], strict=False)
               if lang == _CODE_CONTESTS_PYTHON3]
    limit = row.get("time_limit") or {}
    seconds = (limit.get("seconds") or 0) + (limit.get("nanos") or 0) / 1e9
    record = _io_record(f"code_contests/{row['name']}", row["description"], tests, None, None,
                        _first_python3(python3), "")  # its grader runs the program as it is
    return Row(record | _timeout(seconds or None))


def map_livecodebench(row: Mapping[str, Any], number: int, where: str) -> Row:
    """livecodebench/code_generation_lite: question_content, public and private test cases (stdin or
    functional), LeetCode's class Solution starter code, metadata.func_name, contest_date."""
    metadata = _decode_json(row.get("metadata"), f"{where}: metadata") or {}
    public = _decode_json(row["public_test_cases"], f"{where}: public_test_cases") or []
    private = row.get("private_test_cases")
    private = decode_private_tests(private, f"{where}: private_test_cases") if private else []
    if not isinstance(public, list) or not isinstance(private, list):
        raise ProblemError(f"{where}: public_test_cases and private_test_cases must be JSON lists")
    tests, fn_name = _lcb_tests(public + private, metadata.get("func_name"), f"{where}: test cases")
    record = _io_record(f"livecodebench/{row['question_id']}", row["question_content"], tests, fn_name,
                        row.get("starter_code"), "", "livecodebench")
    return Row(record, _date(row["contest_date"], f"{where}: contest_date"))


def map_deepcoder(row: Mapping[str, Any], number: int, where: str) -> Row:
    """agentica-org/DeepCoder-Preview-Dataset: problem and tests (JSON), in one of its sources' shapes:
    TACO's {"inputs", "outputs", "fn_name"?} (taco), LiveCodeBench's [{"input", "output", "testtype"}]
    with metadata.func_name (lcbv5), or [{"input", "output", "type"?, "fn_name"?}] (primeintellect,
    codeforces), whose fn_name rows follow TACO's call convention."""
    given = _decode_json(row["tests"], f"{where}: tests")
    metadata = _decode_json(row.get("metadata"), f"{where}: metadata") or {}
    if given is None or given == []:
        raise Skip("no tests")
    # rLLM grades lcbv5 rows with LiveCodeBench's grader and the other sources with TACO's.
    preamble = "apps"
    if isinstance(given, dict):
        tests, fn_name = _input_output_tests(given, None, f"{where}: tests")
    elif isinstance(given, list) and given and isinstance(given[0], dict) and given[0].get("fn_name"):
        in_outs = {"inputs": [t.get("input") for t in given], "outputs": [t.get("output") for t in given]}
        tests, fn_name = _input_output_tests(in_outs, given[0]["fn_name"], f"{where}: tests")
    else:
        tests, fn_name = _lcb_tests(given, metadata.get("func_name"), f"{where}: tests")
        if given[0].get("testtype") in ("stdin", "functional"):  # LiveCodeBench's own test types
            preamble = "livecodebench"
    return Row(_io_record(f"deepcoder/{number}", row["problem"], tests, fn_name, row.get("starter_code"), "",
                          preamble))


def map_verifiable_coding(row: Mapping[str, Any], number: int, where: str) -> Row:
    """open-r1/verifiable-coding-problems-python: problem_statement, verification_info ({"language",
    "test_cases": [{"input", "output", "type", "fn_name"}]}), gold_standard_solution (a ```python block),
    metadata.time_limit."""
    info = _decode_json(row["verification_info"], f"{where}: verification_info")
    if not isinstance(info, dict):
        raise ProblemError(f"{where}: verification_info must be an object with 'test_cases'")
    if str(info.get("language", "python")).lower() != "python":
        raise Skip("not Python")
    cases = info.get("test_cases") or []
    if not cases:
        raise Skip("no tests")
    if any(case.get("type", "stdin_stdout") != "stdin_stdout" or case.get("fn_name") for case in cases):
        raise Skip("function-call tests (their argument encoding is not documented)")
    tests = [{"input": case.get("input"), "output": case.get("output")} for case in cases]
    metadata = _decode_json(row.get("metadata"), f"{where}: metadata") or {}
    prompt = row.get("problem_statement", row.get("prompt"))
    record = _io_record(f"verifiable_coding/{row.get('problem_id', number)}", prompt, tests, None, None,
                        _fenced_code(row.get("gold_standard_solution") or ""), "")  # open-r1 runs `python3 -c code`
    return Row(record | _timeout(_seconds(metadata.get("time_limit"))))


def _io_record(problem_id: str, prompt: Any, tests: list[dict[str, Any]], fn_name: str | None,
               starter_code: Any, reference: str, preamble: str) -> dict[str, Any]:
    """A record for parse_problem; ``preamble`` names the imports the dataset's own grader runs first."""
    record: dict[str, Any] = {"id": problem_id, "prompt": prompt, "tests": tests, "language": "python"}
    if fn_name:
        record["fn_name"] = fn_name
        record["starter_code"] = starter_code or ""
    if reference:
        record["reference"] = reference
    if preamble:
        record["preamble"] = preamble
    return record


def _timeout(seconds: float | None) -> dict[str, float]:
    """A row's time limit, cut to MAX_TIMEOUT_S (parse_problem refuses one that is not above 0)."""
    return {"timeout_s": min(seconds, MAX_TIMEOUT_S)} if seconds else {}


@dataclass(frozen=True)
class Schema:
    mapper: Callable[[Mapping[str, Any], int, str], Row]
    columns: tuple[str, ...]  # the columns the mapper needs: a dataset without them is not this group's
    dated: bool = False  # rows carry a release date (problems.after / before)


SCHEMAS = {
    Loader.apps: Schema(map_apps, ("question", "solutions", "input_output")),
    Loader.taco: Schema(map_taco, ("question", "solutions", "input_output")),
    Loader.code_contests: Schema(map_code_contests, ("name", "description", "public_tests", "private_tests",
                                                "generated_tests", "solutions")),
    Loader.livecodebench: Schema(map_livecodebench, ("question_id", "question_content", "public_test_cases",
                                                "contest_date"), dated=True),
    Loader.deepcoder: Schema(map_deepcoder, ("problem", "tests")),
    Loader.verifiable_coding: Schema(map_verifiable_coding, ("verification_info",)),
}


# -- loading ------------------------------------------------------------------------------------------

def _window(cfg: ProblemsConfig) -> tuple[datetime | None, datetime | None]:
    bounds = []
    for key in ("after", "before"):
        value = getattr(cfg, key)
        try:
            bounds.append(_naive_utc(datetime.fromisoformat(str(value))) if value else None)
        except ValueError:
            raise UsageError(f"problems.{key}={value!r} is not an ISO date (YYYY-MM-DD)") from None
    return bounds[0], bounds[1]


def _data_files(cfg: ProblemsConfig) -> dict[str, str] | None:
    """data_files under the configured split's name (so hub_split works for local files too); a local
    path that does not exist is an error here, before the datasets library starts."""
    if not cfg.data_files:
        return None
    files = cfg.data_files
    if "://" not in files:
        local = resolve_path(files)
        if not (glob.glob(str(local)) if glob.has_magic(str(local)) else local.exists()):
            raise ProblemError(f"problems.data_files: {local} does not exist")
        files = str(local)
    return {cfg.hub_split: files}


def read_dataset(cfg: ProblemsConfig) -> Loaded:
    """Every usable row of the dataset ``cfg.loader`` names, as validated problems, and the skip counts."""
    if cfg.loader not in SCHEMAS:  # Hydra refuses a misspelt loader at compose time; a script's config may not
        raise UsageError(f"problems.loader={cfg.loader!r} is not one of {', '.join(SCHEMAS)}")
    schema = SCHEMAS[cfg.loader]
    after, before = _window(cfg)
    if (after or before) and not schema.dated:
        raise UsageError(f"problems.after/before: {cfg.loader} rows have no release date (livecodebench does)")
    data_files = _data_files(cfg)
    from datasets import load_dataset

    source = cfg.data_files or cfg.hub_path
    try:
        rows = load_dataset(cfg.hub_path, cfg.hub_name, split=cfg.hub_split, data_files=data_files)
    except Exception as error:  # the datasets library raises many kinds; all mean "cannot load"
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ProblemError(f"cannot load dataset {source!r} (split {cfg.hub_split!r}): {first_line}") from None
    missing = [column for column in schema.columns if column not in rows.column_names]
    if missing:
        raise ProblemError(f"dataset {source!r} has no column {', '.join(missing)} that problems.loader="
                           f"{cfg.loader} reads (its columns: {', '.join(rows.column_names)})")
    loaded = Loaded([], rows=len(rows))
    seen: set[str] = set()
    for number, row in enumerate(rows):
        where = f"{source}[{cfg.hub_split}] row {number}"
        try:
            mapped = schema.mapper(row, number, where)
        except Skip as why:
            loaded.skipped[str(why)] += 1
            continue
        except (TypeError, AttributeError, KeyError, IndexError) as error:  # a value of a shape the schema has not
            raise ProblemError(f"{where}: a malformed row ({type(error).__name__}: {error})") from None
        released = mapped.released
        if released is not None and ((after and released < after) or (before and released >= before)):
            loaded.skipped["outside the release-date window"] += 1
            continue
        problem = parse_problem(mapped.record, where)
        if problem.id in seen:
            loaded.skipped["duplicate id"] += 1
            continue
        seen.add(problem.id)
        loaded.problems.append(problem)
    return loaded


def load(cfg: ProblemsConfig) -> list[Problem]:
    """The problems of ``cfg.loader``'s dataset; the rows skipped, by reason, are reported on stderr."""
    loaded = read_dataset(cfg)
    for line in loaded.report():
        print(line, file=sys.stderr)
    if not loaded.problems:
        raise ProblemError(f"dataset {cfg.data_files or cfg.hub_path!r} has no usable rows "
                           f"({', '.join(f'{n} {why}' for why, n in loaded.skipped.items()) or 'it is empty'})")
    return loaded.problems
