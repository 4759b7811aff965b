"""The errors a user can fix. Every one derives from CodegrpoError, which the commands report in one
place (codegrpo.commands.run): one line on stderr and exit status 2, no traceback."""

from __future__ import annotations


class CodegrpoError(Exception):
    """Bad input or a machine that cannot run the job; the message says what to change."""


class UsageError(CodegrpoError):
    """A setting that cannot work as given."""


class ProblemError(CodegrpoError, ValueError):
    """A problem set (or completions file) that is missing or malformed."""


class SandboxFatalError(CodegrpoError, RuntimeError):
    """A sandbox fault that retrying cannot fix (bad credentials, a missing binary): stop the run."""


class ModelNotFoundError(CodegrpoError):
    """A model that is neither reachable nor cached."""
