import pytest
from text import slugify


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("Hello World", "hello-world"),
        ("  GRPO, for code!  ", "grpo-for-code"),
        ("a--b__c", "a-b-c"),
        ("Version 2.0 released", "version-2-0-released"),
        ("---", ""),
        ("Already-a-slug", "already-a-slug"),
    ],
)
def test_slugify(title, slug):
    assert slugify(title) == slug
