"""The evaluate task: pass@k of a model or checkpoint on an eval problem set, or the paired comparison of
two (codegrpo-evaluate); and ``evaluate_loaded``, the one evaluation of a loaded model, which training's
``evaluation.before`` / ``evaluation.after`` run too."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codegrpo import build
from codegrpo.config.choices import RewardKind
from codegrpo.config.schema import EvaluateConfig, TrainConfig
from codegrpo.errors import UsageError
from codegrpo.evaluation.results import evaluation_record
from codegrpo.reward import metric_names as keys
from codegrpo.tracking import wandb_run as tracking
from codegrpo.tracking.console import tell

if TYPE_CHECKING:
    from codegrpo.data.problems import Problem
    from codegrpo.evaluation.results import Comparison, Evaluation
    from codegrpo.sandbox.base import SandboxBackend


def evaluate_loaded(
    cfg: TrainConfig | EvaluateConfig, model: Any, tokenizer: Any, sandbox: SandboxBackend, problems: list[Problem]
) -> Evaluation:
    """``model`` sampled on ``problems`` as ``cfg.evaluation`` says, each sample judged with the binary reward
    (under rollout=feedback, each problem's hidden tests)."""
    from codegrpo.evaluation.evaluate import evaluate_model

    scorer = build.scorer(cfg, build.scored_problems(cfg, problems), sandbox, kind=RewardKind.binary)
    return evaluate_model(model, tokenizer, scorer, problems, cfg.problems, cfg.evaluation, cfg.rollout)


def evaluate(cfg: EvaluateConfig) -> Evaluation | Comparison:
    """One evaluation (eval.json), or with ``compare`` two (eval_a.json, eval_b.json, each a checkpoint or an
    eval file) and their paired comparison (comparison.json), in the run dir and W&B."""
    from codegrpo.evaluation.compare import compare, comparison_summary, write_comparison
    from codegrpo.evaluation.results import load_evaluation, save
    from codegrpo.models.hub import check_hub_model
    from codegrpo.models.loading import check_checkpoint

    run_dir = Path(cfg.run_dir)
    items: list[str | None] = [*cfg.compare] if cfg.compare else [cfg.checkpoint]
    if cfg.compare and len(cfg.compare) != 2:
        raise UsageError(f"compare takes two eval files or checkpoints, got {len(cfg.compare)}")
    for item in items:
        if item is not None and item.endswith(".json") and not Path(item).is_file():
            raise UsageError(f"compare: no such eval file {item}")
    checkpoints = [item for item in items if not str(item).endswith(".json")]
    for item in checkpoints:
        check_checkpoint(item)  # a mistyped dir is one line naming it, not the Hub's error
    if any(not item or item == "base" for item in checkpoints):
        check_hub_model(cfg.model)
    evaluations = []
    with build.sandbox(cfg.sandbox, cfg.problems.language) if checkpoints else nullcontext() as sandbox:
        problems = build.eval_problems(cfg) if checkpoints else []
        for label, item in zip("ab" if cfg.compare else [""], items, strict=True):
            if item is not None and item.endswith(".json"):
                results = load_evaluation(Path(item))
            else:
                model, tokenizer = build.model(cfg.model, item)
                assert sandbox is not None  # opened whenever a checkpoint is evaluated
                results = evaluate_loaded(cfg, model, tokenizer, sandbox, problems)
                results.record = evaluation_record(cfg, item, problems, model)
            run_dir.mkdir(parents=True, exist_ok=True)
            save(results, run_dir / f"eval{'_' * bool(label)}{label}.json")
            evaluations.append(results)
    wandb_run = build.tracking(cfg, run_dir, "eval")
    try:
        if not cfg.compare:
            [results] = evaluations
            if wandb_run is not None:
                wandb_run.log({keys.evaluation(k): v for k, v in results.metrics().items()})
            tell(f"{results.summary()} on {results.num_problems} problems; results in {run_dir / 'eval.json'}")
            return results
        before, after = evaluations
        comparison = compare(before, after, resamples=cfg.evaluation.bootstrap, seed=cfg.seed)
        comparison.compared = list(cfg.compare)
        write_comparison(comparison, run_dir, wandb_run)
        tell(f"{comparison_summary(comparison)}\nresults in {run_dir / 'comparison.json'}")
        return comparison
    finally:
        tracking.finish_run(wandb_run)
