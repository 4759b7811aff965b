"""livecodebench/code_generation_lite: stdin and functional tests, private tests as a compressed pickle
of one JSON string, read with pickletools and never unpickled."""

from __future__ import annotations

import base64
import contextlib
import pickletools
import zlib
from collections.abc import Mapping
from typing import Any

from codegrpo.data.problems import json_value
from codegrpo.data.public_datasets.rows import Row, Skip, _date, _decode_json, _io_record
from codegrpo.errors import ProblemError


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
_PICKLED_STRING = frozenset(
    {"UNICODE", "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "SHORT_BINBYTES", "BINBYTES", "BINBYTES8"}
)
_PICKLE_FRAMING = frozenset({"PROTO", "FRAME", "MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT", "STOP"})


def decode_private_tests(value: Any, name: str) -> Any:
    """LiveCodeBench's private_test_cases: JSON text, or base64 of zlib of a pickled JSON string (how
    code_generation_lite ships most of them). The pickle is never unpickled: its one string is read by
    pickletools.genops, which builds nothing, after every opcode is checked; the JSON inside is then decoded."""
    if not isinstance(value, str):
        return value
    with contextlib.suppress(ValueError):
        if (decoded := json_value(value)) is not None:
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
    strings: list[str | bytes] = []
    for number, (opcode, value, _) in enumerate(pickletools.genops(raw)):
        if opcode.name in _PICKLED_STRING and not strings:
            strings.append(value)  # type: ignore[arg-type]  # a string opcode's argument is its text
        elif opcode.name not in _PICKLE_FRAMING or number > 5:
            raise ValueError(f"refused pickle opcode {opcode.name}: a pickled string has no other")
    if not strings:
        raise ValueError("the pickle holds no string")
    return strings[0]


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
    record = _io_record(
        f"livecodebench/{row['question_id']}",
        row["question_content"],
        tests,
        fn_name,
        row.get("starter_code"),
        "",
        "livecodebench",
    )
    if public:  # shown to the model under rollout=feedback; the private ones are hidden
        record["public_tests"] = tests[: len(public)]
    released = _date(row["contest_date"], f"{where}: contest_date")
    record["released"] = released.date().isoformat()
    if isinstance(row.get("difficulty"), str):  # easy, medium or hard: the protocol's breakdown
        record["difficulty"] = row["difficulty"]
    return Row(record, released)
