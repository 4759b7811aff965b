"""esprima's tree of a JavaScript program: parsing (esprima imported on the first use), walking without
recursion, and reading literals, keys and module names from it."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

# The fields of a node that declare a name rather than refer to one, and the patterns that destructure.
_JS_BINDINGS = frozenset({"id", "params", "param", "label", "local", "imported", "exported"})
_JS_PATTERNS = frozenset({"ObjectPattern", "ArrayPattern", "RestElement", "AssignmentPattern", "Property"})


@cache
def _esprima() -> Any:
    """esprima, imported on the first JavaScript completion (0.75 s). Its import lists every code point
    by Unicode category to build its identifier sets and keeps the lists (75 MB): they are emptied."""
    import esprima  # type: ignore[import-untyped]
    from esprima import character

    getattr(character, "U_CATEGORIES", {}).clear()
    return esprima


def _js_tree(source: str) -> Any | None:
    """The program's tree (a script, else an ES module), or None. RecursionError propagates."""
    esprima = _esprima()
    for parse in (esprima.parseScript, esprima.parseModule):
        try:
            return parse(source, tolerant=True)
        except RecursionError:
            raise
        except Exception:  # esprima.Error, or whatever else hostile text makes a pure-Python parser raise
            continue
    return None


def _js_walk(tree: Any) -> Iterator[tuple[Any, bool]]:
    """Every node, and whether it is a binding (a declared name, not a reference); without recursion, so
    a tree as deep as the parser allowed costs no stack here."""
    stack = [(tree, False)]
    while stack:
        node, binding = stack.pop()
        yield node, binding
        for field, value in vars(node).items():
            if (field in ("key", "property") and not node.computed) or node.type == "MetaProperty":
                continue  # the b of a.b and of {b: 1} is a name, not a reference
            inner = field in _JS_BINDINGS or (binding and node.type in _JS_PATTERNS and field not in ("right", "key"))
            for item in value if isinstance(value, list) else (value,):
                if isinstance(getattr(item, "type", None), str):
                    stack.append((item, inner))


def _js_module(name: Any) -> str:
    return str(name).removeprefix("node:").partition("/")[0]  # node:fs and fs/promises are fs


def _js_number(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value  # 97 and 97.0 are one


def _js_key(node: Any) -> Any:
    """A non-computed property key as a value (an identifier is its name), or None."""
    if node.type == "Identifier":
        return node.name
    return _js_number(node.value) if node.type == "Literal" and node.regex is None else None


def _js_literal(node: Any) -> tuple[bool, Any]:
    """The value of a JavaScript literal (numbers, strings, booleans, null, arrays and objects of them)."""
    kind = node.type if node is not None else None
    if kind == "Literal" and node.regex is None:
        return True, _js_number(node.value)
    if kind == "TemplateLiteral" and not node.expressions:
        return node.quasis[0].value.cooked is not None, node.quasis[0].value.cooked
    if kind == "UnaryExpression" and node.operator == "-":
        ok, value = _js_literal(node.argument)
        return (True, -value) if ok and type(value) in (int, float) else (False, None)
    if kind == "ArrayExpression":
        items = [_js_literal(item) for item in node.elements]
        return (True, [value for _, value in items]) if all(ok for ok, _ in items) else (False, None)
    if kind == "ObjectExpression":
        found = {}
        for item in node.properties:
            ok, value = (
                _js_literal(item.value)
                if item.type == "Property" and item.kind == "init" and not (item.computed or item.method)
                else (False, None)
            )
            if not ok or (key := _js_key(item.key)) is None:
                return False, None
            found[str(key)] = value
        return True, found
    return False, None
