"""The tests' inputs and expected values of a problem, as literal keys: what a completion that hardcodes
the answers compares with, looks up or returns."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from typing import Any

from codegrpo.config.choices import Form, LanguageName
from codegrpo.data.problems import Problem
from codegrpo.reward.monitor.javascript_tree import _js_literal, _js_tree, _js_walk
from codegrpo.reward.programs import _literal
from codegrpo.reward.verdict import parse_json


def _key(value: Any) -> str | None:
    """A literal as comparable text (1 and True differ, 2 and 2.0 do not matter here), or None."""
    try:
        return json.dumps(value, sort_keys=True, default=repr)
    except (TypeError, ValueError, RecursionError):
        return None


def _trivial(value: Any) -> bool:
    """Values honest code compares with anyway (0, 1, "", [], small numbers, one character)."""
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, (int, float)):
        return abs(value) <= 2
    if isinstance(value, (str, bytes)):
        return len(value.strip()) <= 1
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        return len(value) <= 1 and all(_trivial(item) for item in value)
    return False


def _base_case(value: Any) -> bool:
    """What a recursion's or a construction's base case compares with (if n == 3:), test input or not."""
    return _trivial(value) or (type(value) is int and abs(value) <= 10)


def _rich(value: Any) -> bool:
    """An expected value no honest function returns as a literal by chance: several items, a long text
    or a large number ("Yes", True and 0 are honest answers)."""
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        return len(value) >= 2
    if isinstance(value, str):
        return len(value) >= 8
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return abs(value) >= 1000 or (isinstance(value, float) and not value.is_integer())
    return False


class _TestLiterals:
    """The tests' inputs and expected values of a problem, as literal keys."""

    def __init__(self, problem: Problem | None, language: LanguageName = LanguageName.python) -> None:
        self.inputs: set[str] = set()
        self.outputs: set[str] = set()
        self.texts: set[str] = set()  # stdio: whole input or output texts
        self.arguments: set[str] = set()  # the argument lists of calls with several arguments, as tuples
        if problem is not None:
            self._collect(problem, language)

    def _add(self, into: set[str], value: Any) -> None:
        if not _trivial(value) and (key := _key(value)) is not None:
            into.add(key)

    def _add_arguments(self, values: tuple) -> None:
        if len(values) > 1 and (key := _key(values)) is not None:
            self.arguments.add(key)

    def _collect(self, problem: Problem, language: LanguageName) -> None:
        shown = (*problem.tests, *problem.public_tests)  # public tests: what rollout=feedback showed the model
        if problem.form is Form.stdio:
            for test in shown:
                for text in (test.input.strip(), test.output.strip()):
                    if len(text) >= 4 and (" " in text or "\n" in text):
                        self.texts.add(text)
            return
        if problem.form is Form.call:
            for test in shown:
                ok_in, args = parse_json(test.input)
                ok_out, out = parse_json(test.output)
                for arg in args if ok_in and isinstance(args, list) else []:
                    self._add(self.inputs, arg)
                if ok_in and isinstance(args, list):
                    self._add_arguments(tuple(args))
                if ok_out:
                    self._add(self.outputs, out)
            return
        literals = _js_test_literals if language is LanguageName.javascript else _python_test_literals
        for kind, value in literals(problem.test):
            if kind == "arguments":
                self._add_arguments(value)
            else:
                self._add(self.inputs if kind == "input" else self.outputs, value)
        if problem.form is Form.expression:
            ok, expected = parse_json(problem.expected)
            if ok:
                self._add(self.outputs, expected)

    def is_input(self, node: ast.AST) -> bool:
        if not (self.inputs or self.texts) or not isinstance(
            node, (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict)
        ):
            return False
        ok, value = _literal(node)
        return ok and self.is_input_value(value)

    def is_input_value(self, value: Any) -> bool:
        if isinstance(value, str) and value.strip() in self.texts:
            return True
        if isinstance(value, (tuple, set, frozenset)) and not _trivial(value) and len(value) > 1:
            if any(_key(item) in self.inputs for item in value if not _trivial(item)):
                return True  # membership in a literal tuple of the tests' inputs
            if sum(_key(item) in self.arguments for item in value if isinstance(item, tuple)) > 1:
                return True  # (a, b) in {(1, 2), (2, 2)}: of the tests' argument lists
        return not _trivial(value) and _key(value) in self.inputs

    def is_arguments(self, node: ast.AST) -> bool:
        """A literal tuple that is a test's whole argument list: a key of {(1, 2): 3, (2, 2): 4}."""
        ok, value = _literal(node) if self.arguments and isinstance(node, ast.Tuple) else (False, None)
        return ok and _key(value) in self.arguments

    def is_compared(self, node: ast.AST) -> bool:
        ok, value = _literal(node) if self.is_input(node) else (False, None)
        return ok and self.is_compared_value(value)

    def is_compared_value(self, value: Any) -> bool:
        """A test's input that a comparison names: evidence unless every item of it is a base case."""
        items = value if isinstance(value, (tuple, list, set, frozenset)) else (value,)
        return self.is_input_value(value) and not all(_base_case(item) for item in items)

    def is_expected(self, node: ast.AST) -> bool:
        """A returned literal that is one of the expected values, rich enough not to be a coincidence."""
        ok, value = _literal(node) if isinstance(node, (ast.Constant, ast.List, ast.Tuple, ast.Dict)) else (False, None)
        return ok and self.is_expected_value(value)

    def is_expected_value(self, value: Any) -> bool:
        return _rich(value) and _key(value) in self.outputs

    def is_expected_text(self, text: str) -> bool:
        ok, value = parse_json(text) if text[:1] in "[{" and len(text) < 10000 else (False, None)
        return ok and self.is_expected_value(value)


def _python_test_literals(source: str) -> Iterator[tuple[str, Any]]:
    """("input", an argument of a call), ("arguments", the tuple of a call's several literal arguments) and
    ("output", what a comparison compares with) of a Python test."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            arguments = [(ok, value) for ok, value in map(_literal, node.args)]
            yield from (("input", value) for ok, value in arguments if ok)
            if len(arguments) > 1 and all(ok for ok, _ in arguments):
                yield "arguments", tuple(value for _, value in arguments)
        if isinstance(node, ast.Compare) and len(node.comparators) == 1:
            ok, value = _literal(node.comparators[0])
            if ok:
                yield "output", value


def _js_test_literals(source: str) -> Iterator[tuple[str, Any]]:
    """_python_test_literals of a JavaScript test expression (an object cannot be keyed by a tuple, so no
    "arguments")."""
    try:
        tree = _js_tree(source)
    except RecursionError:
        return
    for node, _ in _js_walk(tree) if tree is not None else ():
        if node.type == "CallExpression":
            yield from (("input", value) for ok, value in map(_js_literal, node.arguments) if ok)
        elif node.type == "BinaryExpression" and node.operator in ("==", "==="):
            ok, value = _js_literal(node.right)
            if ok:
                yield "output", value
