"""The validate task: every problem's reference solution run in the sandbox, and the problem set's warnings
(codegrpo-validate's work)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from codegrpo import build
from codegrpo.config.runs import ScoreConfig
from codegrpo.data.files import write_problems
from codegrpo.data.problems import Problem
from codegrpo.data.prompts import doubled_words
from codegrpo.data.public_tests import SameTest, moved_tests, split_warning
from codegrpo.data.sets import oversize_outputs
from codegrpo.data.weak_tests import trivial_programs
from codegrpo.reward.checker import same_test
from codegrpo.reward.explain import code_head, reason
from codegrpo.reward.scorer import summary
from codegrpo.reward.verdict import Status
from codegrpo.tasks.score import score_pairs


def warn_doubled_prompts(problems: list[Problem], template: str) -> int:
    """Warn (stderr) for each prompt that repeats the template's own words; returns how many."""
    doubled = [(p, word) for p in problems if (word := doubled_words(p, template))]
    for problem, word in doubled:
        lead = template.split("{task}")[0].strip()
        print(
            f"WARNING  {problem.id}: the prompt starts with {word!r}, which the template already says: the "
            f'model reads "{lead} {problem.prompt[:40]}..."; start the prompt where the template stops '
            "(problems.prompt_template sets the template)",
            file=sys.stderr,
        )
    return len(doubled)


MOVED_SHOWN = 5  # tests named in a MOVED line


def report_moved_tests(problems: list[Problem], same: SameTest, checker: str) -> int:
    """Name each problem whose tests repeat a public test in a spelling the reward accepts as equal: they
    count as public (rollout=feedback shows their twin and never scores them). Returns how many problems."""
    count = 0
    for problem in problems:
        if not (moved := moved_tests(problem, same)):
            continue
        count += 1
        named = ", ".join(f"test {test} (as public test {shown})" for test, shown in moved[:MOVED_SHOWN])
        more = f" and {len(moved) - MOVED_SHOWN} more" if len(moved) > MOVED_SHOWN else ""
        print(
            f"MOVED    {problem.id}: {named}{more} of {len(problem.tests)} count as public: {checker} cannot tell "
            "them from the public test they repeat, so rollout=feedback never scores them"
        )
    return count


def validate(cfg: ScoreConfig) -> int:
    problems = build.problems(cfg.problems)
    missing = [p.id for p in problems if not p.reference]
    # References are bare code; a HumanEval canonical_solution is a body completing the prompt.
    pairs = [(p.id, p.reference) for p in problems if p.reference]
    probes = [(p.id, what, code) for p in problems for what, code in trivial_programs(p)] if cfg.weak_tests else []

    scored = score_pairs(cfg, problems, pairs + [(pid, code) for pid, _, code in probes])
    scored, probed = scored[: len(pairs)], scored[len(pairs) :]
    failing = [s for s in scored if s.verdict.status is not Status.PASSED]
    weak: dict[str, str] = {}
    for (problem_id, what, _), item in zip(probes, probed, strict=True):
        if item.verdict.status is Status.PASSED:
            weak.setdefault(problem_id, what)
    if len(missing) == len(problems):
        # Some datasets ship no solutions (LiveCodeBench, DeepCoder): their tests are still checked for weakness.
        print(f"NOTE     none of the {len(problems)} problems has a reference solution: only the tests are checked")
        missing = []
    for problem_id in missing:
        print(f"MISSING  {problem_id}: no reference solution")
    for item in failing:
        # The reason (exception, or got vs expected) and the code's first lines say what to fix.
        print(f"FAIL     {item.problem_id}: {item.verdict.status.value}: {reason(item)}")
        print(textwrap.indent(code_head(item.code), "         | "))
    for problem_id, what in weak.items():
        print(f"WEAK     {problem_id}: a program that {what} passes its tests (a policy could learn to guess)")
    cap = cfg.sandbox.stdout_limit_bytes
    for problem, number, size in oversize_outputs(problems, cap):
        print(
            f"OUTPUT   {problem.id}: test {number} expects {size} bytes of output, more than "
            f"sandbox.stdout_limit_bytes={cap}: no program passes it"
        )
    warn_doubled_prompts(problems, cfg.problems.prompt_template)
    same = same_test(cfg.reward.checker, cfg.reward.float_tolerance)
    report_moved_tests(problems, same, f"reward.checker={cfg.reward.checker.value}")
    for problem in problems:
        if (message := split_warning(problem, same)) is not None:
            print(f"WARNING  {message}", file=sys.stderr)
    if cfg.keep_passing:
        passing = {s.problem_id for s in scored if s.verdict.status is Status.PASSED} - weak.keys()
        kept = [p for p in problems if p.id in passing]
        write_problems(kept, Path(cfg.keep_passing))
        print(f"wrote {len(kept)}/{len(problems)} problems (reference passes, tests not weak) to {cfg.keep_passing}")
    print(summary(scored), file=sys.stderr)
    if pairs:
        print(f"{cfg.problems.name}: {len(problems) - len(failing) - len(missing)}/{len(problems)} references pass")
    else:
        print(f"{cfg.problems.name}: no references to run; {len(weak)}/{len(problems)} problems have weak tests")
    return 0 if not failing and not missing else 1
