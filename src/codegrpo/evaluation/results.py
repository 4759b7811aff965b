"""What an evaluation produces: pass@k per problem, the Evaluation and Comparison dataclasses, and the
one place they become JSON (``save``) and are read back (``load_evaluation``)."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from codegrpo.config.runs import saved_dir
from codegrpo.errors import UsageError
from codegrpo.reward import metric_names as keys
from codegrpo.reward.verdict import Status
from codegrpo.tracking import secrets
from codegrpo.tracking.runinfo import codegrpo_commit

if TYPE_CHECKING:
    from codegrpo.config.runs import EvaluateConfig


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
    # rollout=feedback: this is the last turn's evaluation; the first turn's, the paired change from it to this
    # one (Comparison.to_json()), and the episodes' feedback/* metrics (rollout=tools: episodes/* and judge/*).
    first_turn: Evaluation | None = None
    turn_gain: dict[str, Any] | None = None
    feedback: dict[str, float] | None = None
    # The model's tokens generated (every turn's, under rollout=feedback) and the seconds generating them took.
    generated_tokens: int | None = None
    generation_s: float | None = None
    # What was evaluated, to repeat it: the model, the problem set and its hash, the sampling settings, the
    # commit (evaluation_record, below); None in files written before it existed.
    record: dict[str, Any] | None = None
    # protocol=...: pass@1 by its breakdown ({"easy": {"problems", "pass@1"}, ...}) and the run beside the
    # paper's figure (evaluation.protocol.BesidePaper.to_json()), where its recipe reports one.
    protocol: dict[str, Any] | None = None

    @property
    def tokens_per_s(self) -> float | None:
        """Generation throughput: tokens generated per second of generate() (None: not measured)."""
        if self.generated_tokens is None or not self.generation_s:
            return None
        return self.generated_tokens / self.generation_s

    def metrics(self) -> dict[str, float]:
        metrics = {keys.pass_at(k): v for k, v in self.pass_at.items()}
        if self.first_turn is not None:
            metrics |= {keys.first_turn(keys.pass_at(k)): v for k, v in self.first_turn.pass_at.items()}
        if self.tokens_per_s is not None:
            metrics[keys.EVAL_TOKENS_PER_S] = self.tokens_per_s
        return metrics | (self.feedback or {})

    def summary(self) -> str:
        """One line: pass@k (under rollout=feedback, after the first turn and after the last, with the change),
        and the generated tokens per second when measured."""
        line = ", ".join(f"{keys.pass_at(k)} {v:.3f}" for k, v in self.pass_at.items())
        rate = "" if self.tokens_per_s is None else f"; {self.tokens_per_s:.1f} generated tokens/s"
        if self.first_turn is None:
            return line + rate
        first = ", ".join(f"{keys.pass_at(k)} {v:.3f}" for k, v in self.first_turn.pass_at.items())
        gain = self.turn_gain or {}
        low, high = gain.get("ci95", (float("nan"), float("nan")))
        return (
            f"first turn {first}; last turn {line}; change {gain.get(keys.CHANGE, float('nan')):+.3f} "
            f"[95% CI {low:+.3f}, {high:+.3f}]; turns {(self.feedback or {}).get(keys.FEEDBACK_TURNS, 1.0):.2f}" + rate
        )

    def outcomes(self) -> dict[str, Outcomes]:
        """Each problem's samples by outcome, from the sample records (empty when there are none)."""
        counts: dict[str, Counter] = {pid: Counter() for pid in self.per_problem}
        for sample in self.samples:
            status = Status(sample["status"])
            kind = "passed" if status is Status.PASSED else "wrong" if status is Status.FAILED else "error"
            counts.setdefault(sample["problem_id"], Counter())[kind] += 1
        return {pid: Outcomes(**c) for pid, c in counts.items()} if self.samples else {}

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = self.metrics()
        data |= {
            "num_problems": self.num_problems,
            "num_samples": self.num_samples,
            "status_counts": self.status_counts,
            "per_problem": self.per_problem,
            "samples": self.samples,
        }
        if self.wall_s is not None:
            data["wall_s"] = self.wall_s
        if self.generated_tokens is not None:
            data |= {"generated_tokens": self.generated_tokens, "generation_s": self.generation_s}
        if self.first_turn is not None:
            data |= {"first_turn": self.first_turn.to_json(), "turn_gain": self.turn_gain, "feedback": self.feedback}
        if self.record is not None:
            data["record"] = self.record
        if self.protocol is not None:
            data["protocol"] = self.protocol
        return data

    @classmethod
    def from_json(cls, data: Any, where: str) -> Evaluation:
        """An eval file's contents (what ``to_json`` wrote); UsageError naming ``where`` if it is not one."""
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("per_problem"), dict)
            or not isinstance(data.get("num_samples"), int)
        ):
            raise UsageError(
                f"{where} is not an eval file (it needs per_problem and num_samples, as "
                "eval.json and eval_before.json have)"
            )
        pass_at = {k: float(v) for key, v in data.items() if (k := keys.pass_at_k(key)) is not None}
        first = data.get("first_turn")
        return cls(
            pass_at,
            int(data.get("num_problems", len(data["per_problem"]))),
            data["num_samples"],
            dict(data.get("status_counts", {})),
            dict(data["per_problem"]),
            list(data.get("samples", [])),
            data.get("wall_s"),
            None if first is None else cls.from_json(first, f"{where} (first_turn)"),
            data.get("turn_gain"),
            data.get("feedback"),
            data.get("generated_tokens"),
            data.get("generation_s"),
            data.get("record"),
            data.get("protocol"),
        )


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
    first_turn: Comparison | None = None  # rollout=feedback: the same comparison of the first turns

    def to_json(self) -> dict[str, Any]:
        data = {
            keys.PASS1_BEFORE: self.pass1_before,
            keys.PASS1_AFTER: self.pass1_after,
            keys.CHANGE: self.change,
            "ci95": list(self.ci95),
            "excludes_zero": self.excludes_zero,
            "num_problems": self.num_problems,
            "num_samples": list(self.num_samples),
            "improved": self.improved,
            "worse": self.worse,
            "breakdown": dataclasses.asdict(self.breakdown) if self.breakdown else None,
            "per_problem": self.per_problem,
        }
        if self.compared is not None:
            data["compared"] = self.compared
        if self.first_turn is not None:
            data["first_turn"] = self.first_turn.to_json()
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


