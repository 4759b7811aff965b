"""EvalPlus's HumanEval+ (evalplus/humanevalplus on the Hub, or EvalPlus's compatible_humaneval_plus_*.jsonl):
HumanEval's 164 problems, each ``check(candidate)`` holding its base and plus inputs with their expected outputs.

EvalPlus writes an ``assertion`` into every check that imports numpy for one call,
``np.testing.assert_allclose(out, exp, atol=atol)``, reached when a float answer is not exactly equal. The
sandbox has no third-party packages, so that import is replaced by a class of the same name holding numpy's
test in plain Python (``NUMPY_FREE``; tests/data/public_datasets/test_humaneval_plus.py holds its verdicts equal
to numpy's, but where numpy stretches a scalar over a list: an empty list would pass for any number). A check that reads
anything else of numpy, or names it elsewhere, is refused when the set loads, naming the row.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from codegrpo.data.public_datasets.rows import Row
from codegrpo.errors import ProblemError

NUMPY_IMPORT = "import numpy as np"  # a line of its own, at the top level of the check
# What EvalPlus's checks read of numpy: the assertion's one call, and is_floats' array case (no value here is
# an array, so it never holds). Any other use of the name np, or any other mention of numpy, is refused.
NUMPY_USES = frozenset({"testing.assert_allclose", "ndarray", "float64", "float32"})
NUMPY_FREE = """\
class np:  # codegrpo: numpy's assert_allclose in plain Python (the sandbox has no numpy)
    class ndarray:
        pass

    float64 = float32 = float

    class testing:
        @staticmethod
        def assert_allclose(actual, desired, rtol=1e-07, atol=0, equal_nan=True, err_msg="", verbose=True):
            # numpy's test item by item: |actual - desired| <= atol + rtol * |desired| where both are finite,
            # equality otherwise, NaN equal to NaN (equal_nan). The two must have one shape: numpy would also
            # stretch a scalar over a list, which pays an empty list for any number (EvalPlus's own hole).
            # Exact types only, so no value's own __sub__, __abs__ or __le__ decides the verdict.
            def flat(value):
                if type(value) not in (list, tuple):
                    return (), [value]
                parts = [flat(item) for item in value]
                shapes = {shape for shape, _ in parts}
                assert len(shapes) <= 1  # ragged: numpy refuses it
                return (len(value), *(shapes.pop() if shapes else ())), [x for _, items in parts for x in items]

            (actual_shape, actuals), (desired_shape, desireds) = flat(actual), flat(desired)
            assert actual_shape == desired_shape
            for a, d in zip(actuals, desireds):
                assert type(a) in (int, float, bool, complex) and type(d) in (int, float, bool, complex)
                a, d = (x if type(x) is complex else float(x) for x in (a, d))  # numpy's float64
                if a != a or d != d:
                    assert equal_nan and a != a and d != d
                elif abs(a) == float("inf") or abs(d) == float("inf"):
                    assert a == d
                else:
                    assert abs(a - d) <= atol + rtol * abs(d)
"""


def numpy_free(test: str, where: str) -> str:
    """``test`` with EvalPlus's numpy import replaced by ``NUMPY_FREE``; ProblemError when the check imports
    numpy otherwise, mentions it elsewhere, or uses the name np but as EvalPlus's assertion does."""
    if "numpy" not in test:
        return test
    try:
        tree = ast.parse(test)
    except SyntaxError as error:
        raise ProblemError(f"{where}: field 'test' does not compile ({error.msg}, line {error.lineno})") from None
    lines = test.splitlines(keepends=True)
    imports = [
        node.lineno
        for node in tree.body
        if isinstance(node, ast.Import) and lines[node.lineno - 1].rstrip("\r\n") == NUMPY_IMPORT
    ]
    if len(imports) == 1:
        lines[imports[0] - 1] = NUMPY_FREE
    other = _other_numpy(tree, "".join(lines))
    if len(imports) != 1 or other:
        raise ProblemError(
            f"{where}: the check reads numpy ({other or 'not through one line ' + repr(NUMPY_IMPORT)}) beyond "
            "EvalPlus's assert_allclose, and the sandbox has no numpy: use EvalPlus's HumanEval+ file "
            "(evalplus/humanevalplus)"
        )
    return "".join(lines)


def _other_numpy(tree: ast.Module, replaced: str) -> str:
    """What the check reads of numpy beyond ``NUMPY_USES``: each use of the name np that is not one of them (a
    bare np, np.isclose, getattr(np, ...)), and any mention of numpy left once the import line is replaced."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "np":
            chain: list[str] = []
            top: ast.expr = node
            while isinstance(parent := parents.get(top), ast.Attribute) and parent.value is top:
                chain.append(parent.attr)
                top = parent
            if ".".join(chain) not in NUMPY_USES or not isinstance(node.ctx, ast.Load):
                found.add(".".join(["np", *chain]))
    if "numpy" in replaced.replace(NUMPY_FREE, ""):
        found.add("numpy named elsewhere")
    return ", ".join(sorted(found))


def map_humaneval_plus(row: Mapping[str, Any], number: int, where: str) -> Row:
    """evalplus/humanevalplus: task_id, prompt, canonical_solution, entry_point, and test, a HumanEval check
    over the problem's base and plus inputs; its numpy made plain Python (``numpy_free``)."""
    return Row(
        {
            "task_id": row["task_id"],
            "prompt": row["prompt"],
            "canonical_solution": row.get("canonical_solution") or "",
            "entry_point": row["entry_point"],
            "test": numpy_free(row["test"], where),
        }
    )
