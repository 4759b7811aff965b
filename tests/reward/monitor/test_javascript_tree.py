"""esprima's tree (codegrpo.reward.monitor.javascript_tree): parsing a script else a module, walking every node
with whether it declares a name, and reading literals, keys and module names from the tree."""

from __future__ import annotations

import pytest

from codegrpo.reward.monitor.javascript_tree import _js_key, _js_literal, _js_module, _js_number, _js_tree, _js_walk


def _value(source: str):
    """The tree of the expression ``source`` (the right side of an assignment)."""
    return _js_tree(f"x = {source};").body[0].expression.right


def _identifiers(source: str) -> dict[str, bool]:
    return {node.name: binding for node, binding in _js_walk(_js_tree(source)) if node.type == "Identifier"}


def test_a_script_is_parsed_as_a_script_and_else_as_a_module():
    assert _js_tree("var a = 1;").sourceType == "script"
    assert _js_tree("let let = 1;").sourceType == "module"  # refused as a script, taken as a module


@pytest.mark.parametrize("source", ["const u = import.meta.url;", "await f();", "function (", "x = ;"])
def test_text_neither_parses_is_no_tree(source):
    assert _js_tree(source) is None


def test_the_walk_marks_declared_names_as_bindings():
    assert _identifiers("function k(m) { return n; }") == {"k": True, "m": True, "n": False}
    assert _identifiers("const { a: b, ...c } = d;") == {"b": True, "c": True, "d": False}
    assert _identifiers("let [e = f] = g;") == {"e": True, "f": False, "g": False}


def test_the_walk_skips_names_that_are_not_references():
    # The b of a.b and of {b: 1} is a name; a[c] and {[d]: 1} refer to c and d.
    assert _identifiers("a.b; o = { e: 1 };") == {"a": False, "o": False}
    assert _identifiers("a[c]; o = { [d]: 1 };") == {"a": False, "c": False, "o": False, "d": False}
    assert _identifiers("function f() { return new.target; }") == {"f": True}


def test_the_walk_visits_every_node_once():
    nodes = [node for node, _ in _js_walk(_js_tree("f(1, [2, 3]);"))]
    assert sorted(node.type for node in nodes) == sorted(
        ["Program", "ExpressionStatement", "CallExpression", "Identifier"] + ["Literal"] * 3 + ["ArrayExpression"]
    )


def test_a_module_name_drops_node_and_a_subpath():
    assert _js_module("node:fs") == "fs"
    assert _js_module("fs/promises") == "fs"
    assert _js_module("node:fs/promises") == "fs"
    assert _js_module("child_process") == "child_process"
    assert _js_module(None) == "None"


def test_an_integral_number_is_an_int():
    assert _js_number(97.0) == 97 and type(_js_number(97.0)) is int
    assert _js_number(2.5) == 2.5 and _js_number("97") == "97" and _js_number(True) is True


def test_a_key_is_an_identifiers_name_or_a_literals_value():
    [a, b, c] = _value("{ a: 1, 'b': 2, 3.0: 3 }").properties
    assert (_js_key(a.key), _js_key(b.key), _js_key(c.key)) == ("a", "b", 3)
    assert _js_key(_value("/re/")) is None
    assert _js_key(_value("f()")) is None


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ("97", 97),
        ("97.0", 97),
        ("2.5", 2.5),
        ("-3", -3),
        ("-(-2)", 2),
        ("'text'", "text"),
        ("`plain`", "plain"),
        ("null", None),
        ("true", True),
        ("[1, [2, 'a']]", [1, [2, "a"]]),
        ("{ a: 1, 'b': [2], 3: null }", {"a": 1, "b": [2], "3": None}),
    ],
)
def test_literal_values(source, value):
    assert _js_literal(_value(source)) == (True, value)


@pytest.mark.parametrize(
    "source", ["/x/", "`a${b}`", "-'a'", "-true", "[1, x]", "{ [a]: 1 }", "{ a() {} }", "{ get a() { return 1; } }",
               "{ ...a }", "{ a }", "+1", "f()", "x"],
)  # fmt: skip
def test_what_is_not_a_literal(source):
    assert _js_literal(_value(source)) == (False, None)


def test_no_node_is_no_literal():
    assert _js_literal(None) == (False, None)