def evaluation_record(
    cfg: EvaluateConfig, checkpoint: str | None, count: int, sha256: str, model: Any
) -> dict[str, Any]:
    """What an eval file records so the evaluation can be repeated: the model that loaded (or the checkpoint),
    the problem set (name, split, the ``count`` evaluated and their hash ``sha256``), the sampling settings and
    k, the rollout, the commit."""
    from codegrpo.models.loading import describe_model

    settings = cfg.evaluation
    model_cfg = cfg.model
    if (saved := saved_dir(checkpoint)) is not None:  # as build.model loads it
        model_cfg = dataclasses.replace(cfg.model, name_or_path=saved, gguf_package="")
    return secrets.mask(
        {
            "model": describe_model(model_cfg, model),
            "checkpoint": checkpoint,
            "problems": {
                "name": cfg.problems.name,
                "path": settings.problems_path or cfg.problems.path,
                "split": settings.split.value,
                "count": count,
                "sha256": sha256,
            },
            "sampling": {
                "num_samples": settings.num_samples,
                "k": list(settings.k),
                "temperature": settings.temperature,
                "top_p": settings.top_p,
                "max_new_tokens": settings.max_new_tokens,
                "seed": settings.seed,
                "backend": settings.backend.value,
                "from": settings.sampling_from.value,
                "limit": settings.limit,
            },
            "rollout": cfg.rollout.kind.value,
            "codegrpo_commit": codegrpo_commit(),
            "command": secrets.mask_argv(sys.argv),
        }
    )
