"""EvalPlus's HumanEval+ (evalplus/humanevalplus on the Hub, or EvalPlus's compatible_humaneval_plus_*.jsonl):
HumanEval's 164 problems, each ``check(candidate)`` holding its base and plus inputs with their expected outputs.

EvalPlus writes an ``assertion`` into every check that imports numpy for one call,
``np.testing.assert_allclose(out, exp, atol=atol)``, reached when a float answer is not exactly equal. The
sandbox has no third-party packages, so that import is replaced by a class of the same name holding numpy's
test in plain Python (``NUMPY_FREE``; tests/test_public_datasets.py holds its verdicts equal to numpy's). A
check that reads anything else of numpy is refused when the set loads, naming the row.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from codegrpo.data.public_datasets.rows import Row
from codegrpo.errors import ProblemError

NUMPY_IMPORT = "import numpy as np\n"
# What EvalPlus's checks read of numpy: the assertion's one call, and is_floats' array case (no value here is
# an array, so it never holds).
NUMPY_USES = frozenset({"testing.assert_allclose", "ndarray", "float64", "float32"})
NUMPY_FREE = """\
class np:  # codegrpo: numpy's assert_allclose in plain Python (the sandbox has no numpy)
    class ndarray:
        pass

    float64 = float32 = float

    class testing:
        @staticmethod
        def assert_allclose(actual, desired, rtol=1e-07, atol=0):
            # numpy's test element by element: |actual - desired| <= atol + rtol * |desired| where both are
            # finite, equality otherwise, NaN equal to NaN; a scalar against a list is compared with each item.
            # Exact types only, so no value's own __sub__, __abs__ or __le__ decides the verdict.
            close = np.testing.assert_allclose
            if type(desired) in (list, tuple):
                if type(actual) in (list, tuple):
                    assert len(actual) == len(desired)
                    for a, d in zip(actual, desired):
                        close(a, d, rtol, atol)
                else:
                    for d in desired:
                        close(actual, d, rtol, atol)
                return
            if type(actual) in (list, tuple):
                for a in actual:
                    close(a, desired, rtol, atol)
                return
            assert type(actual) in (int, float, bool) and type(desired) in (int, float, bool)
            if actual != actual or desired != desired:
                assert actual != actual and desired != desired
            elif abs(actual) == float("inf") or abs(desired) == float("inf"):
                assert actual == desired
            else:
                assert abs(actual - desired) <= atol + rtol * abs(desired)
"""


def numpy_free(test: str, where: str) -> str:
    """``test`` with EvalPlus's numpy import replaced by ``NUMPY_FREE``; ProblemError when the check reads
    any other part of numpy, or imports it otherwise."""
    if "numpy" not in test:
        return test
    uses = _numpy_uses(test, where)
    if test.count(NUMPY_IMPORT) != 1 or not uses <= NUMPY_USES:
        other = ", ".join(sorted(uses - NUMPY_USES)) or "an import of another form"
        raise ProblemError(
            f"{where}: the check reads numpy ({other}) beyond EvalPlus's assert_allclose, and the sandbox has no "
            "numpy: use EvalPlus's HumanEval+ file (evalplus/humanevalplus)"
        )
    return test.replace(NUMPY_IMPORT, NUMPY_FREE)


def _numpy_uses(test: str, where: str) -> set[str]:
    """The dotted names read from ``np`` (``testing.assert_allclose``), and 'numpy' for any other import of it."""
    try:
        tree = ast.parse(test)
    except SyntaxError as error:
        raise ProblemError(f"{where}: field 'test' does not compile ({error.msg}, line {error.lineno})") from None
    uses = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, inner = [node.attr], node.value
            while isinstance(inner, ast.Attribute):
                chain.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id == "np" and isinstance(node.ctx, ast.Load):
                uses.add(".".join(reversed(chain)))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "numpy":
            uses.add("numpy")
        elif isinstance(node, ast.Import):
            uses |= {"numpy" for alias in node.names if alias.name.split(".")[0] == "numpy" and alias.asname != "np"}
    # Only the longest chains: np.testing.assert_allclose also walks np.testing.
    return {use for use in uses if not any(other.startswith(use + ".") for other in uses)}


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
