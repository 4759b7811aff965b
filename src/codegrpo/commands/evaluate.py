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
    codegrpo-evaluate protocol=livecodebench checkpoint=<run>/final_model    # as LiveCodeBench's paper evaluates
    codegrpo-evaluate protocol=livecodebench evaluation.sampling_from=recipe checkpoint=<run>/final_model
        # sampled as the run's recipe samples (docs/recipes.md)

Input: a model (the model group, or checkpoint=<a run's final_model or checkpoint-N dir>) and a problem set
(the problems group, with evaluation.split; or evaluation.problems_path=FILE).

Results go to eval.json (pass@k, status counts, per problem, every sample with its reason; or eval_a.json,
eval_b.json, comparison.json and comparison.png) in the run dir (outputs/evals/<time>), and to W&B with
logger=wandb.

Main options: checkpoint=DIR, compare=[a,b], protocol=livecodebench|humaneval_plus|codecontests,
evaluation.num_samples, evaluation.k=[1,...], evaluation.temperature (0: greedy, one sample),
evaluation.max_new_tokens, evaluation.limit, evaluation.split, evaluation.sampling_from=config|recipe,
evaluation.backend=transformers|vllm (vLLM on a GPU: pip install -e '.[vllm]').
"""

from __future__ import annotations

from pathlib import Path

import hydra
from omegaconf import DictConfig

from codegrpo.commands import CONFIG_DIR, discard_empty_run_dir, entry_point, run
from codegrpo.tasks.evaluate import evaluate


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="evaluate")
def evaluate_command(cfg: DictConfig) -> None:
    # A failed evaluation leaves no dir: only Hydra's record and the log of a run that wrote nothing.
    run(evaluate, cfg, on_failure=lambda _: discard_empty_run_dir(Path(cfg.run_dir), "evaluate.log"))


main = entry_point(evaluate_command)


if __name__ == "__main__":
    main()
