"""Program assembly: completion code + the problem's test, as a self-contained program for a sandbox."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from typing import Any

from codegrpo.config.choices import Form, LanguageName
from codegrpo.data.problems import PREAMBLES, Problem, compile_error
from codegrpo.errors import ProblemError
from codegrpo.harness import sandbox_source
from codegrpo.reward.verdict import CheckKind, ValueCheck
from codegrpo.sandbox.base import Program, Runtime


@dataclass(frozen=True)
class Language:
    name: LanguageName
    runtime: Runtime
    filename: str
    fence_tags: frozenset[str]  # what a completion's fenced block may be tagged with: the model's free text

    @property
    def has_harness(self) -> bool:
        """Whether its programs of the expression, HumanEval and call forms run inside the Python harness
        (harness/python_harness.py): the completion's prints go to its stderr, the harness's report (typed
        values) is the one line on its stdout, and the harness is the program's prelude."""
        return self.name is LanguageName.python

    @property
    def runs_preamble(self) -> bool:
        """Whether a problem's preamble (Python imports, data/problems.py's PREAMBLES) runs before its code."""
        return self.name is LanguageName.python


LANGUAGES: dict[LanguageName, Language] = {
    LanguageName.python: Language(
        LanguageName.python, Runtime.python, "solution.py", frozenset({"python", "py", "python3"})
    ),
    LanguageName.javascript: Language(
        LanguageName.javascript, Runtime.node, "solution.js", frozenset({"javascript", "js", "node"})
    ),
}


def get_language(name: LanguageName | str) -> Language:
    try:
        return LANGUAGES[LanguageName(name)]
    except ValueError:
        raise ProblemError(f"unknown language {name!r}; choose one of {sorted(map(str, LANGUAGES))}") from None


def _python_harness() -> str:
    return sandbox_source("python_harness")  # whole lines: the program's prelude


def build_program(
    problem: Problem, code: str, language: Language, timeout_s: float, budget_s: float | None = None
) -> Program:
    """The program that runs ``code`` against ``problem``'s test and reports one JSON line on stdout.

    Input/output problems run once per test (``Program.inputs``), within ``budget_s`` in all: a stdio
    program is the code itself, reading the test's input; a call-form one is the harness calling
    ``fn_name`` with the test's arguments. Either runs the problem's preamble first."""
    timeout = problem.timeout_s or timeout_s
    if problem.form.per_test:
        inputs = tuple(test.input for test in problem.tests)
        preamble = PREAMBLES[problem.preamble][problem.form] if problem.preamble and language.runs_preamble else ""
        if preamble:
            code = _after_preamble(preamble, code)
        if problem.form is Form.stdio:
            return Program(
                code, language.runtime, timeout, language.filename, len(preamble), inputs=inputs, budget_s=budget_s
            )
        if not language.has_harness:
            raise ProblemError(f"problem {problem.id}: the call form runs Python only")
        source = _python_program(code, problem.fn_name, "call")
        return Program(
            source, Runtime.python, timeout, language.filename, len(_python_harness()), None, inputs, budget_s
        )
    if not language.has_harness:  # JavaScript: node runs the completion and its checks in one script
        source = _javascript_program(problem, code)
    elif problem.form is Form.humaneval:
        # A HumanEval prompt is code (signature, docstring, imports) the completion continues; an MBPP one is prose.
        prefix = problem.prompt + "\n" if _is_python(problem.prompt) else ""
        checks = humaneval_check(problem).source
        source = _python_program(prefix + code, checks, "checks", problem.entry_point, prefix)
    else:
        source = _python_program(code, problem.test, "expression")
    prelude = len(_python_harness()) if language.has_harness else 0
    return Program(source, language.runtime, timeout, language.filename, prelude)


