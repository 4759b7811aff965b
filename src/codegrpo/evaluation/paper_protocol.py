"""A paper's evaluation protocol (``protocol=livecodebench``, conf/protocol/): what each problem must carry,
pass@1 by difficulty, and the run's figure beside the paper's (the run's ``recipe.reported``, docs/recipes.md)."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml  # type: ignore[import-untyped]

from codegrpo.config.choices import ProblemAttribute, RecipeScale
from codegrpo.config.eval_protocol import ProtocolConfig
from codegrpo.config.evaluation import EvaluationConfig
from codegrpo.config.runs import saved_dir
from codegrpo.data.problems import Problem
from codegrpo.errors import UsageError
from codegrpo.reward.metric_names import pass_at

PASS1 = pass_at(1)

# Where a problem's attribute comes from, for the one-line error when a problem set has none.
SOURCES = {
    ProblemAttribute.released: "LiveCodeBench's contest_date: problems=livecodebench, or 'released' in a JSONL file",
    ProblemAttribute.difficulty: "LiveCodeBench's difficulty: problems=livecodebench, or 'difficulty' in a JSONL file",
}
ORDER = {"easy": 0, "medium": 1, "hard": 2}  # LiveCodeBench's; any other value sorts after, by name
# The sampling settings a recipe's evaluation block fixes, compared with the evaluation that ran.
SAMPLING = ("num_samples", "temperature", "top_p", "max_new_tokens")


def check_problems(protocol: ProtocolConfig | None, problems: list[Problem], set_name: str) -> None:
    """UsageError, one line naming the field, when a problem lacks what the protocol reads (before any model loads)."""
    if protocol is None:
        return
    for attribute in protocol.needs:
        lacking = [problem.id for problem in problems if not getattr(problem, attribute.value)]
        if lacking:
            raise UsageError(
                f"protocol={protocol.name} needs each problem's '{attribute}' field, and {len(lacking)} of the "
                f"{len(problems)} problems of problems={set_name} have none (first: {lacking[0]}); "
                f"it comes from {SOURCES[attribute]}"
            )


def by_attribute(
    problems: list[Problem], per_problem: dict[str, int], num_samples: int, attribute: ProblemAttribute
) -> dict[str, dict[str, float]]:
    """pass@1 (the mean over problems of passing samples / samples) for each value of ``attribute``, with the
    number of problems of each: LiveCodeBench's easy / medium / hard breakdown."""
    rates: dict[str, list[float]] = defaultdict(list)
    for problem in problems:
        if problem.id in per_problem:
            rates[getattr(problem, attribute.value) or "unknown"].append(per_problem[problem.id] / num_samples)
    ordered = sorted(rates, key=lambda value: (ORDER.get(value, len(ORDER)), value))
    return {value: {"problems": len(rates[value]), PASS1: float(np.mean(rates[value]))} for value in ordered}


