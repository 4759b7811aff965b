"""A small random Llama built in memory (one layer, width 32, 64 tokens): a real model to save, cast and push."""

from __future__ import annotations

from typing import Any


def small_llama(seed: int = 0) -> Any:
    """A LlamaForCausalLM of random float32 weights, the same for the same ``seed``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    return LlamaForCausalLM(
        LlamaConfig(
            vocab_size=64,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
        )
    )
