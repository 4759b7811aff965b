"""Check a problem set: every problem's reference solution must pass in the sandbox.

    codegrpo-validate problems=NAME

Exits non-zero and lists every problem whose reference is missing or does not pass, with why (the
exception, or got vs expected) and the reference's first lines. Warns about prompts that repeat the
prompt template's own words.
"""

from __future__ import annotations

import sys
import textwrap

import hydra
from omegaconf import DictConfig

from codegrpo import build
from codegrpo.commands import CONFIG_DIR, run, score_pairs
from codegrpo.config import ScoreConfig
from codegrpo.explain import code_head, reason
from codegrpo.problems import Problem
from codegrpo.prompts import doubled_words
from codegrpo.reward import summary
from codegrpo.verdict import Status


def warn_doubled_prompts(problems: list[Problem], template: str) -> int:
    """Warn (stderr) for each prompt that repeats the template's own words; returns how many."""
    doubled = [(p, word) for p in problems if (word := doubled_words(p, template))]
    for problem, word in doubled:
        lead = template.split("{task}")[0].strip()
        print(f"WARNING  {problem.id}: the prompt starts with {word!r}, which the template already says: the "
              f"model reads \"{lead} {problem.prompt[:40]}...\"; start the prompt where the template stops "
              "(problems.prompt_template sets the template)", file=sys.stderr)
    return len(doubled)


def validate(cfg: ScoreConfig) -> int:
    problems = build.problems(cfg.problems)
    missing = [p.id for p in problems if not p.reference]
    # References are bare code; a HumanEval canonical_solution is a body completing the prompt.
    pairs = [(p.id, p.reference) for p in problems if p.reference]

    scored = score_pairs(cfg, problems, pairs)
    failing = [s for s in scored if s.verdict.status is not Status.PASSED]
    for problem_id in missing:
        print(f"MISSING  {problem_id}: no reference solution")
    for item in failing:
        # The reason (exception, or got vs expected) and the code's first lines say what to fix.
        print(f"FAIL     {item.problem_id}: {item.verdict.status.value}: {reason(item)}")
        print(textwrap.indent(code_head(item.code), "         | "))
    warn_doubled_prompts(problems, cfg.problems.prompt_template)
    print(summary(scored), file=sys.stderr)
    ok = not failing and not missing
    print(f"{cfg.problems.name}: {len(problems) - len(failing) - len(missing)}/{len(problems)} references pass")
    return 0 if ok else 1


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="validate")
def main(cfg: DictConfig) -> None:
    sys.exit(run(validate, cfg))


if __name__ == "__main__":
    main()
