"""The tiny random model (tests/helpers/tiny_model.py) fitted, once per machine, to act as an agent under the
tool_chatml template: to a repository task it answers with one ``bash`` tool call, and to the tool's result
with a short reply that ends the episode. TRL's tool loop then runs a call in the sandbox at a fraction of a
second a step, where the 135M model seldom writes a call at all."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.helpers.tiny_model import _made_once, tiny_model

COMMAND = "ls"
CALL = "<tool_call>\n" + json.dumps({"name": "bash", "arguments": {"command": COMMAND}}) + "\n</tool_call>"
DONE = "Done."
STEPS = 300
SHARPEN = 16.0


def tiny_agent() -> Path:
    fitting = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:8]  # an edit here fits a new one
    base = tiny_model()
    return _made_once(base.with_name(base.name.replace("-tiny-random", f"-tiny-agent-{fitting}")), _fit)


def _examples(tokenizer) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, reply ids) as TRL renders an episode's two turns on each shipped task."""
    from codegrpo.agents.environment import RepoEnvironment
    from codegrpo.data.repo_tasks import load_repo_tasks
    from codegrpo.resources import project_path

    tasks, _ = load_repo_tasks(project_path("problems/repo_tasks"))
    tools = [RepoEnvironment.bash, RepoEnvironment.read_file, RepoEnvironment.run_tests, RepoEnvironment.write_file]
    call = {"type": "function", "function": {"name": "bash", "arguments": {"command": COMMAND}}}
    examples = []
    for task in tasks:
        for system in ([], [{"role": "system", "content": "You fix repositories."}]):
            first = [*system, {"role": "user", "content": task.instruction}]
            listing = "exit code 0\n" + "\n".join(sorted({name.split("/")[0] for name in task.files}))
            second = [*first, {"role": "assistant", "content": "", "tool_calls": [call]}]
            second.append({"role": "tool", "name": "bash", "content": listing})
            for messages, reply in ((first, CALL), (second, DONE)):
                ids = tokenizer.apply_chat_template(
                    messages, tools=tools, add_generation_prompt=True, return_dict=False
                )
                reply_ids = tokenizer(reply + tokenizer.eos_token, add_special_tokens=False)["input_ids"]
                examples.append((ids, reply_ids))
    return examples


def _fit(staging: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from codegrpo.config.choices import ChatTemplate
    from codegrpo.models.chat_templates import apply_chat_template_choice

    tokenizer = apply_chat_template_choice(AutoTokenizer.from_pretrained(tiny_model()), ChatTemplate.tool_chatml)
    model = AutoModelForCausalLM.from_pretrained(tiny_model(), dtype=torch.float32)
    examples = _examples(tokenizer)
    torch.manual_seed(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    longest = max(len(reply) for _, reply in examples)
    for _ in range(STEPS):
        batch = [examples[i] for i in torch.randint(len(examples), (8,)).tolist()]
        width = max(len(p) + len(r) for p, r in batch)
        ids = torch.full((len(batch), width), tokenizer.eos_token_id)
        mask = torch.zeros_like(ids)
        labels = torch.full((len(batch), longest), -100)  # the last positions: each row's reply, right-aligned
        for row, (prompt, reply) in enumerate(batch):  # padded on the left, as generation pads
            ids[row, width - len(prompt) - len(reply) :] = torch.tensor(prompt + reply)
            mask[row, width - len(prompt) - len(reply) :] = 1
            labels[row, longest - len(reply) :] = torch.tensor(reply)
        hidden = model.model(input_ids=ids, attention_mask=mask).last_hidden_state
        logits = model.lm_head(hidden[:, -longest - 1 : -1])  # the vocabulary's logits only where a reply is
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        model.model.norm.weight.mul_(SHARPEN)
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
