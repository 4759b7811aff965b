import math

import pytest
from shapes.geometry import triangle_area
from shapes.registry import area


@pytest.mark.parametrize(("sides", "expected"), [((3, 4, 5), 6.0), ((5, 5, 6), 12.0), ((2, 2, 2), math.sqrt(3))])
def test_triangle_area(sides, expected):
    assert math.isclose(triangle_area(*sides), expected)
    assert math.isclose(area("triangle", *sides), expected)


@pytest.mark.parametrize("sides", [(1, 2, 3), (1, 1, 5), (-3, 4, 5)])
def test_impossible_triangles_are_refused(sides):
    with pytest.raises(ValueError):
        triangle_area(*sides)


def test_the_other_shapes_still_work():
    assert area("square", 2) == 4.0
    assert math.isclose(area("circle", 2), 4 * math.pi)