def interval(per_problem: dict[str, int], num_samples: int, resamples: int, seed: int) -> tuple[float, float]:
    """A 95% bootstrap interval of pass@1 over problems (each problem's pass rate kept whole)."""
    rates = np.array([passed / num_samples for passed in per_problem.values()])
    rng = np.random.default_rng(seed)
    means = rates[rng.integers(0, len(rates), size=(resamples, len(rates)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


@dataclass
class BesidePaper:
    """A run's figure on a protocol beside the one its recipe's paper reports (percent)."""

    recipe: str
    metric: str  # e.g. livecodebench/pass@1
    model: str  # what the paper's figure is of: its trained model, or its base ("base: ...")
    run: float
    ci95: tuple[float, float]
    paper: float
    differ: list[str] = field(default_factory=list)  # the settings in which the run and the paper differ

    @property
    def difference(self) -> float:
        return self.run - self.paper

    def summary(self) -> str:
        low, high = self.ci95
        lines = [
            f"beside the paper ({self.recipe}, {self.model}): {self.metric} {self.run:.1f} [{low:.1f}, {high:.1f}] "
            f"here against {self.paper:.1f} reported: {self.difference:+.1f} points"
        ]
        lines += [f"  differs: {item}" for item in self.differ]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "recipe": self.recipe,
            "metric": self.metric,
            "model": self.model,
            "run": self.run,
            "ci95": list(self.ci95),
            "paper": self.paper,
            "difference": self.difference,
            "differ": self.differ,
        }


def run_config(checkpoint: str | None) -> dict[str, Any] | None:
    """The composed config a training run saved beside its checkpoint (<run>/config.yaml for <run>/final_model or
    <run>/checkpoint-N), or None (a base model, a model from elsewhere)."""
    if (saved := saved_dir(checkpoint)) is None:
        return None
    path = Path(saved).absolute().parent / "config.yaml"  # not resolved: a linked model stays the run's
    if not path.is_file():
        return None
    loaded = yaml.safe_load(path.read_text())
    return loaded if isinstance(loaded, dict) else None


def recipe_sampling(settings: EvaluationConfig, trained: dict[str, Any] | None) -> EvaluationConfig:
    """evaluation.sampling_from=recipe: ``settings`` with the evaluated run's recipe's sampling (``SAMPLING`` of the
    evaluation block in ``trained``, the run's saved config), or UsageError in one line where there is no recipe."""
    if not trained or not trained.get("recipe"):
        raise UsageError(
            "evaluation.sampling_from=recipe samples as a recipe's run does: checkpoint= (or compare=) must name "
            "a run's final_model or checkpoint-N with its config.yaml beside it, of a recipe's experiment "
            "(experiment=deepcoder_cpu, ...); or set the sampling with evaluation.* (sampling_from=config)"
        )
    own = trained.get("evaluation") or {}
    return dataclasses.replace(settings, **{name: own[name] for name in SAMPLING if name in own})


def _model_name(trained: dict[str, Any]) -> str:
    """The model a run's saved config names: its Hub id or directory, or its offline package file."""
    model = trained.get("model") or {}
    if model.get("name_or_path"):
        return str(model["name_or_path"])
    return f"{model.get('gguf_package')}/{model.get('gguf_file')}" if model.get("gguf_package") else ""


def beside_paper(
    protocol: ProtocolConfig,
    per_problem: dict[str, int],
    num_samples: int,
    settings: EvaluationConfig,
    trained: dict[str, Any],
    base: bool,
    seed: int = 0,
) -> BesidePaper | None:
    """The evaluation beside its recipe's reported figure for this protocol, or None where the run (``trained``:
    the run's saved config) follows no recipe or the paper reports no such figure. ``base``: the model evaluated is
    the run's base model, compared with the paper's base figure."""
    recipe = trained.get("recipe") or {}
    metric = f"{protocol.name}/{PASS1}"
    reported = (recipe.get("reported_base") if base else recipe.get("reported")) or {}
    if metric not in reported or not per_problem:
        return None
    run = 100 * float(np.mean([passed / num_samples for passed in per_problem.values()]))
    low, high = interval(per_problem, num_samples, settings.bootstrap, seed)
    model = recipe.get("reported_for", "")
    if base:  # not trained: the recipe's training and its deviations say nothing of it, but its model may differ
        ours = _model_name(trained)
        differ = [f"the model: {ours} here, the paper's {model}"] if ours and ours != model else []
    else:
        differ = [*(recipe.get("scale_deviations") or []), *(recipe.get("deviations") or [])]
        if RecipeScale(recipe.get("scale") or RecipeScale.paper) is RecipeScale.cpu:
            differ.insert(0, f"a CPU twin ({recipe.get('twin')}'s algorithm at a scale that trains on a CPU)")
    paper_eval = trained.get("evaluation") or {}
    differ += [
        f"evaluation.{name} {getattr(settings, name)} here, the recipe's {paper_eval[name]}"
        for name in SAMPLING
        if name in paper_eval and paper_eval[name] != getattr(settings, name)
    ]
    return BesidePaper(
        recipe.get("name", ""),
        metric,
        f"base: {model}" if base else f"trained from {model}",
        run,
        (100 * low, 100 * high),
        float(reported[metric]),
        differ,
    )
