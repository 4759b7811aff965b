"""The paired bootstrap comparison of two evaluations on the same problems, its format/skill breakdown,
and the summary lines and files a run writes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from codegrpo.errors import UsageError
from codegrpo.evaluation.results import Breakdown, Comparison, Evaluation, Outcomes, save
from codegrpo.reward import metric_names as keys


def _total(outcomes: dict[str, Outcomes], ids: list[str]) -> Outcomes:
    return Outcomes(*(sum(getattr(outcomes[pid], kind) for pid in ids) for kind in ("passed", "wrong", "error")))


def breakdown(before: Evaluation, after: Evaluation, ids: list[str]) -> Breakdown | None:
    """The change in pass@1 over ``ids`` split into format, skill and passes lost (see Breakdown)."""
    outcomes_before, outcomes_after = before.outcomes(), after.outcomes()
    if not all(pid in outcomes_before and pid in outcomes_after for pid in ids):
        return None
    shares = np.array([[outcomes_before[pid].shares(), outcomes_after[pid].shares()] for pid in ids])
    delta = shares[:, 1] - shares[:, 0]  # (problems, [passed, wrong, error])
    gained = np.clip(delta[:, 0], 0, None)
    wrong_drop, error_drop = np.clip(-delta[:, 1], 0, None), np.clip(-delta[:, 2], 0, None)
    # A gain is covered by what shrank: both shrank (their drops sum to it), or only one did (it covers it).
    skill = np.where(error_drop > 0, np.minimum(gained, wrong_drop), gained)
    return Breakdown(
        format=float((gained - skill).mean()),
        skill=float(skill.mean()),
        lost=float(np.clip(-delta[:, 0], 0, None).mean()),
        before=_total(outcomes_before, ids),
        after=_total(outcomes_after, ids),
    )


def compare(before: Evaluation, after: Evaluation, resamples: int = 10000, seed: int = 0) -> Comparison:
    """The change in pass@1 from `before` to `after` with a 95% paired bootstrap interval: problems are
    resampled, each keeping its own before and after, so the interval reflects which problems improved
    rather than treating the two runs as independent."""
    ids = [pid for pid in before.per_problem if pid in after.per_problem]
    if not ids:
        raise UsageError("the two evaluations share no problem ids: they are of different problem sets")
    first_turn = None
    if before.first_turn is not None and after.first_turn is not None:  # rollout=feedback, both
        first_turn = compare(before.first_turn, after.first_turn, resamples, seed)
    n_before, n_after = before.num_samples, after.num_samples
    b = np.array([before.per_problem[pid] / n_before for pid in ids])
    a = np.array([after.per_problem[pid] / n_after for pid in ids])
    diffs = a - b
    rng = np.random.default_rng(seed)
    means = diffs[rng.integers(0, len(ids), size=(resamples, len(ids)))].mean(axis=1)
    low, high = (float(x) for x in np.percentile(means, [2.5, 97.5]))
    return Comparison(
        pass1_before=float(b.mean()),
        pass1_after=float(a.mean()),
        change=float(diffs.mean()),
        ci95=(low, high),
        excludes_zero=bool(low > 0 or high < 0),
        num_problems=len(ids),
        num_samples=(n_before, n_after),
        improved=int((diffs > 0).sum()),
        worse=int((diffs < 0).sum()),
        per_problem={
            pid: {"before": float(x), "after": float(y), "diff": float(y - x)}
            for pid, x, y in zip(ids, b, a, strict=True)
        },
        breakdown=breakdown(before, after, ids),
        first_turn=first_turn,
    )


def breakdown_summary(parts: Breakdown | None) -> str:
    if parts is None:
        return "no breakdown: an eval file holds no samples"
    b, a = parts.before, parts.after
    return (
        f"errors -> passes {parts.format:+.3f} (format), wrong -> passes {parts.skill:+.3f} (skill), "
        f"passes lost {parts.lost:.3f}; samples: errors {b.error} -> {a.error}, wrong {b.wrong} -> "
        f"{a.wrong}, passed {b.passed} -> {a.passed}"
    )


def comparison_summary(comparison: Comparison) -> str:
    """Two lines: the change with its interval, then where it came from; under rollout=feedback, two more
    of the first turns (the first two are the last turns')."""
    low, high = comparison.ci95
    turn = "last turn " if comparison.first_turn is not None else ""
    first = "" if comparison.first_turn is None else "\nfirst turn " + comparison_summary(comparison.first_turn)
    return (
        f"{turn}pass@1 {comparison.pass1_before:.3f} -> {comparison.pass1_after:.3f}, change "
        f"{comparison.change:+.3f} [95% CI {low:+.3f}, {high:+.3f}] over {comparison.num_problems} "
        f"problems ({comparison.improved} better, {comparison.worse} worse)\n"
        f"  {breakdown_summary(comparison.breakdown)}{first}"
    )


def write_comparison(comparison: Comparison, run_dir: Path, run=None) -> None:
    """comparison.json and comparison.png in the run dir; the numbers to W&B when a run is given."""
    from codegrpo.tracking.plots import write_comparison_plot

    save(comparison, run_dir / "comparison.json")
    data = comparison.to_json()
    write_comparison_plot(data, run_dir / "comparison.png")
    if run is not None:
        low, high = comparison.ci95
        pass1 = (keys.PASS1_BEFORE, keys.PASS1_AFTER, keys.CHANGE)
        metrics = {key: data[key] for key in pass1} | {"ci95_low": low, "ci95_high": high}
        if comparison.breakdown is not None:
            metrics |= {name: getattr(comparison.breakdown, name) for name in ("format", "skill", "lost")}
        if comparison.first_turn is not None:
            metrics |= {keys.first_turn(key): data["first_turn"][key] for key in pass1}
        run.log({keys.compared(key): value for key, value in metrics.items()})
        run.summary[keys.compared("excludes_zero")] = comparison.excludes_zero
