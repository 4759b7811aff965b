"""Weak tests: trivial programs a problem's tests should all fail, since a problem one of them passes
teaches the policy to guess. ``codegrpo-validate`` runs them and names such problems."""

from __future__ import annotations

import json

from codegrpo.config.choices import Form
from codegrpo.data.problems import Problem


def trivial_programs(problem: Problem) -> list[tuple[str, str]]:
    """(what the program does, its code) for each trivial program that fits the problem's form."""
    if problem.form is Form.stdio:
        first = problem.tests[0].output if problem.tests else ""
        return [
            ("prints nothing", "pass\n"),
            ("echoes its input", "import sys\nsys.stdout.write(sys.stdin.read())\n"),
            ("prints the first test's output", f"import sys\nsys.stdout.write({first!r})\n"),
        ]
    name = problem.fn_name if problem.form is Form.call else problem.entry_point
    if problem.form not in (Form.call, Form.humaneval) or not name:
        return []  # the expression form's test is any expression: no one trivial program fits it
    programs = [
        ("returns None", f"def {name}(*args, **kwargs):\n    return None\n"),
        ("returns its first argument", f"def {name}(*args, **kwargs):\n    return args[0] if args else None\n"),
    ]
    if problem.form is Form.call and problem.tests:
        constant = repr(json.loads(problem.tests[0].output))
        programs.append(("returns the first test's output", f"def {name}(*args, **kwargs):\n    return {constant}\n"))
    return programs
