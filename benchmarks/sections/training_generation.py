"""e2. training_generation (also the second table of --only generation): tokens/s of GRPOTrainer's own
generation call, per back-end and batch.

Each back-end is a GRPOTrainer built with the settings that select it, and each measurement calls the method
a training step calls (``_generate_single_turn``: the model unwrapped, the training GenerationConfig, EOS
masking), so what is timed is what a step spends. Back-ends:

- ``generate``: transformers' model.generate with its dynamic cache (TRL's default);
- ``static``: the same with ``cache_implementation=static`` (TRL turns compilation off, so this is the
  preallocated cache alone);
- ``continuous``: transformers' continuous batching (``use_transformers_continuous_batching``, paged
  attention; transformers >= 5.8).

vLLM is not measured here: it is a separate engine (``vllm=colocate``), installed only on GPU machines.
On CUDA each row also gives the share of the measurement the GPU was busy (nvidia-smi's utilization,
sampled every 100 ms), and peak memory.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass

from benchmarks.common import Row, offline_model

TITLE = "e2. TRL's training generation (tokens/s)"

BACKENDS = {
    "generate": {},
    "static": {"cache_implementation": "static"},
    "continuous": {"use_transformers_continuous_batching": True},
}


@dataclass
class Measured:
    backend: str
    batch: int
    tokens: int
    seconds: float
    busy: float | None  # the GPU's busy share, 0..1 (None: no nvidia-smi)
    peak_gb: float | None

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds


class GpuBusy:
    """nvidia-smi's utilization.gpu sampled every 100 ms while the block runs; ``share`` is their mean / 100."""

    def __init__(self) -> None:
        self.share: float | None = None

    @contextlib.contextmanager
    def sampling(self) -> Iterator[GpuBusy]:
        smi = shutil.which("nvidia-smi")
        if smi is None:
            yield self
            return
        process = subprocess.Popen(
            [smi, "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "-lms", "100", "-i", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            yield self
        finally:
            process.terminate()
            out, _ = process.communicate(timeout=5)
            samples = [float(line) for line in out.split() if line.strip().replace(".", "", 1).isdigit()]
            self.share = sum(samples) / len(samples) / 100 if samples else None


def _trainer(model_path: str, backend: str, new_tokens: int, cuda: bool, scratch: str):
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from codegrpo.config.trainer_fields import current_names

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype="float32")
    settings = dict(
        use_cpu=not cuda,
        bf16=cuda,
        num_generations=4,
        per_device_train_batch_size=4,
        max_completion_length=new_tokens,
        temperature=1.0,
        report_to="none",
        save_strategy="no",
        gradient_checkpointing=False,
        seed=0,
        **BACKENDS[backend],
    )
    args = GRPOConfig(output_dir=scratch, **current_names(settings, GRPOConfig))
    dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": "x"}]}] * 4)
    return GRPOTrainer(
        model=model,
        reward_funcs=lambda completions, **_: [0.0] * len(completions),
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
    ), tokenizer


def measure(
    model_path: str, backends: list[str], batches: list[int], new_tokens: int, rounds: int = 1
) -> list[Measured]:
    """Best of ``rounds`` per (back-end, batch), after one warm-up call per back-end; a back-end that fails
    here is reported on stderr and skipped."""
    import torch

    from codegrpo.config.problem_set import ProblemsConfig
    from codegrpo.data.files import load_problems
    from codegrpo.data.prompts import build_messages

    cuda = torch.cuda.is_available()
    problems_cfg = ProblemsConfig(name="basics", path="problems/basics.jsonl")
    problems = load_problems(problems_cfg.path)
    results: list[Measured] = []
    for backend in backends:
        with tempfile.TemporaryDirectory() as scratch:
            try:
                trainer, tokenizer = _trainer(model_path, backend, new_tokens, cuda, scratch)
            except Exception as error:  # a back-end this install lacks (continuous batching before 5.8)
                print(f"[generation] {backend}: unavailable: {type(error).__name__}: {error}", file=sys.stderr)
                continue
            try:  # the first call pays for CUDA's start and the kernels' warm-up
                trainer._generate_single_turn([[0] * 8] * batches[0], None, {}, 1)
            except Exception as error:
                print(f"[generation] {backend}: failed: {type(error).__name__}: {error}", file=sys.stderr)
                continue
            for batch in batches:
                messages = [
                    build_messages(
                        problems[i % len(problems)], problems_cfg.prompt_template, problems_cfg.humaneval_template
                    )
                    for i in range(batch)
                ]
                prompt_ids = [
                    tokenizer.apply_chat_template(m, add_generation_prompt=True, tokenize=True, return_dict=False)
                    for m in messages
                ]
                best: Measured | None = None
                for _ in range(rounds):
                    if cuda:
                        torch.cuda.synchronize()
                        torch.cuda.reset_peak_memory_stats()
                    busy = GpuBusy()
                    try:
                        with busy.sampling():
                            started = time.perf_counter()
                            completion_ids, _ = trainer._generate_single_turn(prompt_ids, None, {}, 1)
                            if cuda:
                                torch.cuda.synchronize()
                            seconds = time.perf_counter() - started
                    except Exception as error:
                        print(
                            f"[generation] {backend} x{batch}: failed: {type(error).__name__}: {error}", file=sys.stderr
                        )
                        break
                    peak = torch.cuda.max_memory_allocated() / 2**30 if cuda else None
                    row = Measured(backend, batch, sum(len(c) for c in completion_ids), seconds, busy.share, peak)
                    print(f"[generation] {backend} x{batch}: {row.tokens} tokens in {seconds:.2f} s", file=sys.stderr)
                    if best is None or row.tokens_per_s > best.tokens_per_s:
                        best = row
                if best is not None:
                    results.append(best)
            del trainer
            if cuda:
                torch.cuda.empty_cache()
    return results


def rows(results: list[Measured], new_tokens: int) -> list[Row]:
    """The bench table: tokens/s per (back-end, batch), then each back-end's best batch against ``generate`` at
    the smallest batch (the guide's 4 completions a step)."""
    if not results:
        return []
    table = []
    for r in results:
        note = f"{r.tokens} tokens of <= {r.batch} x {new_tokens}"
        if r.busy is not None:
            note += f", GPU busy {r.busy:.0%}"
        if r.peak_gb is not None:
            note += f", peak {r.peak_gb:.1f} GiB"
        table.append((f"{r.backend}, batch {r.batch} (tokens/s)", r.tokens_per_s, note))
    base = min((r for r in results if r.backend == "generate"), key=lambda r: r.batch, default=results[0])
    for backend in dict.fromkeys(r.backend for r in results):
        top = max((r for r in results if r.backend == backend), key=lambda r: r.tokens_per_s)
        table.append(
            (
                f"ratio {backend} batch {top.batch} / {base.backend} batch {base.batch}",
                top.tokens_per_s / base.tokens_per_s,
                "tokens/s",
            )
        )
    return table


def run(args: argparse.Namespace) -> list[Row]:
    """--generation-model (the offline model if not given), -backends, -batches and -tokens; the defaults are
    sized for CUDA or for the CPU."""
    import torch

    from codegrpo.models.loading import resolve_model

    cuda = torch.cuda.is_available()
    model = args.generation_model
    if model is None:
        model = str(resolve_model(offline_model()))
    sizes = [int(b) for b in (args.generation_batches or ("4,16,64,256" if cuda else "4,16")).split(",")]
    tokens = args.generation_tokens or (256 if cuda else 32)
    return rows(measure(model, args.generation_backends.split(","), sizes, tokens), tokens)
