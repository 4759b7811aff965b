"""newfacade/LeetCodeDataset (arXiv 2504.14655; Code-R1's 2K LeetCode problems are its v1 and v2 train files):
human-eval rows whose ``test`` is ``check(candidate)`` with one ``assert candidate(k=v, ...) == value`` per test
and whose ``entry_point`` is ``Solution().method``. Each row becomes a call-form problem: a test per assert,
calling class Solution's method with the arguments in its signature's order, the expected value kept on the
host. Both layouts load: v1/v2's (``query`` and ``difficulty`` under ``meta``) and v0.3's (at the top level,
with ``problem_description``, ``starter_code`` and ``estimated_date``, which problems.after/before window).

The imports LeetCode's judge provides (the dataset's ``prompt`` field) run first: PREAMBLES["leetcode"]. A row
whose checks are anything else (a linked list or tree built by the prompt's helpers, a comparison other than
==, a value that is not JSON) is skipped and counted: the call form's values cross as JSON."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

from codegrpo.data.public_datasets.rows import Row, Skip, _date, _first_public, _io_record

_METHOD = re.compile(r"\s*Solution\(\)\.([A-Za-z_]\w*)\s*")
NOT_VALUES = "checks other than candidate(...) == value on JSON values (linked lists, trees, ...)"
# A field parsed on the host is at most this long: ast.parse takes hundreds of times a text's size in memory.
MAX_FIELD_CHARS = 1 << 20
TOO_DEEP = (SyntaxError, ValueError, RecursionError, MemoryError)  # what parsing a hostile field may raise


def _parameters(source: str, method: str) -> list[str] | None:
    """The parameters of class Solution's ``method`` in ``source`` (a solution, or starter code whose body is
    missing), without self; None where it is not there."""
    for text in (source, source.rstrip() + "\n        pass\n"):
        try:
            tree = ast.parse(text)
        except TOO_DEEP:
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == "Solution":
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name == method:
                        names = [a.arg for a in [*item.args.posonlyargs, *item.args.args]]
                        return names[1:]
    return None


def _value(node: ast.expr) -> Any:
    """A literal's value, if it is JSON's (lists, not tuples; finite numbers); else Skip."""
    try:
        value = ast.literal_eval(node)
        text = json.dumps(value, allow_nan=False)
    except (*TOO_DEEP, TypeError):
        raise Skip(NOT_VALUES) from None
    if json.loads(text) != value:  # a tuple, a dict with keys that are not strings: not what JSON brings back
        raise Skip(NOT_VALUES)
    return value


def _tests(test: str, parameters: list[str]) -> list[dict[str, Any]]:
    """One call-form test per assert of check(candidate), its arguments in ``parameters``' order."""
    try:
        tree = ast.parse(test)
    except TOO_DEEP:
        raise Skip("its test does not compile") from None
    check = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None)
    if check is None or len(check.args.args) != 1:
        raise Skip("no check(candidate)")
    candidate = check.args.args[0].arg
    tests = []
    for statement in check.body:
        if not (
            isinstance(statement, ast.Assert)
            and isinstance(statement.test, ast.Compare)
            and len(statement.test.ops) == 1
            and isinstance(statement.test.ops[0], ast.Eq)
            and isinstance(call := statement.test.left, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == candidate
        ):
            raise Skip(NOT_VALUES)
        if len(call.args) > len(parameters):
            raise Skip("a check passes more arguments than the method takes")
        given = {name: _value(arg) for name, arg in zip(parameters, call.args, strict=False)}
        for keyword in call.keywords:
            if keyword.arg not in parameters or keyword.arg in given:
                raise Skip("a check names an argument the method does not take")
            given[keyword.arg] = _value(keyword.value)
        if set(given) != set(parameters):
            raise Skip("a check leaves out an argument")
        tests.append({"input": [given[name] for name in parameters], "output": _value(statement.test.comparators[0])})
    if all(test["output"] is None for test in tests):  # the check cannot see what an in-place method did
        raise Skip("every expected value is None (an in-place method)")
    return tests


def map_leetcode(row: Mapping[str, Any], number: int, where: str) -> Row:
    """newfacade/LeetCodeDataset: task_id, entry_point (Solution().method), test (check(candidate)), the query
    or problem_description with starter_code, the reference completion, difficulty and estimated_date."""
    meta = row.get("meta") or {}
    method = _METHOD.fullmatch(str(row["entry_point"]))
    if method is None:
        raise Skip("the entry point is not a method of class Solution")
    fn_name = method.group(1)
    reference = row.get("completion") or ""
    starter = row.get("starter_code") or ""
    if any(len(str(text)) > MAX_FIELD_CHARS for text in (reference, starter, row["test"])):
        raise Skip(f"a test, completion or starter code over {MAX_FIELD_CHARS >> 20} MiB")
    parameters = _parameters(reference, fn_name) or _parameters(starter, fn_name)
    if parameters is None:
        raise Skip("no signature of the method (in the completion or the starter code)")
    tests = _tests(str(row["test"]), parameters)
    # v0.3 splits the query into the description and the starter code; v1/v2's query holds both.
    description = row.get("problem_description") if starter else None
    prompt = description or row.get("query") or meta.get("query") or ""
    record = _io_record(
        f"leetcode/{row['task_id']}", prompt, tests, fn_name, starter if description else "", reference, "leetcode"
    )
    record |= _first_public(tests)
    difficulty = row.get("difficulty") or meta.get("difficulty")
    if difficulty:
        record["difficulty"] = str(difficulty)
    released = _date(row["estimated_date"], f"{where}: estimated_date") if row.get("estimated_date") else None
    if released is not None:
        record["released"] = released.date().isoformat()
    return Row(record, released)
