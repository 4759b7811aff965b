"""The harnesses' own names: a completion that defines, assigns or spells one aims at the harness.

The Python names are read from the harness itself (harness/python_harness.py, and the helpers
programs.py adds to a HumanEval check program), so a function added to the harness is watched without
a list to keep in step."""

from __future__ import annotations

import ast

from codegrpo.reward.programs import _CHECK_HELPERS, _python_harness


def private_names(source: str) -> frozenset[str]:
    """The names a program defines at its top level (functions, classes, globals) that begin with "_"."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {target.id for target in targets if isinstance(target, ast.Name)}
    return frozenset(name for name in names if name.startswith("_"))


# python_harness.py's and the check helpers' names; _codegrpo_check, the function programs.py writes
# around HumanEval's checks; marshal, the module whose format the result pipe carries.
HARNESS_NAMES = private_names(_python_harness()) | private_names(_CHECK_HELPERS) | {"_codegrpo_check", "marshal"}
# programs._javascript_program's names: its report, and the globals its last lines call.
JS_HARNESS_NAMES = frozenset({"__report"})
JS_HARNESS_GLOBALS = frozenset({"JSON", "process", "String"})
_JS_HARNESS_BINDINGS = JS_HARNESS_NAMES | JS_HARNESS_GLOBALS
