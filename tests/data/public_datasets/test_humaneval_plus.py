"""EvalPlus's HumanEval+ rows (codegrpo.data.public_datasets.humaneval_plus): the check's numpy import made plain
Python whose verdicts are numpy's, a check reading more of numpy refused naming the row, and the row's record."""

from __future__ import annotations

import ast
import sys

import pytest

from codegrpo.data.public_datasets import read_dataset
from codegrpo.data.public_datasets.humaneval_plus import NUMPY_FREE, NUMPY_IMPORT, map_humaneval_plus, numpy_free
from codegrpo.errors import ProblemError
from tests.helpers.public_datasets import DATA, dataset_cfg, jsonl_file
from tests.helpers.run_if import run_if
from tests.helpers.sandbox import run

# Moved unchanged from tests/data/test_public_datasets.py.

# (answer, expected, atol) pairs around the tolerances EvalPlus's assertion uses, and values numpy refuses.
CLOSE_CASES = [
    (0.5, 0.5, 0),
    (0.1 + 0.2, 0.3, 0),
    (0.30001, 0.3, 0),
    (1.0 + 1e-7, 1.0, 0),
    (1e-9, 3e-9, 0),
    (2.0, 2, 0),
    (True, 1.0, 0),
    (3, 3.0000001, 1e-6),
    (3, 3.1, 1e-6),
    ([1.0, 2.0], [1.0, 2.0000001], 0),
    ([1.0, 2.0], [1.0, 2.1], 0),
    ([1.0, 2.0], [1.0, 2.0, 3.0], 0),
    ((0.5, 1.5), [0.5, 1.5 + 1e-12], 1e-9),
    ([], [], 1e-9),
    (float("nan"), float("nan"), 0),
    (float("nan"), 1.0, 0),
    (float("inf"), float("inf"), 0),
    (float("inf"), -float("inf"), 0),
    (float("inf"), 1e308, 0),
    (1e308, float("inf"), 0),
    ([[1.0, 2.0], [3.0]], [[1.0, 2.0], [3.0 + 1e-9]], 0),
    ([[0.5], [1.5]], [0.5, 1.5], 1e-9),
    ([0.5, 1.5], [[0.5], [1.5]], 1e-9),
    ([[[[0.5]]]], [0.5], 1e-9),
    ([[1.0, 2.0000001], [3.0]], [[1.0, 2.0], [3.0]], 1e-6),
    ([[], []], [[], []], 1e-6),
    ([[]], [], 1e-6),
    (1.5 + 1e-9j, 1.5, 1e-6),
    (1.5 + 1e-3j, 1.5, 1e-6),
    (2**53 + 1, 2**53, 0.5),
    (10**400, 10**400 + 1, 1e-6),
    (-0.0, 0.0, 1e-9),
    ("0.5", 0.5, 0),
    (None, 0.5, 0),
    ({"a": 1.0}, 0.5, 0),
    ({1.0}, 1.0, 1e-6),
]
# Where numpy stretches a scalar over a list (an empty one too), which would pay `return []` for any number:
# the plain-Python test wants one shape, and fails these.
STRETCHED = [(0.5, [0.5, 0.5000001], 0), ([0.5, 0.5000001], 0.5, 0), ([], 1.5, 1e-6), (0.0, [], 1e-9)]


def _verdict(assertion, out, exp, atol) -> bool:
    try:
        assertion(out, exp, atol)
    except Exception:  # numpy's refusals (a string, a ragged list) fail the check as the assertion's do
        return False
    return True


def test_numpy_free_assertion_agrees_with_numpys_on_every_case():
    import numpy as np

    from codegrpo.data.public_datasets.humaneval_plus import numpy_free

    sys.path.insert(0, str(DATA))
    from make_samples import PLUS_ASSERTION

    with_numpy: dict = {"np": np}
    exec(PLUS_ASSERTION, with_numpy)
    without: dict = {}
    mapped = numpy_free(PLUS_ASSERTION, "sample")
    assert "import numpy" not in mapped
    exec(mapped, without)
    assert without["np"] is not np
    for out, exp, atol in CLOSE_CASES:
        expected = _verdict(with_numpy["assertion"], out, exp, atol)
        assert _verdict(without["assertion"], out, exp, atol) == expected, (out, exp, atol, expected)
    for out, exp, atol in STRETCHED:
        assert _verdict(with_numpy["assertion"], out, exp, atol) and not _verdict(without["assertion"], out, exp, atol)
    # numpy's keywords are taken (a check may pass err_msg)
    without["np"].testing.assert_allclose(1.0, 1.0 + 1e-9, atol=1e-6, err_msg="x", verbose=False)
    # and the two verdicts differ somewhere, so the cases test something
    assert {_verdict(without["assertion"], *case) for case in CLOSE_CASES} == {True, False}


