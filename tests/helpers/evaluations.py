"""Evaluations built from outcome counts, as evaluate_model records them, for the tests of the results, the
comparison and the evaluate command."""

from __future__ import annotations

from codegrpo.evaluation.results import Evaluation


def evaluation_of(outcomes: dict[str, tuple[int, int, int]]) -> Evaluation:
    """An evaluation whose problems have (passed, wrong, error) samples, as evaluate_model records them."""
    status = {"passed": ["passed"], "wrong": ["failed"], "error": ["error", "timeout", "no_code"]}
    samples = []
    for pid, counts in outcomes.items():
        for kind, count in zip(("passed", "wrong", "error"), counts, strict=True):
            # Errors cycle through every status that gives no answer.
            samples += [
                {
                    "problem_id": pid,
                    "status": status[kind][i % len(status[kind])],
                    "reward": 0.0,
                    "reason": "",
                    "code": "",
                }
                for i in range(count)
            ]
    n = sum(next(iter(outcomes.values())))
    per_problem = {pid: counts[0] for pid, counts in outcomes.items()}
    counts: dict[str, int] = {}
    for sample in samples:
        counts[sample["status"]] = counts.get(sample["status"], 0) + 1
    return Evaluation(
        {1: sum(per_problem.values()) / n / len(per_problem)},
        len(outcomes),
        n,
        counts,
        per_problem,
        samples,
        wall_s=1.5,
    )
