import time

import pytest

from codegrpo.data.files import load_problems
from codegrpo.reward.explain import reason
from codegrpo.reward.extraction import Source, completion_text, extract, extract_code
from codegrpo.reward.programs import get_language
from codegrpo.reward.scorer import Scorer
from codegrpo.reward.verdict import Status
from tests.helpers.sandbox import run

PY = get_language("python").fence_tags
JS = get_language("javascript").fence_tags

# The reply of a prompt that prefilled the opening fence: code, a lone closing fence, then prose.
PREFILLED = "def add(a, b):\n    return a + b\n```\n\nThis adds the numbers."


def test_first_python_block_is_taken():
    text = "Here:\n```python\ndef f():\n    return 1\n```\nand\n```python\nx = 2\n```"
    assert extract_code(text, PY) == "def f():\n    return 1\n"
    assert extract_code(text, PY, "last") == "x = 2\n"


def test_py_and_bare_fences_count_other_languages_do_not():
    assert extract_code("```py\na = 1\n```", PY) == "a = 1\n"
    assert extract_code("```\nb = 2\n```", PY) == "b = 2\n"
    assert extract_code("```bash\nrm -rf /\n```\n```python\nc = 3\n```", PY) == "c = 3\n"
    assert extract_code("```bash\nls\n```", PY) == ""


def test_no_fence_means_whole_text():
    assert extract_code("def f(): return 1", PY) == "def f(): return 1"


def test_unclosed_fence_keeps_code_cut_off_by_the_length_limit():
    assert extract_code("Sure!\n```python\ndef f():\n    return 1", PY) == "def f():\n    return 1"


def test_completion_text_accepts_strings_and_messages():
    assert completion_text("abc") == "abc"
    assert completion_text([{"role": "assistant", "content": "x"}]) == "x"


# -- code before a lone closing fence (the prefilled-fence shape) ---------------------------------------------


def test_code_before_a_lone_closing_fence_is_the_code_not_the_prose_after_it():
    found = extract(PREFILLED, PY)
    assert (found.code, found.source) == ("def add(a, b):\n    return a + b\n", Source.BEFORE_FENCE)
    # Nothing after the fence at all: the code is still there (it used to be no code).
    assert extract_code("def add(a, b):\n    return a + b\n```", PY) == "def add(a, b):\n    return a + b\n"
    # Text after the fence that parses, or has a bracket, is less of a program than the code before it.
    for after in ("Output: 3", "Output: `[3, 4]`"):
        assert (
            extract_code(f"def add(a, b):\n    return a + b\n```\n{after}", PY) == "def add(a, b):\n    return a + b\n"
        ), after
    # A block after the prose is another block: extract=last takes it.
    text = PREFILLED + "\n```python\nprint(add(1, 2))\n```"
    assert extract_code(text, PY) == "def add(a, b):\n    return a + b\n"
    assert extract_code(text, PY, "last") == "print(add(1, 2))\n"


def test_broken_code_before_a_lone_fence_stays_code_so_it_scores_as_the_error_it_is():
    assert (
        extract_code("def add(a, b):\n    return a +\n```\n\nThis adds the numbers.", PY)
        == "def add(a, b):\n    return a +\n"
    )


def test_a_lone_fence_after_prose_still_opens_a_block():
    # The text before the fence is prose, or the text after it is code: the fence opens a block.
    assert extract_code("Here is the code:\n```\ndef f(): return 1\n```\nDone.", PY) == "def f(): return 1\n"
    assert extract_code("Solution\n```\ndef f(): return 1\n```", PY) == "def f(): return 1\n"  # 'Solution' parses
    assert extract_code("Solution:\n```\ndef f(:\n```", PY) == "def f(:\n"  # broken code in the block is the code
    # A tag makes the first fence an opening one, whatever precedes it.
    assert extract_code("x = 1\n```python\ny = 2\n```", PY) == "y = 2\n"


