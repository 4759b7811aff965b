"""Prompts: the chat messages each problem is posed with."""

from __future__ import annotations

from codegrpo.config.choices import Form
from codegrpo.config.problem_set import ProblemsConfig
from codegrpo.data.problems import Problem

_DEFAULTS = ProblemsConfig(name="", path="")


def build_messages(
    problem: Problem,
    template: str,
    humaneval_template: str,
    system_prompt: str | None = None,
    stdio_template: str = _DEFAULTS.stdio_template,
    call_template: str = _DEFAULTS.call_template,
) -> list[dict[str, str]]:
    """Chat messages for ``problem``: expression problems fill ``{task}``, HumanEval ones ``{prompt}``,
    stdin/stdout ones ``{prompt}`` of ``stdio_template`` and call-based ones ``{prompt}``, ``{fn_name}``
    and ``{starter_code}`` of ``call_template`` (the templates say how input and output work)."""
    if problem.form is Form.humaneval:
        content = humaneval_template.format(prompt=problem.prompt)
    elif problem.form is Form.stdio:
        content = stdio_template.format(prompt=problem.prompt)
    elif problem.form is Form.call:
        starter = f"```python\n{problem.starter_code.rstrip()}\n```" if problem.starter_code.strip() else ""
        content = call_template.format(prompt=problem.prompt, fn_name=problem.fn_name, starter_code=starter).rstrip()
    else:
        content = template.format(task=problem.prompt)
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return [*messages, {"role": "user", "content": content}]


def messages_for(problem: Problem, cfg: ProblemsConfig) -> list[dict[str, str]]:
    """``build_messages`` with every template of the problem set's config."""
    return build_messages(
        problem, cfg.prompt_template, cfg.humaneval_template, cfg.system_prompt, cfg.stdio_template, cfg.call_template
    )


# Words too common to mean the prompt repeats the template ("a", "the", ...).
_FILLER = {"a", "an", "the", "that", "which", "to", "of", "in", "and"}


def doubled_words(problem: Problem, template: str) -> str | None:
    """The word a prompt repeats from the template's own text just before ``{task}``, or None.

    "Write a Python function {task}" with the prompt "Write a function ..." asks the model to
    "Write a Python function Write a function ...": the prompt should start where the template stops.
    """
    if problem.form is not Form.expression or "{task}" not in template:
        return None
    lead = {w.strip(".,:;!?").lower() for w in template.split("{task}")[0].split()} - _FILLER
    words = problem.prompt.split()
    first = words[0].strip(".,:;!?").lower() if words else ""
    return words[0] if first in lead else None
