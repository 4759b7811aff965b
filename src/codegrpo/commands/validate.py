r"""codegrpo-validate: check a problem set: every problem's reference solution must pass in the sandbox.

    codegrpo-validate problems=basics
    codegrpo-validate problems=jsonl problems.path=mine.jsonl keep_passing=mine_ok.jsonl

Input: a problem set (the problems group): a problem file's line holds its "reference" (or HumanEval's
"canonical_solution"), e.g. {"id": "add", "prompt": "...", "test": "add(2, 3)", "expected": "5",
"reference": "def add(a, b):\n    return a + b"}; datasets without solutions have only their tests checked.

Exits non-zero and lists every problem whose reference is missing or does not pass, with why (the
exception, or got vs expected) and the reference's first lines. Warns about prompts that repeat the
prompt template's own words, names every problem with a test no program can pass (its expected output
is over sandbox.stdout_limit_bytes) and (``weak_tests=true``, the default) every problem whose tests a
trivial program passes (codegrpo.data.weak_tests), and every problem with tests that repeat a public test in
a spelling the reward accepts as equal (MOVED: they count as public).

Main options: problems=NAME, keep_passing=FILE (writes the problems whose reference passes and whose tests
are not weak: the filter papers apply, docs/reward-design.md), weak_tests=false, reward.checker=..., sandbox.*.
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from codegrpo.commands import CONFIG_DIR, entry_point, run
from codegrpo.tasks.validate import validate


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="validate")
def validate_command(cfg: DictConfig) -> None:
    sys.exit(run(validate, cfg))


main = entry_point(validate_command)


if __name__ == "__main__":
    main()