def test_the_lone_fence_rule_holds_for_javascript():
    text = "function add(a, b) { return a + b; }\n```\nThis adds the numbers."
    assert extract(text, JS).source is Source.BEFORE_FENCE
    assert extract_code(text, JS) == "function add(a, b) { return a + b; }\n"
    assert extract_code("This adds the numbers.", JS) == ""
    assert extract_code("function add(a, b) {\n  return a +\n}", JS) == "function add(a, b) {\n  return a +\n}"
    assert extract_code("```js\nx\n```", JS) == "x\n" and extract_code("```python\nx = 1\n```", JS) == ""


# -- no code, and why ---------------------------------------------------------------------------------------------


def test_prose_without_a_fence_is_no_code_with_what_was_expected():
    for text in ("This adds the numbers.", "no code here", "Explanation:\nThe function adds a and b."):
        found = extract(text, PY)
        assert (found.code, found.source) == ("", Source.NONE), text
        assert found.reason == "no code: no ```python block, and the reply does not read as Python"
    assert (
        extract("Hello there.", JS).reason
        == "no code: no ```javascript block, and the reply does not read as JavaScript"
    )


def test_broken_code_without_a_fence_is_still_code():
    for text in (
        "def add(a, b)\n    return a + b",  # no colon
        "x = [1, 2\ny = 3",  # never closed
        "if True:\nprint(1)",  # not indented
        "    return x *\n",  # a HumanEval body, broken
        "# add them\nreturn a + b +",
        '"""Adds a and b."""\ndef add(a, b) return a + b',
        "print x",  # Python 2: its SyntaxError says what is wrong
        "sorry",
    ):  # parses: it runs, and fails with a NameError
        assert extract_code(text, PY) == text, text
    assert extract_code("    return x * 2\n", PY) == "    return x * 2\n"  # a HumanEval body that continues the prompt


def test_prose_in_an_untagged_block_is_passed_over():
    text = "```\nThe function adds a and b.\n```\n```python\ndef add(a, b): return a + b\n```"
    assert extract_code(text, PY) == "def add(a, b): return a + b\n"
    found = extract("```\nThe function adds a and b.\n```", PY)
    assert found.reason == "no code: no ```python block; its untagged blocks do not read as Python"


def test_each_kind_of_no_code_says_what_it_found():
    assert extract("", PY).reason == "no code: the reply is empty"
    assert extract("  \n", PY).reason == "no code: the reply is empty"
    assert extract("```python\n\n```", PY).reason == "no code: the ```python block is empty"
    assert (
        extract("```bash\nls\n```\n```text\nhi\n```", PY).reason
        == "no code: no ```python block; its blocks are ```bash, ```text"
    )
    # A blank block of the language is passed over for a later one.
    assert extract_code("```python\n```\n```python\nx = 1\n```", PY) == "x = 1\n"


def test_hostile_text_costs_linear_time():
    started = time.perf_counter()
    for text in (
        "a" * 300_000 + " b",
        "x = '" + "\\" * 300_000,
        "(" * 100_000 + "\n```\nprose here",
        ("w " * 100_000) + "\n```\n" + "```\n" * 10_000,
    ):
        extract(text, PY)
    assert time.perf_counter() - started < 10


def test_extract_must_be_first_or_last():
    with pytest.raises(ValueError, match="first' or 'last"):
        extract("x = 1", PY, "middle")


# -- through the real Scorer and sandbox ----------------------------------------------------------------------


def test_a_correct_program_before_a_lone_fence_passes_and_prose_is_no_code(local_sandbox):
    scorer = Scorer(load_problems("problems/trivial.jsonl"), local_sandbox, get_language("python"), "binary")
    completions = [PREFILLED, "def add(a, b):\n    return a +\n```\nThis adds them.", "I cannot do that."]
    passed, broken, prose = run(scorer.score(["add"] * 3, completions))
    assert (passed.verdict.status, passed.verdict.reward) == (Status.PASSED, 1.0)
    assert passed.code == "def add(a, b):\n    return a + b\n"
    # Broken code is still an error, on its own line 2, not on the prose after the fence.
    assert broken.verdict.status is Status.ERROR and "SyntaxError" in broken.verdict.detail
    assert "line 2" in broken.verdict.detail
    assert (prose.verdict.status, prose.verdict.reward, prose.code) == (Status.NO_CODE, 0.0, "")
    assert reason(prose) == "no code: no ```python block, and the reply does not read as Python"
