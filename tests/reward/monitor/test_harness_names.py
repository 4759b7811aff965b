"""The harnesses' own names (codegrpo.reward.monitor.harness_names): the Python ones read from the harness and the
check helpers, the private top-level names of a program, and the JavaScript harness's names."""

from __future__ import annotations

import ast
from importlib import resources

from codegrpo.data.files import load_problems
from codegrpo.reward.monitor import static_flags
from codegrpo.reward.monitor.harness_names import (
    _JS_HARNESS_BINDINGS,
    HARNESS_NAMES,
    JS_HARNESS_GLOBALS,
    JS_HARNESS_NAMES,
    private_names,
)
from codegrpo.reward.programs import _CHECK_HELPERS

IS_PRIME = {p.id: p for p in load_problems("problems/seed.jsonl")}["is_prime"]


def test_the_harness_names_are_read_from_the_harness_itself():
    # A helper added to the harness is watched with no list to keep in step, and one renamed is no longer.
    source = resources.files("codegrpo.harness").joinpath("python_harness.py").read_text()
    helpers = {node.name for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)}
    assert {name for name in helpers if name.startswith("_")} <= HARNESS_NAMES
    assert private_names(source + "\n\ndef _new_helper():\n    pass\n") == private_names(source) | {"_new_helper"}
    assert "_send" in private_names(source) and "_send" not in private_names(source.replace("def _send(", "def send("))
    assert static_flags("def _read_exactly(fd, size):\n    return b''\n", IS_PRIME) == {"patch"}


def test_private_names_are_the_top_level_definitions_that_begin_with_an_underscore():
    source = (
        "def _f():\n    _inner = 1\nasync def _g():\n    pass\nclass _C:\n    _attr = 1\n"
        "_a = 1\n_b: int = 2\n_c += 3\n_d, _e = 4, 5\nobj._x = 6\npublic = 7\ndef f():\n    pass\n"
    )
    assert private_names(source) == {"_f", "_g", "_C", "_a", "_b", "_c"}


def test_private_names_of_a_program_without_any():
    assert private_names("") == frozenset()
    assert private_names("import os\nx = 1\nif x:\n    _hidden = 2\n") == frozenset()


def test_harness_names_hold_the_check_helpers_the_check_function_and_marshal():
    assert private_names(_CHECK_HELPERS) <= HARNESS_NAMES
    assert {"_guard", "_attempt", "_codegrpo_check", "marshal"} <= HARNESS_NAMES
    assert all(name.startswith("_") for name in HARNESS_NAMES - {"marshal"})


def test_the_javascript_harness_names():
    assert {"__report"} == JS_HARNESS_NAMES
    assert {"JSON", "process", "String"} == JS_HARNESS_GLOBALS
    assert _JS_HARNESS_BINDINGS == JS_HARNESS_NAMES | JS_HARNESS_GLOBALS
