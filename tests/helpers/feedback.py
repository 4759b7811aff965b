"""Problems with public and hidden tests, and a scorer for them, shared by the tests of the split
(data.public_tests), the reports (reward.reports), the feedback environment and TRL's rollout binding."""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any

from codegrpo.config.choices import Form, RewardKind
from codegrpo.data.problems import IOTest, Problem
from codegrpo.data.public_tests import sides_of
from codegrpo.reward.checker import same_test
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer

PUBLIC = IOTest("1 2\n", "3\n")
# Planted hidden tests: inputs and outputs that appear nowhere else, searched for in every prompt and message.
HIDDEN = (IOTest("40917 2346\n", "43263\n"), IOTest("7777 1119\n", "8896\n"))
PLANTED = ["40917 2346", "43263", "7777 1119", "8896"]
SAME = same_test()  # the reward's defaults: checker=tokens, float_tolerance=1e-6


def with_public(problem: Problem, tests: tuple[IOTest, ...]) -> Problem:
    return dataclasses.replace(problem, public_tests=tests)


def stdio_problem(problem_id: str, prompt: str, tests: tuple[IOTest, ...], shown: tuple[IOTest, ...] = ()) -> Problem:
    """A stdin/stdout problem whose ``shown`` tests are public (none: one turn, no feedback)."""
    return with_public(Problem(id=problem_id, prompt=prompt, test="", form=Form.stdio, tests=tests), shown)


SUM = stdio_problem("sum", "Read two integers a and b from one line and print a + b.", (PUBLIC, *HIDDEN), (PUBLIC,))
DOUBLE = stdio_problem("double", "Read an integer n and print 2 * n.", (IOTest("5\n", "10\n"), IOTest("21\n", "42\n")))


def shown(*problems: Problem) -> list[Problem]:
    """Each problem with its public tests alone, as build.sides gives them to the rollout."""
    return sides_of(problems, SAME).public


def scorer_of(sandbox, problems, kind=RewardKind.binary) -> Scorer:
    return Scorer(problems, sandbox, get_language("python"), kind, timeout_s=5.0)


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


@cache
def offline_tokenizer() -> Any:
    """The offline model's tokenizer (SmolLM2's, converted once from its GGUF package)."""
    from transformers import AutoTokenizer

    from codegrpo.models.conversion import offline_model

    return AutoTokenizer.from_pretrained(offline_model())