@cache
def _is_python(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def _after_preamble(preamble: str, code: str) -> str:
    """The preamble (trusted imports, whole lines: a warm interpreter compiles a stdio program's once), then
    ``code`` compiled on its own, so that the line numbers its tracebacks and syntax errors name are its own
    and a ``from __future__`` import at its top still works."""
    return f"{preamble}exec(compile(\n{code!r},\n'<completion>', 'exec'))\n"


def _python_program(code: str, test: str, mode: str, *more: str) -> str:
    arguments = ", ".join(repr(value) for value in (code, test, mode, *more))
    return f"{_python_harness()}\n\nmain({arguments})\n"


def _javascript_program(problem: Problem, code: str) -> str:
    if problem.form is not Form.expression:
        raise ProblemError(f"problem {problem.id}: JavaScript supports the expression and stdio forms only")
    # Weaker than the Python harness: the completion shares the process and its stdout (see docs/security.md).
    return (
        f"{code}\n;\n"
        "let __report;\n"
        f"try {{ __report = {{status: 'ok', value: ({problem.test})}}; }}\n"
        "catch (e) { __report = {status: 'error', error: String(e)}; }\n"
        "process.stdout.write('\\n' + JSON.stringify(__report) + '\\n');\n"
    )


@dataclass(frozen=True)
class HumanEvalCheck:
    source: str  # test code that defines _codegrpo_check() -> records
    # Per check, how the host judges its value record (verdict.check_passes); None when the check is an
    # assert decided in the sandbox.
    expected: list[ValueCheck | None]


def _literal(node: ast.AST) -> tuple[bool, Any]:
    """The value of a Python literal, exactly as the check would build it, or (False, None)."""
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _number(node: ast.expr) -> float | int | None:
    """A constant arithmetic expression (``2.0/3.0``, ``1e-6``), evaluated here, or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _number(node.operand)
        return None if value is None else (-value if isinstance(node.op, ast.USub) else value)
    operators = {ast.Add: float.__add__, ast.Sub: float.__sub__, ast.Mult: float.__mul__, ast.Div: float.__truediv__}
    if isinstance(node, ast.BinOp) and type(node.op) in operators:
        left, right = _number(node.left), _number(node.right)
        if left is not None and right is not None:
            try:
                return operators[type(node.op)](float(left), float(right))
            except ZeroDivisionError:
                return None
    return None


@cache
def humaneval_check(problem: Problem) -> HumanEvalCheck:
    """Split HumanEval's check(candidate) into one record per top-level statement that asserts.

    Where the host can judge a check from the candidate's value (``== <literal>``, ``is True``, a bare
    ``candidate(...)`` or ``not candidate(...)``, ``abs(candidate(...) - <number>) < <number>``), it
    becomes a value record: what it must be never enters the sandbox. Other asserts are decided in the
    harness's parent, out of the completion's reach.
    """
    if (why := compile_error(problem.test, Form.humaneval)) is not None:  # a Problem built, not loaded
        raise ProblemError(f"problem {problem.id}: field 'test' {why}")
    module = ast.parse(problem.test)
    check = next(n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check")
    param = check.args.args[0].arg
    body: list[str] = [f"{param} = _guard({problem.entry_point})"]
    expected: list[ValueCheck | None] = []
    for statement in check.body:
        has_assert = any(isinstance(n, ast.Assert) for n in ast.walk(statement))
        if not has_assert:
            body.append(ast.unparse(statement))
            continue
        value_expr, want = _value_check(statement, param)
        if value_expr is not None:
            body.append(f"_records.append(_attempt(lambda: ('value', {value_expr})))")
            expected.append(want)
        else:
            body.append(f"_records.append(_attempt_block({_block_source(statement)!r}, locals(), globals()))")
            expected.append(None)
    others = [ast.unparse(n) for n in module.body if n is not check]
    lines = "\n".join([*body, "return _records"]).splitlines()
    function = "def _codegrpo_check():\n    _records = []\n" + "".join(f"    {line}\n" for line in lines)
    source = "\n".join([*others, _CHECK_HELPERS, function])
    return HumanEvalCheck(source, expected)


def _calls(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def _value_check(statement: ast.stmt, param: str) -> tuple[str | None, ValueCheck | None]:
    """The expression whose value the host judges, and how (see HumanEvalCheck.expected)."""
    if not isinstance(statement, ast.Assert):
        return None, None
    test = statement.test
    if _calls(test, param):
        return ast.unparse(test), ValueCheck(CheckKind.TRUTHY, True)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and _calls(test.operand, param):
        return ast.unparse(test.operand), ValueCheck(CheckKind.TRUTHY, False)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None, None
    op, (right,) = test.ops[0], test.comparators
    if isinstance(op, ast.Is) and isinstance(right, ast.Constant):
        return ast.unparse(test.left), ValueCheck(CheckKind.IS, right.value)
    if isinstance(op, ast.Eq):
        ok, value = _literal(right)
        return (ast.unparse(test.left), ValueCheck(CheckKind.EQ, value)) if ok else (None, None)
    left = test.left
    near = isinstance(op, (ast.Lt, ast.LtE)) and _calls(left, "abs")
    if (
        near
        and isinstance(left, ast.Call)
        and len(left.args) == 1
        and isinstance(diff := left.args[0], ast.BinOp)
        and isinstance(diff.op, ast.Sub)
    ):
        target, tolerance = _number(diff.right), _number(right)
        if target is not None and tolerance is not None:
            return ast.unparse(diff.left), ValueCheck(CheckKind.NEAR, target, tolerance, isinstance(op, ast.LtE))
    return None, None


def _block_source(statement: ast.stmt) -> str:
    # Any statement with asserts inside (a loop, say) runs as a function of its own; it passes if nothing raises.
    return "def _block():\n" + "".join(f"    {line}\n" for line in ast.unparse(statement).splitlines())


_CHECK_HELPERS = """
def _guard(function):
    # Every value the candidate returns must be exact builtin data: no forged __eq__.
    def guarded(*args, **kwargs):
        result = function(*args, **kwargs)
        _typed(result)
        return result
    return guarded


def _attempt(thunk):
    try:
        return thunk()
    except Exception as error:
        return ('raised', type(error).__name__, str(error)[:300])


def _attempt_block(source, scope, module_scope):
    namespace = dict(module_scope)
    namespace.update(scope)
    try:
        exec(source, namespace)
        namespace['_block']()
    except Exception as error:
        return ('raised', type(error).__name__, str(error)[:300])
    return ('assert', True)
"""
