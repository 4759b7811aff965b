from codegrpo.reward.extraction import completion_text, extract_code
from codegrpo.reward.programs import get_language

PY = get_language("python").fence_tags


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
