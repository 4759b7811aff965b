"""Prompts: the chat messages each problem is posed with."""

from __future__ import annotations

from codegrpo.problems import Problem


def build_messages(
    problem: Problem, template: str, humaneval_template: str, system_prompt: str | None = None
) -> list[dict[str, str]]:
    """Chat messages for ``problem``: expression problems fill ``{task}``, HumanEval ones ``{prompt}``."""
    if problem.form == "humaneval":
        content = humaneval_template.format(prompt=problem.prompt)
    else:
        content = template.format(task=problem.prompt)
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return [*messages, {"role": "user", "content": content}]
