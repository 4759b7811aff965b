from text import slugify


def test_slugify_lowers_and_joins_words():
    assert slugify("Hello World") == "hello-world"


def test_slugify_collapses_separators():
    assert slugify("  GRPO, for code!  ") == "grpo-for-code"
