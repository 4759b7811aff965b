import pytest
from stats import mean, median


@pytest.mark.parametrize(
    ("values", "expected"),
    [([5], 5), ([2, 1], 1.5), ([1, 2, 3, 4], 2.5), ([7, 1, 5, 3], 4), ([10, 20, 30], 20), ([-1, -3], -2)],
)
def test_median(values, expected):
    assert median(values) == expected


def test_median_leaves_its_argument_alone():
    values = [3, 1, 2, 4]
    median(values)
    assert values == [3, 1, 2, 4]


def test_mean_is_unchanged():
    assert mean([1, 2, 3, 4]) == 2.5