def test_a_value_whose_own_arithmetic_says_close_is_not_close():
    from codegrpo.data.public_datasets.humaneval_plus import NUMPY_FREE

    space: dict = {}
    exec(NUMPY_FREE, space)

    class Liar(float):
        def __sub__(self, other):
            return 0.0

        def __abs__(self):
            return 0.0

    with pytest.raises(AssertionError):
        space["np"].testing.assert_allclose(Liar(5.0), 1.0, atol=1e-6)


@pytest.mark.parametrize(
    "test",
    [
        "import numpy as np\ndef check(candidate):\n    assert np.isclose(candidate(1), 2)\n",
        "import numpy\ndef check(candidate):\n    assert candidate(1) == 2\n",
        "from numpy import testing\ndef check(candidate):\n    testing.assert_allclose(candidate(1), 2)\n",
        # found by the red team: each loaded, then judged every right answer wrong (no numpy in the sandbox)
        "import numpy as np\ndef check(candidate):\n    assert getattr(np, 'isclose')(candidate(1), 2)\n",
        "import numpy as np\nn = np\ndef check(candidate):\n    n.testing.assert_allclose(candidate(1), 2)\n",
        "import numpy as np\ndef check(candidate):\n    __import__('numpy').testing.assert_allclose(candidate(1), 2)\n",
        "import numpy as np\n_t = np.testing\ndef check(candidate):\n    np.testing.assert_allclose(candidate(1), 2)\n"
        "    _t.assert_array_almost_equal(candidate(1), 2)\n",
        "S = 'import numpy as np\\n'\nimport numpy as np  # real\ndef check(candidate):\n"
        "    np.testing.assert_allclose(candidate(1), 2)\n",
        "import numpy as np\nimport numpy.testing as np\ndef check(candidate):\n"
        "    np.testing.assert_allclose(candidate(1), 2)\n",
        "def check(candidate):\n    import numpy as np\n    np.testing.assert_allclose(candidate(1), 2)\n",
    ],
)
def test_a_check_reading_more_of_numpy_names_the_row(tmp_path, test):
    row = {"task_id": "HumanEval/9", "prompt": "def f(x):\n", "entry_point": "f", "test": test}
    with pytest.raises(ProblemError, match=r"rows.jsonl\[train\] row 0: the check reads numpy \(.+\) beyond"):
        read_dataset(dataset_cfg("humaneval_plus", jsonl_file(tmp_path, [row])))


@pytest.mark.slow
@run_if(bwrap=True)
def test_humaneval_plus_checks_score_in_the_sandbox(local_sandbox):
    """The sample's checks in the real sandbox (no numpy there): the references pass; an answer off by more
    than the tolerance, a wrong list and a wrong big answer fail; one within it passes. The red team's two wrong
    answers that were paid 1.0 (an extra nesting, an empty list for a number) fail."""
    from codegrpo.reward.programs import get_language
    from codegrpo.reward.scorer import Scorer

    loaded = read_dataset(dataset_cfg("humaneval_plus")).problems
    problems = {p.id: p for p in loaded}
    scorer = Scorer(loaded, local_sandbox, get_language("python"), "binary")
    answers = {
        "HumanEval/1": [
            "    return sum(xs) / len(xs)\n",
            "    return sum(xs) / len(xs) + 1e-3\n",
            "    return sum(xs) / len(xs) + 1e-8\n",
            "    return []\n",
        ],
        "HumanEval/2": [
            "    return [x / 2 for x in xs]\n",
            "    return [x / 2 + 1e-6 for x in xs]\n",
            "    return [[x / 2] for x in xs]\n",
        ],
        "HumanEval/4": ["    return (c ** 0.5,)\n", "    return (c / 2,)\n"],
        "HumanEval/5": ["    return [i * (i + 1) // 2 for i in range(n + 1)]\n", "    return list(range(n + 1))\n"],
    }
    ids = [pid for pid, bodies in answers.items() for _ in bodies]
    completions = [f"```python\n{problems[pid].prompt}{body}```" for pid, bodies in answers.items() for body in bodies]
    rewards = [scored.verdict.reward for scored in run(scorer.score(ids, completions))]
    assert rewards == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0]


