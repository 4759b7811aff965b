r"""codegrpo-score: score a JSONL file of completions in the sandbox: reward, status, why.

    codegrpo-score completions=completions.jsonl problems=basics reward=partial --reasons

Input: one JSON object a line, {"problem_id": ..., "completion": ...}; the completion is a model's reply
(the code in a ```python block) or bare code, for a problem of the problems group:

    {"problem_id": "is_prime", "completion": "```python\ndef is_prime(n): ...\n```"}

Output (stdout, input order): {"problem_id": ..., "reward": <float or null>, "status": ..., "flags":
[...]} a line (flags: the reward-hack monitor's categories, docs/reward-design.md; [] when clean); with
--reasons (or reasons=true) also "reason" (the exception, or got vs expected, truncated) and "code" (the
first lines of the scored code). Progress and a summary go to stderr.

Main options: completions=FILE (required), problems=NAME (or problems=jsonl problems.path=FILE),
reward=binary|partial, reasons=true, batch_size=64 (completions per sandbox batch), sandbox.*.
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from codegrpo.commands import CONFIG_DIR, entry_point, run
from codegrpo.tasks.score import score


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="score")
def score_command(cfg: DictConfig) -> None:
    run(score, cfg)


_score_main = entry_point(score_command)


def main() -> None:
    """``--reasons`` is the override ``reasons=true`` (Hydra's own parser would reject the flag)."""
    sys.argv = ["reasons=true" if arg == "--reasons" else arg for arg in sys.argv]
    _score_main()


if __name__ == "__main__":
    main()
