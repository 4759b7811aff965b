r"""codegrpo-evaluate: pass@k of a model or checkpoint on an eval problem set, in the sandbox, or the
paired comparison of two.

    codegrpo-evaluate                                   # the default model on HumanEval
    codegrpo-evaluate checkpoint=outputs/runs/<run>/final_model evaluation.limit=20
    codegrpo-evaluate evaluation.num_samples=10 'evaluation.k=[1,5,10]' evaluation.temperature=0.8
    codegrpo-evaluate problems=trivial evaluation.split=eval evaluation.num_samples=8 \
        'compare=[base,outputs/runs/<run>/final_model]'         # two checkpoints, evaluated alike
    codegrpo-evaluate 'compare=[<run>/eval_before.json,<run>/eval_after.json]'   # two eval files
    codegrpo-evaluate problems=code_contests rollout=feedback evaluation.num_samples=4 evaluation.temperature=0.7
        # episodes that revise on the public tests: pass@k after the first turn and after the last

Input: a model (the model group, or checkpoint=<a run's final_model or checkpoint-N dir>) and a problem set
(the problems group, with evaluation.split; or evaluation.problems_path=FILE).

Results go to eval.json (pass@k, status counts, per problem, every sample with its reason; or eval_a.json,
eval_b.json, comparison.json and comparison.png) in the run dir (outputs/evals/<time>), and to W&B with
logger=wandb.

Main options: checkpoint=DIR, compare=[a,b], evaluation.num_samples, evaluation.k=[1,...],
evaluation.temperature (0: greedy, one sample), evaluation.max_new_tokens, evaluation.limit, evaluation.split.
"""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import hydra
from omegaconf import DictConfig

from codegrpo import build
from codegrpo.commands import CONFIG_DIR, check_checkpoint, discard_empty_run_dir, entry_point, run, tell
from codegrpo.config.choices import RewardKind
from codegrpo.config.schema import EvaluateConfig
from codegrpo.errors import UsageError
from codegrpo.evaluation.results import evaluation_record
from codegrpo.tracking import wandb_run as tracking

if TYPE_CHECKING:
    from codegrpo.evaluation.results import Comparison, Evaluation


def evaluate(cfg: EvaluateConfig) -> Evaluation | Comparison:
    from codegrpo.evaluation.compare import compare, comparison_summary, write_comparison
    from codegrpo.evaluation.evaluate import evaluate_model
    from codegrpo.evaluation.results import load_evaluation, save
    from codegrpo.models.hub import check_hub_model

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
                scorer = build.scorer(cfg, build.scored_problems(cfg, problems), sandbox, kind=RewardKind.binary)
                results = evaluate_model(model, tokenizer, scorer, problems, cfg.problems, cfg.evaluation,
                                         cfg.rollout)
                results.record = evaluation_record(cfg, item, problems, model)
            run_dir.mkdir(parents=True, exist_ok=True)
            save(results, run_dir / f"eval{'_' * bool(label)}{label}.json")
            evaluations.append(results)
    wandb_run = build.tracking(cfg, run_dir, "eval")
    try:
        if not cfg.compare:
            [results] = evaluations
            if wandb_run is not None:
                wandb_run.log({f"eval/{k}": v for k, v in results.metrics().items()})
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


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="evaluate")
def evaluate_command(cfg: DictConfig) -> None:
    # A failed evaluation leaves no dir: only Hydra's record and the log of a run that wrote nothing.
    run(evaluate, cfg, on_failure=lambda _: discard_empty_run_dir(Path(cfg.run_dir), "evaluate.log"))


main = entry_point(evaluate_command)


if __name__ == "__main__":
    main()