# numpy_free and map_humaneval_plus on checks of their own.

CHECK = "def check(candidate):\n    np.testing.assert_allclose(candidate(1), 2.0, atol=1e-6)\n"


def _allclose():
    space: dict = {}
    exec(NUMPY_FREE, space)
    return space["np"].testing.assert_allclose


def test_a_check_that_never_names_numpy_is_left_as_it_is():
    check = "def check(candidate):\n    assert candidate(1) == 2\n"
    assert numpy_free(check, "w") is check


def test_the_one_import_line_is_replaced_and_every_other_line_kept():
    mapped = numpy_free(f"X = 1\n{NUMPY_IMPORT}\n{CHECK}", "w")
    assert mapped == f"X = 1\n{NUMPY_FREE}{CHECK}"
    space: dict = {}
    exec(mapped, space)
    space["check"](lambda x: 2.0 + 1e-9)  # within atol: passes
    with pytest.raises(AssertionError):
        space["check"](lambda x: 2.1)


def test_a_check_that_names_numpy_and_does_not_compile_names_the_row():
    with pytest.raises(ProblemError, match=r"^row 2: field 'test' does not compile \(.+, line 2\)$"):
        numpy_free(f"{NUMPY_IMPORT}\ndef check(candidate:\n", "row 2")


@pytest.mark.parametrize(
    "test",
    [
        f"{NUMPY_IMPORT}\n{NUMPY_IMPORT}\n{CHECK}",  # two import lines
        f"import numpy as np, sys\n{CHECK}",  # not the line itself
        f"{NUMPY_IMPORT}\nnp = 1\n{CHECK}",  # the name rebound
        f"{NUMPY_IMPORT}\n{CHECK}# numpy\n",  # numpy named elsewhere
    ],
)
def test_numpy_reached_other_than_through_the_one_import_line_is_refused(test):
    with pytest.raises(ProblemError, match=r"^w: the check reads numpy \(.+\) beyond EvalPlus's assert_allclose"):
        numpy_free(test, "w")


def test_evalplus_is_floats_reads_of_numpy_are_allowed():
    test = (
        f"{NUMPY_IMPORT}\ndef is_floats(x):\n    return isinstance(x, np.ndarray) and x.dtype in (np.float64, "
        f"np.float32)\n{CHECK}"
    )
    mapped = numpy_free(test, "w")
    assert "import numpy" not in mapped
    ast.parse(mapped)


def test_the_plain_assert_allclose_keeps_numpys_defaults_and_refuses_nan_when_told_to():
    allclose = _allclose()
    allclose(1.0, 1.0 + 5e-8)  # rtol=1e-7 by default
    with pytest.raises(AssertionError):
        allclose(1.0, 1.0 + 5e-7)
    allclose(float("nan"), float("nan"))
    with pytest.raises(AssertionError):
        allclose(float("nan"), float("nan"), equal_nan=False)
    with pytest.raises(AssertionError):
        allclose([[1.0], [2.0, 3.0]], [[1.0], [2.0, 3.0]])  # ragged, as numpy refuses it


def test_a_row_is_humanevals_record_with_its_check_made_numpy_free():
    row = {
        "task_id": "HumanEval/3",
        "prompt": "def f(x):\n",
        "canonical_solution": "    return 2.0\n",
        "entry_point": "f",
        "test": f"{NUMPY_IMPORT}\n{CHECK}",
    }
    mapped = map_humaneval_plus(row, 3, "w")
    assert mapped.record == row | {"test": f"{NUMPY_FREE}{CHECK}"} and mapped.released is None
    without = map_humaneval_plus(row | {"canonical_solution": None}, 3, "w").record
    assert without["canonical_solution"] == ""
