"""codegrpo-pass-rates: each problem's pass rate under a model (the base model by default), and the
problems worth training on, the offline filter open-r1 applies.

    codegrpo-pass-rates problems=basics evaluation.num_samples=8           # rates, then lo < rate < hi
    codegrpo-pass-rates problems=transfer lo=0 hi=0.75 checkpoint=<run>/final_model
    codegrpo-pass-rates problems=basics rates=<earlier run>/pass_rates.jsonl   # continue, or re-filter

Input: a model (the model group, or checkpoint=DIR) and a problem set (the problems group).

Samples evaluation.num_samples completions of every problem (codegrpo.evaluation.evaluator's generation and
scoring, binary), a batch of evaluation.batch_size problems at a time, and appends each problem's line to
``rates`` as its batch is scored: an interrupted run continues where it stopped, and a finished file
re-filters without loading the model. The file's first line names the problem set's SHA-256: a file of
another problem set is refused. ``filtered`` is a problem file (problems=jsonl problems.path=...) of the
problems with ``lo < pass rate < hi``.

Main options: problems=NAME, checkpoint=DIR, lo, hi, evaluation.num_samples, evaluation.temperature,
rates=FILE, filtered=FILE, evaluation.backend=transformers|vllm.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from codegrpo.commands import CONFIG_DIR, entry_point, run
from codegrpo.tasks.pass_rates import pass_rates


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="pass_rates")
def pass_rates_command(cfg: DictConfig) -> None:
    run(pass_rates, cfg)


main = entry_point(pass_rates_command)


if __name__ == "__main__":
    main()
