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

import json
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from codegrpo import build
from codegrpo.commands import CONFIG_DIR, entry_point, run, score_pairs
from codegrpo.config.schema import ScoreConfig
from codegrpo.data.files import read_jsonl
from codegrpo.errors import ProblemError
from codegrpo.reward.explain import explain
from codegrpo.reward.scorer import summary


def read_completions(path: str, known_ids: set[str]) -> list[tuple[str, str]]:
    """Parse and check every line first, so a bad line fails before anything runs."""
    file = Path(path)
    if not file.is_file():
        raise ProblemError(f"completions file {file} does not exist")
    pairs = []
    for where, record in read_jsonl(file):
        if not isinstance(record, dict) or not isinstance(record.get("completion"), str):
            raise ProblemError(f"{where}: expected an object with a string 'completion'")
        problem_id = record.get("problem_id")
        if problem_id not in known_ids:
            raise ProblemError(f"{where}: unknown problem_id {problem_id!r}")
        pairs.append((problem_id, record["completion"]))
    return pairs


def score(cfg: ScoreConfig) -> None:
    if not cfg.completions:
        raise ProblemError("set completions=PATH (a JSONL file of {problem_id, completion} lines)")
    problems = build.problems(cfg.problems)
    pairs = read_completions(cfg.completions, {p.id for p in problems})

    scored = score_pairs(cfg, problems, pairs)
    for item in scored:
        line = (
            explain(item)
            if cfg.reasons
            else {
                "problem_id": item.problem_id,
                "reward": item.verdict.reward,
                "status": item.verdict.status.value,
                "flags": list(item.flags),
            }
        )
        print(json.dumps(line))
    print(summary(scored), file=sys.stderr)


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
