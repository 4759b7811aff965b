"""Evaluation: pass@1 and pass@k (the unbiased estimator) of a model on a problem set, scored in the
sandbox, and the paired bootstrap comparison of two evaluations with its format/skill breakdown. The
evaluate command and training's before/after evaluations both run this.

Results are dataclasses (``Evaluation``, ``Comparison``); ``save`` is the one place they become JSON
and ``load_evaluation`` the one place an eval file is read back.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from codegrpo.config.schema import EvaluationConfig, ProblemsConfig
from codegrpo.data.problems import Problem
from codegrpo.data.prompts import messages_for
from codegrpo.errors import UsageError
from codegrpo.reward.explain import explain
from codegrpo.reward.scorer import Scorer
from codegrpo.reward.verdict import Status

log = logging.getLogger(__name__)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al., 2021): 1 - C(n-c, k) / C(n, k), computed stably."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples per problem, got {n}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


@dataclass(frozen=True)
class Outcomes:
    """One problem's samples by outcome. ``error`` is every sample that gave no answer to compare (an
    exception, a timeout, no code, a sandbox failure): what a format fix turns into an answer."""

    passed: int = 0
    wrong: int = 0
    error: int = 0

    @property
    def total(self) -> int:
        return self.passed + self.wrong + self.error

    def shares(self) -> np.ndarray:
        """(passed, wrong, error) as fractions of the samples, so evaluations of different n compare."""
        return np.array([self.passed, self.wrong, self.error], dtype=float) / max(self.total, 1)


@dataclass
class Evaluation:
    """One model on one problem set: pass@k, status counts, passes per problem and every sample."""

    pass_at: dict[int, float]
    num_problems: int
    num_samples: int
    status_counts: dict[str, int]
    per_problem: dict[str, int]  # passing samples of each problem
    samples: list[dict[str, Any]] = field(default_factory=list)  # explain() of every sample, in order
    wall_s: float | None = None

    def metrics(self) -> dict[str, float]:
        return {f"pass@{k}": v for k, v in self.pass_at.items()}

    def outcomes(self) -> dict[str, Outcomes]:
        """Each problem's samples by outcome, from the sample records (empty when there are none)."""
        counts: dict[str, Counter] = {pid: Counter() for pid in self.per_problem}
        for sample in self.samples:
            status = sample["status"]
            kind = "passed" if status == Status.PASSED else "wrong" if status == Status.FAILED else "error"
            counts.setdefault(sample["problem_id"], Counter())[kind] += 1
        return {pid: Outcomes(**c) for pid, c in counts.items()} if self.samples else {}

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = self.metrics()
        data |= {"num_problems": self.num_problems, "num_samples": self.num_samples,
                 "status_counts": self.status_counts, "per_problem": self.per_problem, "samples": self.samples}
        if self.wall_s is not None:
            data["wall_s"] = self.wall_s
        return data

    @classmethod
    def from_json(cls, data: Any, where: str) -> Evaluation:
        """An eval file's contents (what ``to_json`` wrote); UsageError naming ``where`` if it is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("per_problem"), dict) or not isinstance(
                data.get("num_samples"), int):
            raise UsageError(f"{where} is not an eval file (it needs per_problem and num_samples, as "
                             "eval.json and eval_before.json have)")
        pass_at = {int(key[len("pass@"):]): float(v) for key, v in data.items() if key.startswith("pass@")}
        return cls(pass_at, int(data.get("num_problems", len(data["per_problem"]))), data["num_samples"],
                   dict(data.get("status_counts", {})), dict(data["per_problem"]), list(data.get("samples", [])),
                   data.get("wall_s"))


@dataclass(frozen=True)
class Breakdown:
    """Where the change in pass@1 came from, in pass@1 units: format + skill - lost == change.

    Per problem, the passes gained come from the outcomes that shrank (errors: format; wrong answers:
    skill), and passes lost are the fall in its pass share. With three outcomes whose shares sum to 1
    this is the smallest flow between them that explains the two evaluations, so it is unique."""

    format: float  # errors that became passes
    skill: float  # wrong answers that became passes
    lost: float  # passes lost (to errors or wrong answers)
    before: Outcomes  # the samples of every compared problem, by outcome
    after: Outcomes


@dataclass
class Comparison:
    """The paired change in pass@1 from one evaluation to another, with a 95% bootstrap interval."""

    pass1_before: float
    pass1_after: float
    change: float
    ci95: tuple[float, float]
    excludes_zero: bool
    num_problems: int
    num_samples: tuple[int, int]
    improved: int
    worse: int
    per_problem: dict[str, dict[str, float]]
    breakdown: Breakdown | None  # None when an eval file holds no samples
    compared: list[str] | None = None  # the two eval files or checkpoints, when the command compared them

    def to_json(self) -> dict[str, Any]:
        data = {"pass@1_before": self.pass1_before, "pass@1_after": self.pass1_after, "change": self.change,
                "ci95": list(self.ci95), "excludes_zero": self.excludes_zero, "num_problems": self.num_problems,
                "num_samples": list(self.num_samples), "improved": self.improved, "worse": self.worse,
                "breakdown": dataclasses.asdict(self.breakdown) if self.breakdown else None,
                "per_problem": self.per_problem}
        if self.compared is not None:
            data["compared"] = self.compared
        return data


def save(result: Evaluation | Comparison, path: Path) -> Path:
    """The one place an evaluation or a comparison is written: its JSON, indented."""
    path.write_text(json.dumps(result.to_json(), indent=2))
    return path


def load_evaluation(path: Path) -> Evaluation:
    """An eval file written by ``save`` (eval.json, eval_before.json, ...); UsageError if it is not one."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise UsageError(f"cannot read eval file {path}: {error}") from None
    return Evaluation.from_json(data, str(path))


