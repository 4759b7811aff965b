"""The chat messages a problem is posed with (codegrpo.data.prompts): each form's template, the system prompt,
the problem set's config, and the word a prompt repeats from its template."""

from __future__ import annotations

import pytest

from codegrpo.config.choices import Form
from codegrpo.config.problem_set import ProblemsConfig
from codegrpo.data.files import load_problems
from codegrpo.data.problems import Problem
from codegrpo.data.prompts import build_messages, doubled_words, messages_for

GUIDE = "Write a Python function {task} Reply with only the code in one ```python block."


def _problem(form: Form, prompt: str = "Add two numbers.", **fields) -> Problem:
    return Problem(id="p", prompt=prompt, test="", form=form, **fields)


def test_prompts_follow_the_guide_and_the_humaneval_template():
    [problem] = load_problems("problems/seed.jsonl", limit=1)
    messages = build_messages(problem, "Write a Python function {task} Reply.", "{prompt}", "Be brief.")
    assert messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": f"Write a Python function {problem.prompt} Reply."},
    ]


def test_each_form_fills_its_own_template():
    templates = ("EXPR {task}", "HE {prompt}", None, "IO {prompt}", "CALL {fn_name} {prompt} {starter_code}")
    expression = _problem(Form.expression, "add(a, b) that adds.")
    humaneval = _problem(Form.humaneval, "def add(a, b):\n", entry_point="add")
    stdio = _problem(Form.stdio, "Print a + b.")
    call = _problem(Form.call, "Return a + b.", fn_name="add", starter_code="def add(a, b):\n    ")
    assert [build_messages(p, *templates)[0]["content"] for p in (expression, humaneval, stdio, call)] == [
        "EXPR add(a, b) that adds.",
        "HE def add(a, b):\n",
        "IO Print a + b.",
        "CALL add Return a + b. ```python\ndef add(a, b):\n```",
    ]


def test_a_call_problem_without_starter_code_ends_where_its_text_does():
    call = _problem(Form.call, "Return a + b.", fn_name="add", starter_code="  \n")
    template = "Write `{fn_name}`.\n\n{prompt}\n\n{starter_code}"
    [message] = build_messages(call, "{task}", "{prompt}", None, "{prompt}", template)
    assert message == {"role": "user", "content": "Write `add`.\n\nReturn a + b."}


def test_the_default_io_templates_say_how_input_and_output_work():
    [stdio] = build_messages(_problem(Form.stdio, "Print a + b."), GUIDE, "{prompt}")
    assert stdio["content"] == (
        "Solve this problem in Python. Read the input from standard input and print the answer to standard "
        "output. Reply with only the code in one ```python block.\n\nPrint a + b."
    )
    call = _problem(Form.call, "Return a + b.", fn_name="add", starter_code="class Solution:\n    def add(self, a, b):")
    [message] = build_messages(call, GUIDE, "{prompt}")
    assert message["content"] == (
        "Solve this problem in Python by writing the function `add`; it is called with the arguments of each test "
        "and its return value is checked. Reply with only the code in one ```python block.\n\nReturn a + b.\n\n"
        "```python\nclass Solution:\n    def add(self, a, b):\n```"
    )


@pytest.mark.parametrize("system_prompt", [None, ""])
def test_no_system_prompt_is_one_user_message(system_prompt):
    messages = build_messages(_problem(Form.expression, "f(x)."), "Do {task}", "{prompt}", system_prompt)
    assert messages == [{"role": "user", "content": "Do f(x)."}]


def test_messages_for_uses_every_template_of_the_problem_sets_config():
    cfg = ProblemsConfig(
        name="t",
        path="p.jsonl",
        system_prompt="SYS",
        prompt_template="E:{task}",
        humaneval_template="H:{prompt}",
        stdio_template="S:{prompt}",
        call_template="C:{fn_name}:{prompt}{starter_code}",
    )
    problems = [
        _problem(Form.expression, "x"),
        _problem(Form.humaneval, "y", entry_point="y"),
        _problem(Form.stdio, "z"),
        _problem(Form.call, "w", fn_name="g"),
    ]
    assert [messages_for(p, cfg) for p in problems] == [
        [{"role": "system", "content": "SYS"}, {"role": "user", "content": content}]
        for content in ("E:x", "H:y", "S:z", "C:g:w")
    ]


@pytest.mark.parametrize(
    ("prompt", "doubled"),
    [
        ("Write a function add(a, b).", "Write"),
        ("function add(a, b) that adds.", "function"),
        ("PYTHON: add(a, b).", "PYTHON:"),  # case and punctuation aside
        ("add(a, b) that adds.", None),
        ("a function add(a, b).", None),  # "a" is filler: too common to mean a repeat
        ("Reply with add(a, b).", None),  # the template's words after {task} are not repeated by the prompt
        ("", None),
    ],
)
def test_doubled_words_finds_the_templates_lead_word_a_prompt_repeats(prompt, doubled):
    assert doubled_words(_problem(Form.expression, prompt), GUIDE) == doubled


def test_doubled_words_reads_only_expression_problems_and_templates_with_a_task():
    assert doubled_words(_problem(Form.stdio, "Write a program."), GUIDE) is None
    assert doubled_words(_problem(Form.expression, "Write a program."), "Write a Python function.") is None
    assert doubled_words(_problem(Form.expression, "Write a program."), GUIDE) == "Write"
