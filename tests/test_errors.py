"""The errors a user can fix (codegrpo.errors): all are CodegrpoError, which the commands report in one line, and
each is also the built-in kind that code catching the built-in expects."""

from __future__ import annotations

import pytest

from codegrpo.errors import CodegrpoError, ModelNotFoundError, ProblemError, SandboxFatalError, UsageError

ERRORS = [UsageError, ProblemError, SandboxFatalError, ModelNotFoundError]


@pytest.mark.parametrize("error", ERRORS)
def test_every_error_is_a_codegrpo_error_carrying_its_message(error):
    raised = error("problems.limit=0 must be at least 1")
    assert isinstance(raised, CodegrpoError) and isinstance(raised, Exception)
    assert str(raised) == "problems.limit=0 must be at least 1"
    with pytest.raises(CodegrpoError, match="at least 1"):
        raise raised


def test_a_malformed_problem_is_a_value_error_and_a_fatal_sandbox_fault_a_runtime_error():
    assert issubclass(ProblemError, ValueError) and not issubclass(ProblemError, RuntimeError)
    assert issubclass(SandboxFatalError, RuntimeError) and not issubclass(SandboxFatalError, ValueError)


@pytest.mark.parametrize("error", [UsageError, ModelNotFoundError])
def test_a_usage_error_and_a_missing_model_are_no_built_in_kind(error):
    assert not issubclass(error, (ValueError, RuntimeError, LookupError, OSError))


def test_no_error_is_another_kind_of_codegrpo_error():
    for error in ERRORS:
        assert error.__mro__[1] is CodegrpoError  # each derives from CodegrpoError first, not from a sibling
        assert [other for other in ERRORS if other is not error and issubclass(error, other)] == []
