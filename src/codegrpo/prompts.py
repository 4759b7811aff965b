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


# Words too common to mean the prompt repeats the template ("a", "the", ...).
_FILLER = {"a", "an", "the", "that", "which", "to", "of", "in", "and"}


def doubled_words(problem: Problem, template: str) -> str | None:
    """The word a prompt repeats from the template's own text just before ``{task}``, or None.

    "Write a Python function {task}" with the prompt "Write a function ..." asks the model to
    "Write a Python function Write a function ...": the prompt should start where the template stops.
    """
    if problem.form == "humaneval" or "{task}" not in template:
        return None
    lead = {w.strip(".,:;!?").lower() for w in template.split("{task}")[0].split()} - _FILLER
    words = problem.prompt.split()
    first = words[0].strip(".,:;!?").lower() if words else ""
    return words[0] if first in lead else None
