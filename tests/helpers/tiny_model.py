"""A tiny random model with the offline model's tokenizer and chat template, made once per machine beside the
offline model's conversion, under a lock as the conversion is (pytest-xdist workers and torchrun ranks share it).

The tests of mechanics (steps, checkpoints, resume, signals, timing, records, samplers, recipes' settings) train
it at a fraction of a second a step, where the 135M model takes 3-15 s on two busy cores. The tiny coder is that
model fitted (in seconds, once per machine) to write one short program to any prompt, for the tests whose
mechanics need a program in the sandbox (its runs, reasons, pools, evaluation records). What only a real model
shows (it learns, bf16 master weights, the README's scripts, one end-to-end run, greedy sampling's agreement)
keeps the real one."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from codegrpo.models.conversion import offline_model

# Two layers of width 32 (the offline model's vocabulary holds most of its 1.6M weights): every code path of a
# Llama model, little of its cost. Random weights rarely end a completion: completions run to their limit.
SHAPE = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
}


def tiny_model() -> Path:
    """The tiny model's directory (a plain checkpoint from_pretrained reads), made on first use."""
    source = Path(offline_model())
    return _made_once(source.with_name(f"{source.name}-tiny-random"), lambda staging: _make(source, staging))


def tiny_model_overrides() -> list[str]:
    """The overrides that train the tiny model in place of the offline one."""
    return [f"model.name_or_path={tiny_model()}", "model.gguf_package=", "model.gguf_file="]


def _made_once(target: Path, make: Callable[[Path], None]) -> Path:
    """``target``, made by ``make`` into a staging folder under a lock the first time, then moved in whole."""
    if (target / "config.json").is_file():
        return target
    with open(target.with_name(target.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / "config.json").is_file():
            staging = target.with_name(f"{target.name}.tmp-{os.getpid()}")
            shutil.rmtree(staging, ignore_errors=True)
            make(staging)
            staging.replace(target)  # atomic: a reader sees no model or a whole one
    return target


def _make(source: Path, staging: Path) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    config = AutoConfig.from_pretrained(source)
    config.update(SHAPE)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(staging)
    AutoTokenizer.from_pretrained(source).save_pretrained(staging)


# What the tiny coder writes to every prompt: a program that runs in any form's harness and passes nothing
# (it prints its input back), so a step's rewards come from the sandbox, not from a completion without code.
CODER_REPLY = "```python\nprint(input())\n```"
STEPS = 100  # AdamW steps of 16 prompts: greedy decoding writes the reply to prompts it never saw
SHARPEN = 16.0  # the final norm's scale: of 800 samples at temperature 1, 21 strayed at 4x, 1 at 8x, none at 16x


def tiny_coder() -> Path:
    """The tiny model fitted to answer every chat prompt with ``CODER_REPLY`` and end its turn: the tests of
    mechanics that need a program to reach the sandbox (its runs, reasons, a pool's load) get one in a few
    tokens, where the random model writes no code and the 135M model writes it at 3-15 s a step."""
    fitting = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:8]  # an edit here fits a new one
    base = tiny_model()
    return _made_once(base.with_name(base.name.replace("-tiny-random", f"-tiny-coder-{fitting}")), _fit_coder)


def tiny_coder_overrides() -> list[str]:
    """The overrides that train the tiny coder in place of the offline model."""
    return [f"model.name_or_path={tiny_coder()}", "model.gguf_package=", "model.gguf_file="]


def _coder_prompts() -> list[list[dict[str, str]]]:
    """Chat prompts as the tasks pose them: every shipped problem in every form's template, with and without a
    system prompt, and a second turn after a reply and the sandbox's feedback (as rollouts with feedback ask)."""
    import json

    from codegrpo.config.problem_set import ProblemsConfig
    from codegrpo.resources import PROJECT_ROOT

    forms = ProblemsConfig(name="", path="")
    templates = [forms.prompt_template, forms.stdio_template, forms.humaneval_template]
    texts = []
    for path in sorted((PROJECT_ROOT / "problems").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            texts.append(str(row.get("prompt") or row.get("question_content")))
    prompts = []
    for index, text in enumerate(texts):
        template = templates[index % len(templates)]
        task = template.replace("{task}", text).replace("{prompt}", text)
        system = [{"role": "system", "content": "You write Python."}] if index % 2 else []
        first = [*system, {"role": "user", "content": task}]
        feedback = f"Your code was run on the {index % 4 + 1} public tests: 0 passed. Fix the code."
        turns = [{"role": "assistant", "content": CODER_REPLY}, {"role": "user", "content": feedback}]
        prompts += [first, [*first, *turns]]
    return prompts


def _fit_coder(staging: Path) -> None:
    """Fit the tiny random model to ``CODER_REPLY`` and the end of its turn, the loss on those tokens only."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model())
    model = AutoModelForCausalLM.from_pretrained(tiny_model(), dtype=torch.float32)
    reply = tokenizer(CODER_REPLY + tokenizer.eos_token, add_special_tokens=False)["input_ids"]
    prompts = [
        tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
        for messages in _coder_prompts()
    ]
    torch.manual_seed(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(STEPS):
        batch = [prompts[i] for i in torch.randint(len(prompts), (16,)).tolist()]
        width = max(map(len, batch)) + len(reply)
        ids = torch.full((len(batch), width), tokenizer.eos_token_id)  # masked: any id
        mask = torch.zeros_like(ids)
        for row, prompt in enumerate(batch):  # padded on the left, as generation pads
            ids[row, width - len(prompt) - len(reply) :] = torch.tensor(prompt + reply)
            mask[row, width - len(prompt) - len(reply) :] = 1
        hidden = model.model(input_ids=ids, attention_mask=mask).last_hidden_state
        logits = model.lm_head(hidden[:, -len(reply) - 1 : -1])
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), torch.tensor(reply).repeat(len(batch)))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():  # logits SHARPEN times as sharp: sampling at temperature 1 writes what greedy writes
        model.model.norm.weight.mul_(SHARPEN)
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
