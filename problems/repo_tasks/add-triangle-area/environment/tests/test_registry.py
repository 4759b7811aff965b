import math

from shapes.registry import area


def test_square():
    assert area("square", 3) == 9.0


def test_circle():
    assert math.isclose(area("circle", 1), math.pi)


def test_triangle():
    assert area("triangle", 3, 4, 5) == 6.0