def set_torch_threads() -> int:
    """One intra-op thread per usable CPU: more oversubscribes the cores and slows decoding several-fold."""
    import torch

    from codegrpo.config.cgroupfs import usable_cores  # affinity and cgroup quota: containers report the host's

    threads = usable_cores()
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return threads


def generate(model, tokenizer, messages: list[list[dict]], settings: EvaluationConfig) -> list[list[str]]:
    """num_samples completions for each chat prompt: batched generate() with the KV cache, every prompt's
    samples in one batch, left padding. Seeded, so two models are evaluated on the same random stream."""
    import torch

    set_torch_threads()
    torch.manual_seed(settings.seed)
    was_training = model.training
    model.eval()
    tokenizer.padding_side = "left"
    sampling = {"do_sample": True, "temperature": settings.temperature} if settings.temperature > 0 else {
        "do_sample": False}
    outputs: list[list[str]] = []
    for start in range(0, len(messages), settings.batch_size):
        batch = messages[start : start + settings.batch_size]
        texts = [tokenizer.apply_chat_template(m, add_generation_prompt=True, tokenize=False) for m in batch]
        inputs = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
        with torch.inference_mode():
            tokens = model.generate(**inputs, max_new_tokens=settings.max_new_tokens,
                                    num_return_sequences=settings.num_samples, use_cache=True,
                                    pad_token_id=tokenizer.pad_token_id, **sampling)
        decoded = tokenizer.batch_decode(tokens[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
        n = settings.num_samples
        outputs += [decoded[i * n : (i + 1) * n] for i in range(len(batch))]
        print(f"generated {min(start + len(batch), len(messages))}/{len(messages)} problems", file=sys.stderr)
    model.train(was_training)
    return outputs


def evaluate_model(model, tokenizer, scorer: Scorer, problems: list[Problem], problems_cfg: ProblemsConfig,
                   settings: EvaluationConfig) -> Evaluation:
    """Generate, score in the sandbox, and return pass@k for each k, status counts and every sample."""
    started = time.monotonic()
    messages = [messages_for(p, problems_cfg) for p in problems]
    samples = generate(model, tokenizer, messages, settings)
    ids = [p.id for p, group in zip(problems, samples, strict=True) for _ in group]
    flat = [text for group in samples for text in group]
    scored = asyncio.run(scorer.score(ids, flat))
    n = settings.num_samples
    correct = [sum(s.verdict.reward == 1.0 for s in scored[i * n : (i + 1) * n]) for i in range(len(problems))]
    return Evaluation(
        pass_at={k: float(np.mean([pass_at_k(n, c, k) for c in correct])) for k in settings.k},
        num_problems=len(problems),
        num_samples=n,
        status_counts=dict(Counter(s.verdict.status.value for s in scored)),
        per_problem={p.id: c for p, c in zip(problems, correct, strict=True)},
        # Every sample with why it scored what it did: problem, status, reason, the code's first lines.
        samples=[explain(s) for s in scored],
        wall_s=time.monotonic() - started,
    )


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
    return Breakdown(format=float((gained - skill).mean()), skill=float(skill.mean()),
                     lost=float(np.clip(-delta[:, 0], 0, None).mean()),
                     before=_total(outcomes_before, ids), after=_total(outcomes_after, ids))


def compare(before: Evaluation, after: Evaluation, resamples: int = 10000, seed: int = 0) -> Comparison:
    """The change in pass@1 from `before` to `after` with a 95% paired bootstrap interval: problems are
    resampled, each keeping its own before and after, so the interval reflects which problems improved
    rather than treating the two runs as independent."""
    ids = [pid for pid in before.per_problem if pid in after.per_problem]
    if not ids:
        raise UsageError("the two evaluations share no problem ids: they are of different problem sets")
    n_before, n_after = before.num_samples, after.num_samples
    b = np.array([before.per_problem[pid] / n_before for pid in ids])
    a = np.array([after.per_problem[pid] / n_after for pid in ids])
    diffs = a - b
    rng = np.random.default_rng(seed)
    means = diffs[rng.integers(0, len(ids), size=(resamples, len(ids)))].mean(axis=1)
    low, high = (float(x) for x in np.percentile(means, [2.5, 97.5]))
    return Comparison(
        pass1_before=float(b.mean()), pass1_after=float(a.mean()), change=float(diffs.mean()), ci95=(low, high),
        excludes_zero=bool(low > 0 or high < 0), num_problems=len(ids), num_samples=(n_before, n_after),
        improved=int((diffs > 0).sum()), worse=int((diffs < 0).sum()),
        per_problem={pid: {"before": float(x), "after": float(y), "diff": float(y - x)}
                     for pid, x, y in zip(ids, b, a, strict=True)},
        breakdown=breakdown(before, after, ids),
    )


def breakdown_summary(parts: Breakdown | None) -> str:
    if parts is None:
        return "no breakdown: an eval file holds no samples"
    b, a = parts.before, parts.after
    return (f"errors -> passes {parts.format:+.3f} (format), wrong -> passes {parts.skill:+.3f} (skill), "
            f"passes lost {parts.lost:.3f}; samples: errors {b.error} -> {a.error}, wrong {b.wrong} -> "
            f"{a.wrong}, passed {b.passed} -> {a.passed}")


def comparison_summary(comparison: Comparison) -> str:
    """Two lines: the change with its interval, then where it came from."""
    low, high = comparison.ci95
    return (f"pass@1 {comparison.pass1_before:.3f} -> {comparison.pass1_after:.3f}, change "
            f"{comparison.change:+.3f} [95% CI {low:+.3f}, {high:+.3f}] over {comparison.num_problems} "
            f"problems ({comparison.improved} better, {comparison.worse} worse)\n"
            f"  {breakdown_summary(comparison.breakdown)}")


def write_comparison(comparison: Comparison, run_dir: Path, run=None) -> None:
    """comparison.json and comparison.png in the run dir; the numbers to W&B when a run is given."""
    from codegrpo.tracking.plots import write_comparison_plot

    save(comparison, run_dir / "comparison.json")
    write_comparison_plot(comparison.to_json(), run_dir / "comparison.png")
    if run is not None:
        low, high = comparison.ci95
        metrics = {"eval_compare/pass@1_before": comparison.pass1_before,
                   "eval_compare/pass@1_after": comparison.pass1_after, "eval_compare/change": comparison.change,
                   "eval_compare/ci95_low": low, "eval_compare/ci95_high": high}
        if comparison.breakdown is not None:
            metrics |= {f"eval_compare/{name}": getattr(comparison.breakdown, name)
                        for name in ("format", "skill", "lost")}
        run.log(metrics)
        run.summary["eval_compare/excludes_zero"] = comparison.excludes_zero
