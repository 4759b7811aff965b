"""The evaluate task: pass@k of a model or checkpoint on an eval problem set (under rollout=tools, an agent's
episodes on repository tasks), or the paired comparison of two (codegrpo-evaluate); and ``evaluate_loaded``,
the one evaluation of a loaded model, which training's ``evaluation.before`` / ``evaluation.after`` run too."""

from __future__ import annotations

import dataclasses
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codegrpo import build
from codegrpo.config.choices import RewardKind, RolloutKind, SamplingFrom
from codegrpo.config.eval_protocol import ProtocolConfig
from codegrpo.config.runs import BASE_CHECKPOINT, EvaluateConfig, TrainConfig
from codegrpo.data.repo_tasks import RepoTask, task_set_hash
from codegrpo.data.sets import problem_set_hash
from codegrpo.evaluation.paper_protocol import (
    PASS1,
    SAMPLING,
    beside_paper,
    by_attribute,
    check_problems,
    recipe_sampling,
    run_config,
)
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
    from codegrpo.evaluation.evaluator import evaluate_model

    sides = build.sides(cfg, problems)
    scorer = build.scorer(cfg, sides.hidden, sandbox, kind=RewardKind.binary)
    return evaluate_model(model, tokenizer, scorer, problems, cfg.problems, cfg.evaluation, cfg.rollout, sides.public)


def evaluate_episodes(
    cfg: EvaluateConfig, model: Any, tokenizer: Any, sandbox: SandboxBackend, tasks: list[RepoTask]
) -> Evaluation:
    """rollout=tools: ``model``'s episodes on ``tasks`` (an agent in each workspace, through ``sandbox``),
    judged on the hidden tests with the binary reward."""
    from codegrpo.agents.environment import Session
    from codegrpo.evaluation.evaluator import evaluate_agents

    session = Session(tasks, sandbox, cfg.rollout.budgets, partial=False)
    try:
        return evaluate_agents(
            model, tokenizer, session, tasks, cfg.evaluation, cfg.rollout, cfg.problems.system_prompt
        )
    finally:
        session.close()


def protocol_results(
    cfg: EvaluateConfig, results: Evaluation, problems: list[Problem], trained: dict[str, Any] | None, base: bool
) -> dict[str, Any]:
    """What the protocol reports of one evaluation: pass@1 by its breakdown, and beside the paper's figure."""
    assert cfg.protocol is not None
    found: dict[str, Any] = {"name": cfg.protocol.name.value}
    if cfg.protocol.breakdown is not None:
        found["by"] = {
            "attribute": cfg.protocol.breakdown.value,
            "values": by_attribute(problems, results.per_problem, results.num_samples, cfg.protocol.breakdown),
        }
    if trained is not None:
        paper = beside_paper(
            cfg.protocol, results.per_problem, results.num_samples, cfg.evaluation, trained, base, cfg.seed
        )
        if paper is not None:
            used = cfg.problems.data_files or cfg.problems.hub_path
            if cfg.evaluation.limit is not None:
                paper.differ.insert(0, f"evaluation.limit={cfg.evaluation.limit}: the first {len(problems)} problems")
            if cfg.protocol.benchmark and used != cfg.protocol.benchmark:
                paper.differ.insert(0, f"the problems: {used} stands in for the benchmark's {cfg.protocol.benchmark}")
            found["beside_paper"] = paper.to_json()
    return found


def protocol_summary(protocol: ProtocolConfig, found: dict[str, Any], label: str) -> str:
    """The protocol's lines for one evaluation: pass@1 by difficulty, the paper's figure beside the run's."""
    lines = []
    if "by" in found:
        values = found["by"]["values"].items()
        parts = ", ".join(f"{value} {row[PASS1]:.3f} ({row['problems']:g} problems)" for value, row in values)
        lines.append(f"{label}: {protocol.name} pass@1 by {found['by']['attribute']}: {parts}")
    if "beside_paper" in found:
        paper = found["beside_paper"]
        low, high = paper["ci95"]
        lines.append(
            f"{label}: beside the paper ({paper['recipe']}, {paper['model']}): {paper['metric']} {paper['run']:.1f} "
            f"[{low:.1f}, {high:.1f}] here against {paper['paper']:.1f} reported: {paper['difference']:+.1f} points"
        )
        lines += [f"  differs: {item}" for item in paper["differ"]]
    return "\n".join(lines)


def evaluate(cfg: EvaluateConfig) -> Evaluation | Comparison:
    """One evaluation (eval.json), or with ``compare`` two (eval_a.json, eval_b.json, each a checkpoint or an
    eval file) and their paired comparison (comparison.json), in the run dir and W&B."""
    from codegrpo.evaluation.compare import compare, comparison_summary, write_comparison
    from codegrpo.evaluation.results import load_evaluation, save

    run_dir = Path(cfg.run_dir)
    items: list[str | None] = [*cfg.compare] if cfg.compare else [cfg.checkpoint]
    checkpoints = build.check_evaluate(cfg, items)
    evaluations = []
    # A trained run's saved config: its recipe's published figures, for either item of a compare (the base too).
    trained = next((found for item in checkpoints if (found := run_config(item)) is not None), None)
    if cfg.evaluation.sampling_from is SamplingFrom.recipe:
        cfg = dataclasses.replace(cfg, evaluation=recipe_sampling(cfg.evaluation, trained))
        tell("sampling as the run's recipe: " + ", ".join(f"{n} {getattr(cfg.evaluation, n)}" for n in SAMPLING))
    tools = cfg.rollout.kind is RolloutKind.tools
    with build.run_sandbox(cfg) if checkpoints else nullcontext() as sandbox:
        problems = build.eval_problems(cfg) if checkpoints and not tools else []
        tasks = build.eval_tasks(cfg) if checkpoints and tools else []
        check_problems(cfg.protocol, problems, cfg.problems.name)  # before a model loads
        for label, item in zip("ab" if cfg.compare else [""], items, strict=True):
            if item is not None and item.endswith(".json"):
                results = load_evaluation(Path(item))
            else:
                model, tokenizer = build.sampling_model(cfg.model, item, cfg.evaluation, tools)
                assert sandbox is not None  # opened whenever a checkpoint is evaluated
                if tools:
                    results = evaluate_episodes(cfg, model, tokenizer, sandbox, tasks)
                    evaluated = len(tasks), task_set_hash(tasks)
                else:
                    results = evaluate_loaded(cfg, model, tokenizer, sandbox, problems)
                    evaluated = len(problems), problem_set_hash(problems)
                results.record = evaluation_record(cfg, item, *evaluated, model)
                if cfg.protocol is not None:
                    results.protocol = protocol_results(cfg, results, problems, trained, base=run_config(item) is None)
                    tell(protocol_summary(cfg.protocol, results.protocol, item or BASE_CHECKPOINT))
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
