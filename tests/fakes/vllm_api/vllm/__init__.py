"""A fake of vLLM's offline API as codegrpo uses it (``vllm.LLM``, ``vllm.SamplingParams``), sampling with
transformers on the CPU: vLLM's wheels are GPU builds this machine cannot install. Put its folder
(tests/fakes/vllm_api) first on sys.path and ``import vllm`` finds it.

Faithful where codegrpo depends on vLLM: prompts as dicts of ``prompt_token_ids``; one RequestOutput per
prompt, in order, each CompletionOutput's ``token_ids`` ending with the stop token that ended it (kept, as
vLLM keeps an end-of-sequence or ``stop_token_ids`` token); greedy decoding at temperature 0, where
SamplingParams resets top-p, top-k and min-p; one random stream per engine, from the LLM's seed; a prompt
longer than the engine's ``max_model_len`` refused; a reply cut at ``max_tokens`` or at the context.
``ENGINES`` holds every engine made, and each its calls, for the tests to read."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

GREEDY = 1e-5  # vLLM's _SAMPLING_EPS

ENGINES: list[LLM] = []


@dataclass
class SamplingParams:
    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    max_tokens: int | None = 16
    stop_token_ids: list[int] | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.n < 1 or self.temperature < 0 or not 0 < self.top_p <= 1 or self.repetition_penalty <= 0:
            raise ValueError(f"invalid sampling parameters: {self}")
        if self.temperature < GREEDY:
            self.top_p, self.top_k, self.min_p = 1.0, 0, 0.0


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    finish_reason: str


@dataclass
class RequestOutput:
    request_id: str
    prompt_token_ids: list[int]
    outputs: list[CompletionOutput]


@dataclass
class LLM:
    model: str
    tokenizer: str | None = None
    dtype: str = "auto"
    seed: int = 0
    max_model_len: int | None = None
    trust_remote_code: bool = False
    calls: list[tuple[list[list[int]], SamplingParams]] = field(default_factory=list)
    replies: list[list[list[int]]] = field(default_factory=list)  # each call's completions' token ids

    def __post_init__(self) -> None:
        config = AutoConfig.from_pretrained(self.model)
        torch_dtype = getattr(config, "dtype", None) or torch.float32
        self.weights = AutoModelForCausalLM.from_pretrained(
            self.model, dtype=torch_dtype if self.dtype == "auto" else getattr(torch, self.dtype)
        ).eval()
        self.words = AutoTokenizer.from_pretrained(self.tokenizer or self.model)
        own = getattr(self.weights.generation_config, "eos_token_id", None)
        self.eos = {self.words.eos_token_id, *([own] if isinstance(own, int) else own or [])}
        self.max_model_len = self.max_model_len or config.max_position_embeddings
        self.random = torch.Generator().manual_seed(self.seed)
        # transformers renamed the forward's key-value cache argument (and output) past_key_values -> cache.
        self.cache = "cache" if "cache" in inspect.signature(self.weights.forward).parameters else "past_key_values"
        ENGINES.append(self)

    def generate(self, prompts: list[dict[str, Any]], sampling_params: SamplingParams, use_tqdm: bool = True):
        ids = [list(prompt["prompt_token_ids"]) for prompt in prompts]
        self.calls.append((ids, sampling_params))
        results = []
        self.replies.append([])
        for number, prompt in enumerate(ids):
            if len(prompt) >= self.max_model_len:
                raise ValueError(f"The prompt (length {len(prompt)}) is longer than max_model_len {self.max_model_len}")
            outputs = [self._sample(prompt, sampling_params, index) for index in range(sampling_params.n)]
            self.replies[-1] += [output.token_ids for output in outputs]
            results.append(RequestOutput(str(number), prompt, outputs))
        return results

    def _sample(self, prompt: list[int], params: SamplingParams, index: int) -> CompletionOutput:
        stops = self.eos | set(params.stop_token_ids or [])
        room = self.max_model_len - len(prompt)
        limit = min(params.max_tokens or room, room)
        reply: list[int] = []
        past, step = None, torch.tensor([prompt])
        reason = "length"
        with torch.inference_mode():
            while len(reply) < limit:
                out = self.weights(input_ids=step, use_cache=True, **{self.cache: past})
                past = getattr(out, self.cache)
                token = self._choose(out.logits[0, -1].float(), prompt + reply, params)
                reply.append(token)
                if token in stops:
                    reason = "stop"
                    break
                step = torch.tensor([[token]])
        return CompletionOutput(index, self.words.decode(reply, skip_special_tokens=True), reply, reason)

    def _choose(self, logits: torch.Tensor, seen: list[int], params: SamplingParams) -> int:
        if params.repetition_penalty != 1.0:
            picked = logits[seen]
            logits[seen] = torch.where(
                picked > 0, picked / params.repetition_penalty, picked * params.repetition_penalty
            )
        if params.temperature < GREEDY:
            return int(logits.argmax())
        probs = torch.softmax(logits / params.temperature, dim=-1)
        if params.top_k > 0:
            kept = probs.topk(min(params.top_k, probs.numel())).values[-1]
            probs = torch.where(probs < kept, 0.0, probs)
        if params.min_p > 0:
            probs = torch.where(probs < params.min_p * probs.max(), 0.0, probs)
        if params.top_p < 1.0:
            ordered, order = probs.sort(descending=True)
            outside = ordered.cumsum(0) - ordered > params.top_p * ordered.sum()
            probs[order[outside]] = 0.0
        return int(torch.multinomial(probs / probs.sum(), 1, generator=self.random))
