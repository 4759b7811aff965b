"""Prompts: the chat messages each problem is posed with."""

from __future__ import annotations

from codegrpo.problems import Problem

HUMANEVAL_TEMPLATE = (
    "Complete the following Python function. Reply with the whole function in one ```python block.\n\n"
    "```python\n{prompt}```"
)


def build_messages(
    problem: Problem, template: str, system_prompt: str | None = None, humaneval_template: str = HUMANEVAL_TEMPLATE
) -> list[dict[str, str]]:
    """Chat messages for ``problem``: expression problems fill ``{task}``, HumanEval ones ``{prompt}``."""
    if problem.form == "humaneval":
        content = humaneval_template.format(prompt=problem.prompt)
    else:
        content = template.format(task=problem.prompt)
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return messages + [{"role": "user", "content": content}]
