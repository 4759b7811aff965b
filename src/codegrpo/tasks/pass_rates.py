"""The pass-rates task: each problem's pass rate under a model, and the problems worth training on
(codegrpo-pass-rates' work)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from codegrpo import build
from codegrpo.config.choices import RewardKind
from codegrpo.config.runs import BASE_CHECKPOINT, PassRatesConfig
from codegrpo.data.files import write_problems
from codegrpo.data.problems import Problem
from codegrpo.data.sets import problem_set_hash
from codegrpo.errors import UsageError


def read_rates(path: Path, sha256: str) -> dict[str, dict[str, Any]]:
    """The problems a pass-rate file already rates, by id; UsageError if it is another problem set's."""
    if not path.is_file():
        return {}
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    header = lines[0] if lines else {}
    if header.get("problem_set_sha256") != sha256:
        raise UsageError(
            f"{path} holds the pass rates of another problem set (sha256 "
            f"{str(header.get('problem_set_sha256'))[:12]}, this one is {sha256[:12]}): set rates= "
            "to a new file, or choose that file's problems"
        )
    return {line["id"]: line for line in lines[1:]}


def keep(problems: list[Problem], rates: dict[str, dict[str, Any]], lo: float, hi: float) -> list[Problem]:
    return [p for p in problems if p.id in rates and lo < rates[p.id]["pass_rate"] < hi]


def pass_rates(cfg: PassRatesConfig) -> list[Problem]:
    from codegrpo.evaluation.evaluator import evaluate_model

    problems = build.problems(cfg.problems)
    sha256 = problem_set_hash(problems)
    path = Path(cfg.rates)
    rates = read_rates(path, sha256)
    todo = [p for p in problems if p.id not in rates]
    if todo:
        build.check_sampling(cfg.model, cfg.evaluation, [cfg.checkpoint])
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file():
            header = {
                "problem_set_sha256": sha256,
                "problems": cfg.problems.name,
                "model": cfg.checkpoint or BASE_CHECKPOINT,
                "num_samples": cfg.evaluation.num_samples,
                "temperature": cfg.evaluation.temperature,
            }
            path.write_text(json.dumps(header) + "\n")
        print(f"rating {len(todo)} of {len(problems)} problems ({len(rates)} already in {path})", file=sys.stderr)
        model, tokenizer = build.sampling_model(cfg.model, cfg.checkpoint, cfg.evaluation)
        started = time.monotonic()
        with build.sandbox(cfg.sandbox, cfg.problems.language) as sandbox:
            scorer = build.scorer(cfg, problems, sandbox, kind=RewardKind.binary)
            size = max(1, cfg.evaluation.batch_size)
            for start in range(0, len(todo), size):
                batch = todo[start : start + size]
                result = evaluate_model(model, tokenizer, scorer, batch, cfg.problems, cfg.evaluation)
                n = result.num_samples
                lines: list[dict[str, Any]] = [
                    {
                        "id": p.id,
                        "passed": result.per_problem[p.id],
                        "samples": n,
                        "pass_rate": result.per_problem[p.id] / n,
                    }
                    for p in batch
                ]
                with path.open("a") as out:  # a whole batch at a time: a resumed run redoes at most one
                    out.write("".join(json.dumps(line) + "\n" for line in lines))
                rates |= {line["id"]: line for line in lines}
                done = len(problems) - len(todo) + start + len(batch)
                print(f"rated {done}/{len(problems)} problems ({time.monotonic() - started:.0f} s)", file=sys.stderr)
    kept = keep(problems, rates, cfg.lo, cfg.hi)
    write_problems(kept, Path(cfg.filtered))
    values = [r["pass_rate"] for r in rates.values()]
    print(
        f"pass rates in {path}: {sum(v == 0 for v in values)} at 0, {sum(0 < v < 1 for v in values)} between, "
        f"{sum(v == 1 for v in values)} at 1"
    )
    print(f"kept {len(kept)}/{len(problems)} problems with {cfg.lo} < pass rate < {cfg.hi} in {cfg.filtered}")
    return kept
