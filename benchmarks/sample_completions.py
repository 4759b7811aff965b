"""Sample completions from the offline model on problems=trivial and problems=basics, once, for the hack
monitor's negatives (benchmarks/bench.py, `--only hacks`): the real model's output, not a hand-written
corpus. Writes benchmarks/data/offline_completions.jsonl ({problem_set, problem_id, completion} lines).

    python -m benchmarks.sample_completions [--samples 4] [--max-new-tokens 160]
"""

from __future__ import annotations

import argparse
import json
import sys

from codegrpo import build
from codegrpo.commands import CONFIG_DIR, prepare_hydra
from codegrpo.data.prompts import messages_for
from codegrpo.evaluation.evaluator import generate

OUTPUT = "benchmarks/data/offline_completions.jsonl"


def _config(problem_set: str, samples: int, max_new_tokens: int):
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    prepare_hydra(trainer=False)
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(
            config_name="evaluate",
            overrides=[
                f"problems={problem_set}",
                "evaluation.split=all",
                f"evaluation.num_samples={samples}",
                "evaluation.temperature=0.8",
                f"evaluation.max_new_tokens={max_new_tokens}",
                "run_dir=outputs/samples",
            ],
        )
    return OmegaConf.to_object(cfg)


def main(argv: list[str] | None = None) -> None:
    from hydra.core.global_hydra import GlobalHydra

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=160)
    args = parser.parse_args(argv)
    rows = []
    model = tokenizer = None
    for problem_set in ("trivial", "basics"):
        GlobalHydra.instance().clear()
        cfg = _config(problem_set, args.samples, args.max_new_tokens)
        if model is None:
            model, tokenizer = build.model(cfg.model, None)
        problems = build.eval_problems(cfg)
        messages = [messages_for(problem, cfg.problems) for problem in problems]
        for problem, samples in zip(problems, generate(model, tokenizer, messages, cfg.evaluation), strict=True):
            rows += [{"problem_set": problem_set, "problem_id": problem.id, "completion": text} for text in samples]
        with open(OUTPUT, "w") as handle:  # after each set: a long CPU run that stops keeps what it made
            handle.writelines(json.dumps(row) + "\n" for row in rows)
        print(f"{len(rows)} completions in {OUTPUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
